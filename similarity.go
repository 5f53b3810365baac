package toolguard

import (
	"bytes"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
)

// Similar queries: normalizeQuery, simKeyOf, simScore (docs/concepts.md).

const (
	// queryMaxRunes is the most runes normalizeQuery keeps and a key reads:
	// a comparison stays within 256*256 steps.
	queryMaxRunes = 256

	// queryMaxBytes is the prefix normalizeQuery reads, queryMaxRunes runes
	// of any width; no normalized query or key is longer.
	queryMaxBytes = utf8.UTFMax * queryMaxRunes

	// queryIndexWindow is how many of its most recent distinct queries a
	// queryIndex compares a new query with by score (simScore), so the cost
	// per call stops growing with the turn; earlier ones only match exactly.
	queryIndexWindow = 64

	// queryIndexCap is how many distinct queries (and results) a queryIndex
	// remembers, the oldest forgotten first: about 2 MiB at most.
	queryIndexCap = 1024
)

// normalizeQuery returns the comparable form of a search query: lowercase
// word runes (letters, decimal digits, '_'; a combining mark is dropped)
// and single spaces between them. It reads at most queryMaxBytes bytes and
// keeps at most queryMaxRunes runes, cut between words unless the first
// word alone is longer. The result is valid UTF-8 and normalized.
func normalizeQuery(s string) string {
	var buf [queryMaxBytes]byte
	out := buf[:0]
	runes := 0
	space := false // white space seen since the last word rune
	word := 0      // where the last word starts in out, with its space
	for _, r := range s[:min(len(s), queryMaxBytes)] {
		r = unicode.ToLower(r)
		if unicode.IsSpace(r) {
			space = true
		} else if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			if space && runes > 0 {
				word = len(out)
				out = append(out, ' ')
				runes++
			}
			if runes++; runes > queryMaxRunes {
				break
			}
			out = utf8.AppendRune(out, r)
			space = false
		}
	}
	if runes > queryMaxRunes && word > 0 {
		out = out[:word] // do not keep half a word
	}
	return simString(out, s) // a cut s is longer than out: never kept alive
}

// simString returns b as a string, reusing s when it holds the same bytes.
func simString(b []byte, s string) string {
	if string(b) == s {
		return s
	}
	return string(b)
}

// simKey is the part of a query that simScore compares.
type simKey struct {
	text     string    // content words, folded and marked, joined by single spaces
	sorted   string    // the words of text, sorted
	runes    int       // runes in text
	agree    uint32    // the simAgree bits of its words: must match
	specific [2]uint64 // specificBits of the raw query, set by its caller
	hist     [32]uint8 // runes of text, counted by their value modulo 32, up to 255
}

// simMaxWords is the most words queryMaxRunes runes hold.
const simMaxWords = queryMaxRunes/2 + 1

// simKeyOf returns the key of the normalized query s: its words
// (simWords), without stop words unless all are, in their order and
// sorted. A longer s is normalized first: a key has at most queryMaxRunes.
func simKeyOf(s string) simKey {
	var buf, out [queryMaxBytes + 1]byte // out: a space before each word
	var spans [simMaxWords][2]int
	if len(s) > queryMaxRunes && utf8.RuneCountInString(s) > queryMaxRunes {
		s = normalizeQuery(s)
	}
	text, words := simWords(buf[:0], spans[:0], s, true)
	if len(words) == 0 {
		text, words = simWords(buf[:0], spans[:0], s, false)
	}
	slices.SortFunc(words, func(x, y [2]int) int {
		return bytes.Compare(text[x[0]:x[1]], text[y[0]:y[1]])
	})
	var k simKey
	sorted := out[:0]
	for _, w := range words {
		word := text[w[0]:w[1]]
		k.agree |= simAgree[string(word[bytes.IndexByte(word, ':')+1:])]
		sorted = append(append(sorted, ' '), word...)
	}
	k.text = simString(text, s)
	k.sorted = simString(bytes.TrimPrefix(sorted, []byte(" ")), k.text)
	for _, r := range k.text {
		k.hist[r%32] = uint8(min(int(k.hist[r%32])+1, math.MaxUint8))
		k.runes++
	}
	return k
}

// simWords appends the words of s to buf, runes folded (simFold) and
// joined by single spaces; if dropStop is set, without stop words and with
// each direction word marking the next word (simDirections). It returns
// buf and where each word is in it.
func simWords(buf []byte, spans [][2]int, s string, dropStop bool) ([]byte, [][2]int) {
	mark := ""         // the mark of a direction word, waiting for its word
	afterStop := false // the word read last is a stop word
	for w := range strings.FieldsSeq(s) {
		space := len(buf)
		if space > 0 {
			buf = append(buf, ' ')
		}
		start := len(buf)
		buf = append(buf, mark...) // dropped with the word if it is not kept
		for _, r := range w {
			buf = utf8.AppendRune(buf, simFold(r))
		}
		word := buf[start+len(mark):]
		stop, dir := simStopWords[string(word)] != 0, simDirections[string(word)]
		switch {
		case dropStop && dir != "" && (string(word) != "to" || !afterStop):
			mark, buf = dir, buf[:space]
		case dropStop && stop:
			buf = buf[:space]
		default:
			mark, spans = "", append(spans, [2]int{start, len(buf)})
		}
		afterStop = stop
	}
	// A direction word with no word to mark is a word, unless a stop word.
	if w := strings.TrimSuffix(mark, ":"); w != "" && simStopWords[w] == 0 {
		if len(buf) > 0 {
			buf = append(buf, ' ')
		}
		spans = append(spans, [2]int{len(buf), len(buf) + len(w)})
		buf = append(buf, w...)
	}
	return buf, spans
}

// simWordBits returns two bits for w, one of 64 each, from its FNV-1a hash
// mixed by the MurmurHash3 finalizer: a Bloom filter of words.
func simWordBits(w []byte) (uint64, uint64) {
	f := fnv.New64a()
	f.Write(w)
	h := f.Sum64()
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return 1 << (h >> 58), 1 << (h & 63)
}

// simScore returns the similarity of two keys, in [0, 1] and symmetric
// (docs/concepts.md, "Similar queries"), or 0 when it can tell cheaply
// that it is below floor.
func simScore(a, b *simKey, floor float64) float64 {
	if a.runes == 0 || b.runes == 0 || a.agree != b.agree {
		return 0
	}
	if a.sorted == b.sorted {
		return 1
	}
	longer := max(a.runes, b.runes)
	if 1-float64(simHistBound(a, b))/float64(longer) < floor || !simWordsAgree(a.sorted, b.sorted) {
		return 0
	}
	d := levenshtein.ComputeDistance(a.sorted, b.sorted)
	if a.text != a.sorted || b.text != b.sorted {
		d = min(d, levenshtein.ComputeDistance(a.text, b.text))
	}
	return 1 - float64(d)/float64(longer)
}

// simHistBound returns a lower bound on the Levenshtein distance of two
// keys, sorted or not, from their rune counts by class (docs/concepts.md).
func simHistBound(a, b *simKey) int {
	sum := 0
	for i := range a.hist {
		d := int(a.hist[i]) - int(b.hist[i])
		sum += max(d, -d)
	}
	return (sum + max(a.runes-b.runes, b.runes-a.runes)) / 2
}

// simWordsAgree reports whether two key texts may be one question: no word
// with a digit is in one only, and all the words one side lacks of the
// other are close (simClose) to some of the other's.
func simWordsAgree(a, b string) bool {
	var sa, sb [simMaxWords]string
	onlyA, okA := simOnly(sa[:0], a, b)
	onlyB, okB := simOnly(sb[:0], b, a)
	return okA && okB && (simAllClose(onlyA, onlyB) || simAllClose(onlyB, onlyA))
}

// simOnly appends to dst the words of the key text a that b lacks; ok is
// false if one of them has a digit.
func simOnly(dst []string, a, b string) (_ []string, ok bool) {
	for w := range strings.SplitSeq(a, " ") {
		if !simHas(b, w, false) {
			if strings.ContainsFunc(w, unicode.IsDigit) {
				return nil, false
			}
			dst = append(dst, w)
		}
	}
	return dst, true
}

// simHas reports whether the key text s holds the word w; bare compares
// its words without their marks.
func simHas(s, w string, bare bool) bool {
	for v := range strings.SplitSeq(s, " ") {
		if bare {
			v = v[strings.IndexByte(v, ':')+1:]
		}
		if v == w {
			return true
		}
	}
	return false
}

// simAllClose reports whether every word of x is close to some word of y.
func simAllClose(x, y []string) bool {
	for _, w := range x {
		if !slices.ContainsFunc(y, func(o string) bool { return simClose(w, o) }) {
			return false
		}
	}
	return true
}

// simStem returns w without the first of these English endings it ends
// with, if at least three bytes remain ("configuring": "configur").
func simStem(w string) string {
	for _, s := range [...]string{"ation", "ing", "ion", "ed", "es", "s"} {
		if len(w)-len(s) >= 3 && strings.HasSuffix(w, s) {
			return w[:len(w)-len(s)]
		}
	}
	return w
}

// simClose reports whether two different words with the same mark may be
// one word reworded (docs/concepts.md, "Similar queries": "close").
func simClose(x, y string) bool {
	ix, iy := strings.IndexByte(x, ':')+1, strings.IndexByte(y, ':')+1
	if x[:ix] != y[:iy] {
		return false
	}
	x, y = x[ix:], y[iy:]
	sx, sy := simStem(x), simStem(y)
	if len(sx) > len(sy) {
		sx, sy = sy, sx
	}
	if strings.HasPrefix(sy, sx) {
		short, long := utf8.RuneCountInString(sx), utf8.RuneCountInString(sy)
		if sx == sy || short >= 4 || short >= 2 && long > 2*short {
			return true
		}
	}
	nx, ny := utf8.RuneCountInString(x), utf8.RuneCountInString(y)
	longer := max(nx, ny)
	return longer >= 5 && 4*max(nx-ny, ny-nx) <= longer && // a cheap bound on the distance first
		4*levenshtein.ComputeDistance(x, y) <= longer
}

// simStopWords are the English words a key leaves out: not negations,
// question words or directions (but "to" where it is no direction).
var simStopWords = simGroups(`a about am an and are at be by can did do does for how i in is me my of
	on or our please that the this to was we were what with you your`)

// simDirections maps each direction word to the mark it leaves on the next
// word ("usd to eur" is "usd to:eur"). "to" right after a stop word starts
// an infinitive ("how to fix") and is a stop word.
var simDirections = map[string]string{
	"to": "to:", "from": "from:", "into": "into:", "onto": "onto:", "than": "than:",
	"towards": "towards:", "toward": "toward:",
}

// simAgree maps each word two similar keys agree on to its bit of
// simKey.agree: a destructive verb to its group, a negation to the last
// bit (apostrophes are gone by then: "dont").
var simAgree = simGroups(
	"delete deletes deleted deleting deletion",
	"remove removes removed removing removal rm",
	"drop drops dropped dropping",
	"destroy destroys destroyed destroying destruction",
	"deactivate deactivates deactivated deactivating deactivation",
	"disable disables disabled disabling",
	"purge purges purged purging",
	"truncate truncates truncated truncating truncation",
	"revoke revokes revoked revoking revocation",
	"kill kills killed killing",
	"reset resets resetting",
	"overwrite overwrites overwrote overwritten overwriting",
	"erase erases erased erasing",
	"wipe wipes wiped wiping",
	"terminate terminates terminated terminating termination",
	"uninstall uninstalls uninstalled uninstalling",
	"not no never without cannot cant dont doesnt didnt isnt arent wasnt wont shouldnt",
)

// simGroups maps each word of groups[i] to the bit 1<<i.
func simGroups(groups ...string) map[string]uint32 {
	m := make(map[string]uint32)
	for i, g := range groups {
		for _, w := range strings.Fields(g) {
			m[w] = 1 << i
		}
	}
	return m
}

// simFolds holds, for each rune from U+00E0 to U+017F, the plain letter
// simFold maps it to, or '.' where it keeps the rune.
const simFolds = "aaaaaa.ceeeeiiii.nooooo.ouuuuy.y" +
	".a.a.a.c.c.c.c.d.d.e.e.e.e.e.g.g.g.g.h.h.i.i.i.i.i...j.k..l.l.l." +
	"l.l.n.n.n....o.o.o...r.r.r.s.s.s.s.t.t.t.u.u.u.u.u.u.w.y..z.z.z."

// simFold returns the plain letter of a lowercase Latin-1 or Latin
// Extended-A letter with a diacritic ('é' → 'e'; 'ß', 'æ', 'þ' are kept).
func simFold(r rune) rune {
	if r >= 0xE0 && r <= 0x17F && simFolds[r-0xE0] != '.' {
		return rune(simFolds[r-0xE0])
	}
	return r
}

// queryIndex remembers the normalized queries of one search tool in one
// turn and answers whether a new query repeats one of them (similarKey).
// The zero value is an empty index; it is not safe for concurrent use.
type queryIndex struct {
	entries []queryEntry      // a ring of at most queryIndexCap entries
	added   int               // entries ever added: the next goes at added % queryIndexCap
	results []Hash            // the distinct digests of the results recorded so far
	byQuery map[queryID]int32 // where each entry is, made past queryIndexWindow entries
}

// queryID is a query in its scope.
type queryID struct {
	scope Hash
	query string
}

// queryEntry is one distinct query, in one scope, of a queryIndex.
type queryEntry struct {
	queryID
	key   *simKey // of query, shared with the turn's window
	round uint64  // the earliest round the query was asked in
	seq   uint64  // the call that asked it last
	stale bool    // the call seq is settled and brought no new fact
}

// ring returns the j-th newest entry, j from 1 to len(x.entries).
func (x *queryIndex) ring(j int) *queryEntry {
	return &x.entries[(x.added-j)%len(x.entries)]
}

// find returns the entry of the query q in scope, or nil, and their
// queryID: q normalized if longer than a normalized query can be, so that
// an index stays bounded however it is misused.
func (x *queryIndex) find(q string, scope Hash) (*queryEntry, queryID) {
	if len(q) > queryMaxBytes {
		q = normalizeQuery(q)
	}
	id := queryID{scope, q}
	if i, ok := x.byQuery[id]; ok {
		return &x.entries[i], id
	}
	for i := 0; x.byQuery == nil && i < len(x.entries); i++ { // without the map, a scan
		if x.entries[i].queryID == id {
			return &x.entries[i], id
		}
	}
	return nil, id
}

// addKey records the normalized query q, whose key is k, as asked in
// round, in scope (a hash of the call's other arguments), by the call seq,
// and returns the key it keeps for q: nil for a query without a word. A
// query asked before in the scope keeps its place, its key and the earlier
// of its rounds, and waits for the outcome of seq.
func (x *queryIndex) addKey(q string, k *simKey, scope Hash, round, seq uint64) *simKey {
	found, id := x.find(q, scope)
	if found != nil {
		found.round, found.seq, found.stale = min(found.round, round), seq, false
		return found.key
	}
	if k.runes == 0 {
		return nil
	}
	e := queryEntry{queryID: id, key: heldKey(nil, k), round: round, seq: seq}
	if len(x.entries) < queryIndexCap {
		x.entries = append(x.entries, queryEntry{})
	}
	i := x.added % queryIndexCap // a new entry's place, or the oldest entry's
	delete(x.byQuery, x.entries[i].queryID)
	x.entries[i] = e
	x.added++
	switch {
	case x.byQuery != nil:
		x.byQuery[e.queryID] = int32(i)
	case len(x.entries) > queryIndexWindow:
		x.byQuery = make(map[queryID]int32, 2*len(x.entries))
		for j, e := range x.entries {
			x.byQuery[e.queryID] = int32(j)
		}
	}
	return e.key
}

// heldKey returns held if not nil, else a copy of k to keep (nil when k
// has no word): a query's key is copied once and shared.
func heldKey(held, k *simKey) *simKey {
	if held != nil || k.runes == 0 {
		return held
	}
	c := *k
	return &c
}

// settle records the outcome of the call seq: a new fact if it succeeded
// with a result no call settled before returned (until settled, a query
// counts as one). Past queryIndexCap distinct results the index starts
// over: a result seen before is new again, which can only delay a firing.
func (x *queryIndex) settle(seq uint64, failed bool, digest Hash) {
	seen := slices.Contains(x.results, digest)
	for j := 1; j <= len(x.entries); j++ { // the newest first: usually the call just asked
		if e := x.ring(j); e.seq == seq {
			e.stale = failed || seen
			break
		}
	}
	if failed || seen {
		return
	}
	if len(x.results) >= queryIndexCap {
		x.results = x.results[:0]
	}
	x.results = append(x.results, digest)
}

// similarKey reports whether the normalized query q, whose key is k,
// repeats a query recorded in scope in a round before round, exactly or
// with a score of at least threshold (above 1 or NaN: never). Unless blind
// is set, only a query settled without a new fact counts, and not when q
// adds a specific term to it (refines).
func (x *queryIndex) similarKey(q string, k *simKey, scope Hash, round uint64, threshold float64, blind bool) bool {
	if !(threshold <= 1) || k.runes == 0 {
		return false // a query without a word is similar to nothing
	}
	counts := func(e *queryEntry) bool {
		return e.round < round && e.scope == scope && (blind || e.stale)
	}
	if e, _ := x.find(q, scope); e != nil && counts(e) {
		return true
	}
	for j := 1; j <= min(len(x.entries), queryIndexWindow); j++ {
		if e := x.ring(j); counts(e) && simScore(k, e.key, threshold) >= threshold && (blind || !refines(k, e.key)) {
			return true
		}
	}
	return false
}
