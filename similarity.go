package toolguard

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
)

// Similar queries.
//
// A search tool asked, in one turn, a question it has already answered,
// reworded ("fix bug", then "fix the bug"), wastes a call: the model should
// use the earlier result. This file decides when two queries are the same
// search reworded. A false "similar" tells the model to reuse an answer to a
// different question, while a false "different" only costs one more search,
// so every rule below errs towards "different".
//
// A query is first normalized (normalizeQuery): lowercased, stripped of
// everything but letters, digits, underscores and single spaces, and cut to
// queryMaxRunes runes. Two normalized queries are then compared as keys
// (simKeyOf): their words without stop words (simStopWords; kept when every
// word is one), with common Latin diacritics folded (simFold). The score
// (querySimilarity) is 0 when the keys disagree on the destructive verbs
// (simDestructive) or negations (simNegations) they hold, hold different
// numbers, or swap a word for an unrelated one (simWordsAgree); otherwise
// it is the Levenshtein ratio of the keys, 1 - distance/max(length),
// counted in runes.

const (
	// queryMaxRunes is the cut: normalizeQuery keeps at most this many runes
	// and querySimilarity compares at most this many runes of each query.
	// A search query is a sentence, not a document; 256 runes hold any
	// reasonable one and bound a comparison to 256*256 steps.
	queryMaxRunes = 256

	// queryMaxBytes is the prefix of its input normalizeQuery reads: enough
	// for queryMaxRunes runes of any width, so that a normalized query is
	// always read whole. It is also the most bytes a normalized query or a
	// key can take.
	queryMaxBytes = utf8.UTFMax * queryMaxRunes

	// queryIndexWindow is how many of its most recent distinct queries a
	// queryIndex compares a new query with. Earlier ones only match exactly.
	queryIndexWindow = 64

	// queryIndexCap is how many distinct queries a queryIndex remembers for
	// exact matching; the oldest is forgotten first. With queryMaxBytes per
	// query and per key, an index holds at most about 2 MiB.
	queryIndexCap = 1024
)

// normalizeQuery returns the comparable form of a search query: lowercase,
// with every rune that is neither a word rune (a Unicode letter, a decimal
// digit or '_') nor white space dropped, runs of white space collapsed to
// one ' ', and no space at either end. "How do I reset my password?"
// becomes "how do i reset my password". Combining marks are dropped too, so
// a decomposed "é" becomes "e", while a precomposed "é" stays.
//
// normalizeQuery reads at most the first queryMaxBytes bytes of s and
// returns at most queryMaxRunes runes: the words that fit whole, or the
// start of the first word if even that one does not fit. Cutting between
// words keeps two long queries that differ early from ending in two halves
// of a word, which would look like different words. The result is valid
// UTF-8, and normalizing it again returns it unchanged.
func normalizeQuery(s string) string {
	in := s // returned when already normalized
	if len(s) > queryMaxBytes {
		in = "" // a cut query is never returned: it would keep s alive
		n := queryMaxBytes
		// Do not split the last rune; invalid input may have no rune start.
		for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(s[n]); i++ {
			n--
		}
		s = s[:n]
	}
	var buf [queryMaxBytes]byte
	out := buf[:0]
	runes := 0
	space := false // white space seen since the last word rune
	word := 0      // where the last word starts in out, with its space
	for _, r := range s {
		r = unicode.ToLower(r)
		switch {
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			need := 1
			if space && runes > 0 {
				need++
			}
			if runes+need > queryMaxRunes {
				if need == 1 && word > 0 {
					out = out[:word] // do not keep half a word
				}
				return simString(out, in)
			}
			if need == 2 {
				word = len(out)
				out = append(out, ' ')
			}
			out = utf8.AppendRune(out, r)
			runes += need
			space = false
		case unicode.IsSpace(r):
			space = true
		}
	}
	return simString(out, in)
}

// simString returns b as a string, reusing s when it holds the same bytes.
func simString(b []byte, s string) string {
	if string(b) == s {
		return s
	}
	return string(b)
}

// querySimilarity scores two normalized queries in [0, 1]; it is symmetric.
//
// Both queries are reduced to keys (see simKeyOf): stop words dropped
// unless nothing else is left, common Latin diacritics folded. The score
// is then
//
//   - 1 for identical queries or keys ("fix bug", "fix the bug");
//   - 0 when either key is empty: an empty or emoji-only query says
//     nothing, so it is similar to nothing, not even to itself;
//   - 0 when the keys hold different sets of destructive verbs
//     (simDestructive): "delete user" and "deactivate user" are different
//     requests even though the words look alike;
//   - 0 when one key holds a negation (simNegations) and the other does
//     not: "build not working" and "build working" are opposites;
//   - 0 when a word with a digit is in one key but not the other: "error
//     404" and "error 500", "python3" and "python 3" are different questions;
//   - 0 when one key has a word the other lacks and the other has a word
//     the first lacks, and neither side's extra words are all close to the
//     other side's (see simClose): swapping "paris" for "london" asks about a
//     different thing, while "kubernets" for "kubernetes" is a typo;
//   - otherwise the Levenshtein ratio 1 - d/max(len(a), len(b)) of the keys,
//     counted in runes.
//
// Word order counts: the ratio of "usd to eur" and "eur to usd" is low, and
// so is that of most reordered queries. Inputs that are not normalized are
// compared as they are, split at white space; they are cut the same way.
//
// Identical queries cost no allocation. Otherwise each key that differs
// from its query (a stop word dropped, a letter folded) is one allocation,
// and each Levenshtein distance (github.com/agnivade/levenshtein) over more
// than 32 runes two, its rune slices (three on compilers that do not keep
// its row on the stack). Shorter distances, the usual case for words and
// often for whole keys, allocate nothing. The work is bounded by a small
// multiple of queryMaxRunes squared: tens of microseconds for two
// 256-rune keys.
func querySimilarity(a, b string) float64 {
	ka, kb := simKeyOf(a), simKey{}
	if a != b {
		kb = simKeyOf(b)
	}
	return querySimilarityKeys(a, b, &ka, &kb)
}

// querySimilarityKeys is querySimilarity of a and b, whose keys ka and kb
// the caller computed (kb is not read when a == b).
func querySimilarityKeys(a, b string, ka, kb *simKey) float64 {
	if a == b {
		if ka.runes > 0 {
			return 1
		}
		return 0
	}
	return simScore(ka, kb, 0)
}

// simKey is the part of a query that querySimilarity compares.
type simKey struct {
	text    string    // content words, folded, joined by single spaces
	runes   int       // runes in text
	agree   uint32    // simDestructive groups and simNegation: must match
	numbers [2]uint64 // two bits, by hash, per word holding a digit (a Bloom filter)
	words   []string  // the words of text, sorted; nil until prepare
}

// simKeyOf returns the key of s: the words of s that are not stop words,
// or all of them when all are, with each rune folded by simFold and the
// words joined by single spaces. Words are runs of runes other than white
// space; only the first queryMaxRunes runes of s are read, and a word they
// cut in two is left out unless it is the first. A normalized query is
// always read whole.
func simKeyOf(s string) simKey {
	var buf [queryMaxBytes]byte
	out, k, words := simAppendKey(buf[:0], s, true)
	if k.runes == 0 && words > 0 {
		out, k, _ = simAppendKey(buf[:0], s, false)
	}
	k.text = simString(out, s)
	return k
}

// prepare stores the sorted words of k, for a key that simScore compares
// many times: simWordsAgree then neither splits nor sorts it again.
func (k *simKey) prepare() {
	if k.runes > 0 && k.words == nil {
		k.words = simSplit(make([]string, 0, strings.Count(k.text, " ")+1), k.text)
		slices.Sort(k.words)
	}
}

// simAppendKey appends the words of s to dst as simKeyOf describes,
// skipping stop words if dropStop is set, and returns the extended buffer,
// the key without its text, and the number of words read, stop words
// included. With at most queryMaxRunes runes read, it appends at most
// queryMaxBytes bytes.
func simAppendKey(dst []byte, s string, dropStop bool) ([]byte, simKey, int) {
	var k simKey
	words, read := 0, 0
	for i := 0; i < len(s) && read < queryMaxRunes; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			i += size
			read++
			continue
		}
		mark := len(dst)
		if mark > 0 {
			dst = append(dst, ' ')
		}
		start := len(dst)
		n, digit := 0, false
		for i < len(s) && read < queryMaxRunes {
			r, size := utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) {
				break
			}
			i += size
			read++
			r = simFold(r)
			digit = digit || unicode.IsDigit(r)
			dst = utf8.AppendRune(dst, r)
			n++
		}
		if words > 0 && i < len(s) && !simSpaceAt(s, i) {
			dst = dst[:mark] // cut in two by the read limit
			break
		}
		words++
		w := dst[start:]
		if dropStop && simStopWords[string(w)] {
			dst = dst[:mark]
			continue
		}
		k.agree |= simDestructive[string(w)]
		if simNegations[string(w)] {
			k.agree |= simNegation
		}
		if digit {
			b0, b1 := simWordBits(w)
			k.numbers[0] |= b0
			k.numbers[1] |= b1
		}
		k.runes += n
		if mark > 0 {
			k.runes++
		}
	}
	return dst, k, words
}

// simSpaceAt reports whether the rune at byte i of s is white space.
func simSpaceAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsSpace(r)
}

// simWordBits returns two bits for w, one of 64 each, chosen by its FNV-1a
// hash. Two equal sets of words have equal unions of bits; two different
// single numbers collide in both with a chance of 1 in 4096, so the exact
// word check (simWordsAgree) rarely runs for them.
func simWordBits(w []byte) (uint64, uint64) {
	h := uint64(14695981039346656037)
	for _, c := range w {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return 1 << (h >> 58), 1 << ((h >> 52) & 63)
}

// simScore returns the score of two keys as querySimilarity describes it,
// or 0 when it can tell cheaply that the score is below floor.
func simScore(a, b *simKey, floor float64) float64 {
	if a.runes == 0 || b.runes == 0 || a.agree != b.agree || a.numbers != b.numbers {
		return 0
	}
	if a.text == b.text {
		return 1
	}
	longer := max(a.runes, b.runes)
	// The distance is at least the difference in length.
	if 1-float64(simAbs(a.runes-b.runes))/float64(longer) < floor {
		return 0
	}
	if !simWordsAgree(a, b) {
		return 0
	}
	d := levenshtein.ComputeDistance(a.text, b.text)
	return 1 - float64(d)/float64(longer)
}

// simWordsAgree reports whether two keys may be one question: no word with
// a digit is in one but not the other, and the words of one that the other
// lacks are not a substitution: either side has no such words, or all of
// one side's are close (simClose) to some of the other side's.
func simWordsAgree(a, b *simKey) bool {
	if a.words == nil || b.words == nil {
		return simWordsAgreeSplit(a, b)
	}
	return simWordsAgreeSorted(a.words, b.words)
}

// simWordsAgreeSplit is simWordsAgree of keys not prepared: their words are
// split and sorted on the stack.
func simWordsAgreeSplit(a, b *simKey) bool {
	// A key of at most queryMaxRunes runes has at most this many words, so
	// the arrays hold them all without allocating.
	const most = queryMaxRunes/2 + 1
	var sa, sb [most]string
	wa, wb := a.words, b.words
	if wa == nil {
		wa = simSplit(sa[:0], a.text)
		slices.Sort(wa)
	}
	if wb == nil {
		wb = simSplit(sb[:0], b.text)
		slices.Sort(wb)
	}
	return simWordsAgreeSorted(wa, wb)
}

// simWordsAgreeSorted is simWordsAgree of two sorted word lists.
func simWordsAgreeSorted(aw, bw []string) bool {
	onlyA, onlyB := false, false
	for _, w := range aw {
		if !simHas(bw, w) {
			if simHasDigit(w) {
				return false
			}
			onlyA = true
		}
	}
	for _, w := range bw {
		if !simHas(aw, w) {
			if simHasDigit(w) {
				return false
			}
			onlyB = true
		}
	}
	if !onlyA || !onlyB {
		return true
	}
	return simAllClose(aw, bw) || simAllClose(bw, aw)
}

// simHas reports whether the sorted words hold w.
func simHas(words []string, w string) bool {
	_, ok := slices.BinarySearch(words, w)
	return ok
}

// simSplit appends the words of s, split at single spaces, to dst.
func simSplit(dst []string, s string) []string {
	for s != "" {
		var w string
		w, s, _ = strings.Cut(s, " ")
		dst = append(dst, w)
	}
	return dst
}

// simAllClose reports whether every word of x that y lacks is close to
// some word of y that x lacks; both are sorted.
func simAllClose(x, y []string) bool {
	for _, w := range x {
		if simHas(y, w) {
			continue
		}
		found := false
		for _, o := range y {
			if !simHas(x, o) && simClose(w, o) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// simHasDigit reports whether w holds a decimal digit.
func simHasDigit(w string) bool {
	for _, r := range w {
		if unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// simSuffixes are the English endings simStem strips, longest first.
var simSuffixes = [...]string{"ation", "ing", "ion", "ed", "es", "s"}

// simStem returns w without the first of simSuffixes it ends with, if at
// least three bytes remain: "configuring" and "configures" become
// "configur", "configuration" becomes "configur", "pods" becomes "pod".
// A final "e" is kept ("care" and "cars" must differ); the prefix rule of
// simClose matches "configure" with "configur".
func simStem(w string) string {
	for _, s := range simSuffixes {
		if len(w)-len(s) >= 3 && strings.HasSuffix(w, s) {
			return w[:len(w)-len(s)]
		}
	}
	return w
}

// simClose reports whether two different words may be one word reworded:
// their stems (simStem) are equal ("pod", "pods"); or the shorter stem
// begins the longer and either has at least four runes ("config",
// "configuration") or, as an abbreviation, fewer than half as many ("go",
// "golang"); or the longer word has at least five runes and the edit
// distance of the words is at most a quarter of that ("kubernets",
// "kubernetes"). "car" and "card", "paris" and "london" are not close.
func simClose(x, y string) bool {
	sx, sy := simStem(x), simStem(y)
	if len(sx) > len(sy) {
		sx, sy = sy, sx
	}
	if sx == sy {
		return true
	}
	if strings.HasPrefix(sy, sx) {
		short, long := utf8.RuneCountInString(sx), utf8.RuneCountInString(sy)
		if short >= 4 || short >= 2 && long > 2*short {
			return true
		}
	}
	nx, ny := utf8.RuneCountInString(x), utf8.RuneCountInString(y)
	longer := max(nx, ny)
	if longer < 5 || 4*simAbs(nx-ny) > longer {
		return false
	}
	return 4*levenshtein.ComputeDistance(x, y) <= longer
}

// simAbs returns the absolute value of n.
func simAbs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// simStopWords are the English words a key leaves out: articles,
// prepositions, pronouns and auxiliaries that do not change what is
// searched for. Negations (not, no, without), question words that pick the
// answer (when, where, who, why, which) and directions (from, into) are not
// stop words: they change the question.
var simStopWords = map[string]bool{
	"a": true, "about": true, "am": true, "an": true, "and": true,
	"are": true, "at": true, "be": true, "by": true, "can": true,
	"did": true, "do": true, "does": true, "for": true, "how": true,
	"i": true, "in": true, "is": true, "me": true, "my": true,
	"of": true, "on": true, "or": true, "our": true, "please": true,
	"that": true, "the": true, "this": true, "to": true, "was": true,
	"we": true, "were": true, "what": true, "with": true, "you": true,
	"your": true,
}

// The groups of destructive verbs (see simDestructive) and the bit for a
// negation (see simNegations), as bits of simKey.agree.
const (
	simDelete uint32 = 1 << iota
	simRemove
	simDrop
	simDestroy
	simDeactivate
	simDisable
	simPurge
	simTruncate
	simRevoke
	simKill
	simReset
	simOverwrite
	simErase
	simWipe
	simTerminate
	simUninstall
	simNegation
)

// simNegations are the words that turn a query around. Two queries must
// both hold one or both hold none to be similar. Apostrophes are gone by
// then: "don't" is "dont".
var simNegations = map[string]bool{
	"not": true, "no": true, "never": true, "without": true, "cannot": true,
	"cant": true, "dont": true, "doesnt": true, "didnt": true, "isnt": true,
	"arent": true, "wasnt": true, "wont": true, "shouldnt": true,
}

// simDestructive maps each destructive verb, in its usual inflections
// (base, -s, past, -ing, and the noun where common), to its group. Two
// queries must hold the same groups to be similar: "delete user" and
// "deleted user" may be, "delete user" and "deactivate user" are not, nor
// are "reset password" and "password".
var simDestructive = map[string]uint32{
	"delete": simDelete, "deletes": simDelete, "deleted": simDelete, "deleting": simDelete, "deletion": simDelete,
	"remove": simRemove, "removes": simRemove, "removed": simRemove, "removing": simRemove, "removal": simRemove, "rm": simRemove,
	"drop": simDrop, "drops": simDrop, "dropped": simDrop, "dropping": simDrop,
	"destroy": simDestroy, "destroys": simDestroy, "destroyed": simDestroy, "destroying": simDestroy, "destruction": simDestroy,
	"deactivate": simDeactivate, "deactivates": simDeactivate, "deactivated": simDeactivate, "deactivating": simDeactivate, "deactivation": simDeactivate,
	"disable": simDisable, "disables": simDisable, "disabled": simDisable, "disabling": simDisable,
	"purge": simPurge, "purges": simPurge, "purged": simPurge, "purging": simPurge,
	"truncate": simTruncate, "truncates": simTruncate, "truncated": simTruncate, "truncating": simTruncate, "truncation": simTruncate,
	"revoke": simRevoke, "revokes": simRevoke, "revoked": simRevoke, "revoking": simRevoke, "revocation": simRevoke,
	"kill": simKill, "kills": simKill, "killed": simKill, "killing": simKill,
	"reset": simReset, "resets": simReset, "resetting": simReset,
	"overwrite": simOverwrite, "overwrites": simOverwrite, "overwrote": simOverwrite, "overwritten": simOverwrite, "overwriting": simOverwrite,
	"erase": simErase, "erases": simErase, "erased": simErase, "erasing": simErase,
	"wipe": simWipe, "wipes": simWipe, "wiped": simWipe, "wiping": simWipe,
	"terminate": simTerminate, "terminates": simTerminate, "terminated": simTerminate, "terminating": simTerminate, "termination": simTerminate,
	"uninstall": simUninstall, "uninstalls": simUninstall, "uninstalled": simUninstall, "uninstalling": simUninstall,
}

// simFoldTable lists the lowercase Latin letters with diacritics that
// simFold maps to a plain ASCII letter.
var simFoldTable = [...]struct {
	from string
	to   rune
}{
	{"àáâãäåāăą", 'a'}, {"çćĉċč", 'c'}, {"ďđ", 'd'}, {"èéêëēĕėęě", 'e'},
	{"ĝğġģ", 'g'}, {"ĥħ", 'h'}, {"ìíîïĩīĭįı", 'i'}, {"ĵ", 'j'}, {"ķ", 'k'},
	{"ĺļľŀł", 'l'}, {"ñńņň", 'n'}, {"òóôõöøōŏő", 'o'}, {"ŕŗř", 'r'},
	{"śŝşš", 's'}, {"ţťŧ", 't'}, {"ùúûüũūŭůűų", 'u'}, {"ŵ", 'w'},
	{"ýÿŷ", 'y'}, {"źżž", 'z'},
}

// simFold returns the plain letter for a lowercase Latin-1 or Latin
// Extended-A letter with a diacritic ('é' → 'e'), and r otherwise, so that
// "café" and "cafe" compare equal. Letters that are not a plain letter with
// a mark, such as 'ß', 'æ' and 'þ', are kept.
func simFold(r rune) rune {
	if r < 0xC0 || r > 0x17F {
		return r
	}
	for _, f := range simFoldTable {
		if strings.ContainsRune(f.from, r) {
			return f.to
		}
	}
	return r
}

// queryIndex remembers the normalized queries of one search tool in one
// turn, each with the round it was first asked in, and answers whether a
// new query is similar to one from an earlier round.
//
// Its cost per call does not grow with the turn: a new query is looked up
// exactly among the last queryIndexCap distinct queries, and compared by
// querySimilarity only with the last queryIndexWindow of them, skipping
// those whose length alone rules out the threshold. A query asked again is
// not stored again. The zero value is an empty index ready to use; an index
// is not safe for concurrent use.
type queryIndex struct {
	at      map[string]int // query → its position in entries
	entries []queryEntry   // a ring of at most queryIndexCap entries
	next    int            // where the next entry goes in the ring
}

// queryEntry is one distinct query in a queryIndex.
type queryEntry struct {
	query string
	key   simKey
	round uint64 // the earliest round the query was added in
}

// add records the normalized query q as asked in round. A query seen
// before keeps its place and the earlier of its rounds. Queries without a
// word (see querySimilarity) are not recorded: they are similar to nothing.
func (x *queryIndex) add(q string, round uint64) {
	q = queryBound(q)
	x.addKey(q, simKeyOf(q), round)
}

// addKey is add of a bounded query q (see queryBound) whose key is k.
func (x *queryIndex) addKey(q string, k simKey, round uint64) {
	if i, ok := x.at[q]; ok {
		x.entries[i].round = min(x.entries[i].round, round)
		return
	}
	e := queryEntry{query: q, key: k, round: round}
	if e.key.runes == 0 {
		return
	}
	if x.at == nil {
		x.at = make(map[string]int)
	}
	if len(x.entries) < queryIndexCap {
		x.entries = append(x.entries, e)
	} else {
		delete(x.at, x.entries[x.next].query)
		x.entries[x.next] = e
	}
	x.at[q] = x.next
	x.next = (x.next + 1) % queryIndexCap
}

// similar reports whether the normalized query q is similar to a query
// recorded in a round before round: one with the same text among the last
// queryIndexCap distinct queries, or one whose querySimilarity with q is at
// least threshold among the last queryIndexWindow. Queries of the same
// round never match: they were asked together, as distinct questions. A
// threshold above 1 or NaN matches nothing.
func (x *queryIndex) similar(q string, round uint64, threshold float64) bool {
	if len(x.entries) == 0 {
		return false
	}
	q = queryBound(q)
	k := simKeyOf(q)
	return x.similarKey(q, &k, round, threshold)
}

// similarKey is similar of a bounded query q (see queryBound) whose key is
// k, which the caller computed once.
func (x *queryIndex) similarKey(q string, k *simKey, round uint64, threshold float64) bool {
	n := len(x.entries)
	if n == 0 {
		return false
	}
	if i, ok := x.at[q]; ok && x.entries[i].round < round && threshold <= 1 {
		return true
	}
	if k.runes == 0 {
		return false
	}
	for j := 1; j <= min(queryIndexWindow, n); j++ {
		e := &x.entries[(x.next-j+n)%n]
		if e.round < round && simScore(k, &e.key, threshold) >= threshold {
			return true
		}
	}
	return false
}

// reset forgets every query, keeping the memory for reuse.
func (x *queryIndex) reset() {
	clear(x.at)
	clear(x.entries)
	x.entries = x.entries[:0]
	x.next = 0
}

// queryBound returns q if it is short enough to be a normalized query, and
// normalizeQuery(q) otherwise, so that an index never holds more than
// queryMaxBytes of a query however it is misused.
func queryBound(q string) string {
	if len(q) <= queryMaxBytes {
		return q
	}
	return normalizeQuery(q)
}
