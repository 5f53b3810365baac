package toolguard

import (
	"bytes"
	"math"
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
// A query is normalized (normalizeQuery), reduced to a key (simKeyOf) and
// scored against earlier keys (simScore, the rules below).
//
// A queryIndex remembers the queries of one search tool in one turn, with
// the scope they were asked in (the call's other arguments) and whether
// they brought a new fact, and finds an earlier similar one.

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
		s = queryCut(s)
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

// queryCut returns the first queryMaxBytes bytes of s, without splitting
// the last rune (invalid input may have no rune start).
func queryCut(s string) string {
	n := queryMaxBytes
	for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return s[:n]
}

// simString returns b as a string, reusing s when it holds the same bytes.
func simString(b []byte, s string) string {
	if string(b) == s {
		return s
	}
	return string(b)
}

// The similarity of two normalized queries (querySimilarity in the tests)
// is a score in [0, 1]; it is symmetric.
//
// Both queries are reduced to keys (see simKeyOf): stop words dropped
// unless nothing else is left, common Latin diacritics folded, the word
// after a direction word marked with it, and the words sorted. The score is
// then
//
//   - 1 for identical queries or keys ("fix bug", "fix the bug", "bug fix");
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
//     counted in runes, with their words sorted or in the order of the
//     queries, whichever is higher.
//
// Word order does not count, since sorted keys are compared: "java null
// pointer exception fix" is "how to fix null pointer exception java". The
// keys in query order are compared too, so that a word split in two or a
// typo that moves a word in the sorted order is still one edit ("user_id
// column", "user id column"). Direction counts: "usd to eur" and "eur to
// usd" have the keys "usd to:eur" and "eur to:usd", a substitution of
// unrelated words. Inputs that are not normalized are compared as they
// are, split at white space; they are cut the same way.
//
// Identical queries cost no allocation. Otherwise each key that differs
// from its query (a stop word dropped, a letter folded) is one allocation,
// its sorted words another unless they are in order, and each Levenshtein
// distance (github.com/agnivade/levenshtein) over more than 32 runes two,
// its rune slices (three on compilers that do not keep its row on the
// stack). Shorter distances, the usual case for words and often for whole
// keys, allocate nothing. The work is bounded by a small multiple of
// queryMaxRunes squared: tens of microseconds for two 256-rune keys.

// simKey is the part of a query that querySimilarity compares.
type simKey struct {
	text   string // content words, folded and marked, joined by single spaces
	sorted string // the words of text, sorted
	runes  int    // runes in text
	agree  uint32 // simDestructive groups and simNegation: must match
	// specific holds two bits, by hash, per word the raw query wrote as a
	// name or quoted (specificBits), set by the caller that has the raw
	// query: an added specific term makes a refinement (refines).
	specific [2]uint64
	hist     [32]uint8 // runes of text, counted by their value modulo 32, up to 255
}

// simMaxWords is the most words a key can have: queryMaxRunes runes hold
// at most this many words and the spaces between them.
const simMaxWords = queryMaxRunes/2 + 1

// simKeyOf returns the key of s: the words of s that are not stop words,
// or all of them when all are, with each rune folded by simFold and the
// word after a direction word marked (simDirections), joined by single
// spaces, in their order and sorted. Words are runs of runes other than
// white space; only the first queryMaxRunes runes of s are read, and a
// word they cut in two is left out unless it is the first. A normalized
// query is always read whole.
func simKeyOf(s string) simKey {
	var buf, out [queryMaxBytes]byte
	var spans [simMaxWords][2]int
	text, words, read := simWords(buf[:0], spans[:0], s, true)
	if len(words) == 0 && read > 0 {
		text, words, _ = simWords(buf[:0], spans[:0], s, false)
	}
	var k simKey
	for _, w := range words {
		word := text[w[0]:w[1]]
		bare := word[bytes.IndexByte(word, ':')+1:]
		k.agree |= simDestructive[string(bare)]
		if simNegations[string(bare)] {
			k.agree |= simNegation
		}
	}
	slices.SortFunc(words, func(x, y [2]int) int {
		return bytes.Compare(text[x[0]:x[1]], text[y[0]:y[1]])
	})
	sorted := out[:0]
	for i, w := range words {
		if i > 0 {
			sorted = append(sorted, ' ')
		}
		sorted = append(sorted, text[w[0]:w[1]]...)
	}
	k.text = simString(text, s)
	k.sorted = simString(sorted, k.text)
	for _, r := range k.text {
		if k.hist[r%32] < math.MaxUint8 {
			k.hist[r%32]++
		}
		k.runes++
	}
	return k
}

// simWords appends the words of s to buf as simKeyOf describes, in the
// order read and joined by single spaces, skipping stop words if dropStop
// is set. It returns the extended buffer, where each word is in it, and the
// number of words read, stop words included. With at most queryMaxRunes
// runes read, it appends at most queryMaxBytes bytes.
func simWords(buf []byte, spans [][2]int, s string, dropStop bool) ([]byte, [][2]int, int) {
	words, read := 0, 0
	mark := ""         // the mark of a direction word, waiting for its word
	afterStop := false // the word read last is a stop word
	for i := 0; i < len(s) && read < queryMaxRunes; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			i += size
			read++
			continue
		}
		space := len(buf)
		if space > 0 {
			buf = append(buf, ' ')
		}
		start := len(buf)
		buf, i, read = simReadWord(buf, s, i, read)
		if words > 0 && i < len(s) && !simSpaceAt(s, i) {
			buf = buf[:space] // cut in two by the read limit
			break
		}
		words++
		w := buf[start:]
		stop, dir := simStopWords[string(w)], simDirections[string(w)]
		switch {
		case dropStop && dir != "" && (string(w) != "to" || !afterStop):
			mark = dir
			buf = buf[:space]
		case dropStop && stop:
			buf = buf[:space]
		default:
			buf, mark = simInsertMark(buf, start, mark), ""
			spans = append(spans, [2]int{start, len(buf)})
		}
		afterStop = stop
	}
	buf, spans = simLoneMark(buf, spans, mark)
	return buf, spans, words
}

// simReadWord appends the folded word at s[i:] to buf, reading up to
// queryMaxRunes runes in all; it returns buf, the index after the word and
// the runes read.
func simReadWord(buf []byte, s string, i, read int) ([]byte, int, int) {
	for i < len(s) && read < queryMaxRunes {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			break
		}
		i += size
		read++
		buf = utf8.AppendRune(buf, simFold(r))
	}
	return buf, i, read
}

// simInsertMark inserts mark before the word at buf[start:].
func simInsertMark(buf []byte, start int, mark string) []byte {
	if mark == "" {
		return buf
	}
	buf = append(buf, mark...)
	copy(buf[start+len(mark):], buf[start:len(buf)-len(mark)])
	copy(buf[start:], mark)
	return buf
}

// simLoneMark appends the direction word of mark, left with no word after
// it to mark, as a word of its own, unless it is a stop word.
func simLoneMark(buf []byte, spans [][2]int, mark string) ([]byte, [][2]int) {
	w := strings.TrimSuffix(mark, ":")
	if w == "" || simStopWords[w] {
		return buf, spans
	}
	if len(buf) > 0 {
		buf = append(buf, ' ')
	}
	spans = append(spans, [2]int{len(buf), len(buf) + len(w)})
	return append(buf, w...), spans
}

// simCutMark splits a key word into its direction mark and the word:
// "to:eur" into "to" and "eur", "eur" into "" and "eur".
func simCutMark(w string) (mark, word string) {
	if i := strings.IndexByte(w, ':'); i >= 0 {
		return w[:i], w[i+1:]
	}
	return "", w
}

// simSpaceAt reports whether the rune at byte i of s is white space.
func simSpaceAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsSpace(r)
}

// simWordBits returns two bits for w, one of 64 each, chosen by its FNV-1a
// hash, mixed by the finalizer of MurmurHash3 so that every byte moves
// every bit ("12" and "13" differ in their last byte only): a Bloom filter
// of words, for simKey.specific.
func simWordBits(w []byte) (uint64, uint64) {
	h := fnv64(w)
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return 1 << (h >> 58), 1 << (h & 63)
}

// simScore returns the score of two keys as querySimilarity describes it,
// or 0 when it can tell cheaply that the score is below floor.
func simScore(a, b *simKey, floor float64) float64 {
	if a.runes == 0 || b.runes == 0 || a.agree != b.agree {
		return 0
	}
	if a.sorted == b.sorted {
		return 1
	}
	longer := max(a.runes, b.runes)
	if 1-float64(simHistBound(a, b))/float64(longer) < floor {
		return 0
	}
	if !simWordsAgree(a.sorted, b.sorted) {
		return 0
	}
	d := levenshtein.ComputeDistance(a.sorted, b.sorted)
	if a.text != a.sorted || b.text != b.sorted {
		d = min(d, levenshtein.ComputeDistance(a.text, b.text))
	}
	return 1 - float64(d)/float64(longer)
}

// simHistBound returns a lower bound on the Levenshtein distance of two
// keys, in query order or sorted (the same runes either way), from their
// rune counts by class (hist): the larger of the runes one key has more of
// and the runes the other has more of, class by class. An insertion adds
// one rune, a deletion takes one away and a substitution does both, so
// each edit settles at most one surplus rune of each key. The two
// surpluses sum to the differences of the counts and differ by the
// difference in length, which is thus never more than the bound. A count
// stopped at 255 only makes the differences, and so the bound, smaller.
func simHistBound(a, b *simKey) int {
	sum := 0
	for i := range a.hist {
		d := int(a.hist[i]) - int(b.hist[i])
		sum += max(d, -d)
	}
	return (sum + max(a.runes-b.runes, b.runes-a.runes)) / 2
}

// simWordsAgree reports whether two key texts may be one question: no
// word with a digit is in one but not the other, and the words of one that
// the other lacks are not a substitution: either side has no such words,
// or all of one side's are close (simClose) to some of the other side's.
// The words of a key text are sorted, so one merge finds them.
func simWordsAgree(a, b string) bool {
	var sa, sb [simMaxWords]string
	wa := slices.Compact(simSplit(sa[:0], a))
	wb := slices.Compact(simSplit(sb[:0], b))
	// Keep in wa and wb only the words that the other lacks.
	i, j, na, nb := 0, 0, 0, 0
	for i < len(wa) || j < len(wb) {
		switch {
		case j == len(wb) || i < len(wa) && wa[i] < wb[j]:
			wa[na] = wa[i]
			na, i = na+1, i+1
		case i == len(wa) || wb[j] < wa[i]:
			wb[nb] = wb[j]
			nb, j = nb+1, j+1
		default:
			i, j = i+1, j+1
		}
	}
	onlyA, onlyB := wa[:na], wb[:nb]
	if slices.ContainsFunc(onlyA, simHasDigit) || slices.ContainsFunc(onlyB, simHasDigit) {
		return false
	}
	if na == 0 || nb == 0 {
		return true
	}
	return simAllClose(onlyA, onlyB) || simAllClose(onlyB, onlyA)
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

// simAllClose reports whether every word of x is close to some word of y.
func simAllClose(x, y []string) bool {
	for _, w := range x {
		if !slices.ContainsFunc(y, func(o string) bool { return simClose(w, o) }) {
			return false
		}
	}
	return true
}

// simHasDigit reports whether w holds a decimal digit.
func simHasDigit(w string) bool {
	return strings.ContainsFunc(w, unicode.IsDigit)
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
// Marked words (see simDirections) are close only with the same mark:
// "to:londn" and "to:london" are, "to:paris" and "from:paris" or "paris"
// are not.
func simClose(x, y string) bool {
	mx, x := simCutMark(x)
	my, y := simCutMark(y)
	if mx != my {
		return false
	}
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
	if longer < 5 || 4*max(nx-ny, ny-nx) > longer {
		return false
	}
	return 4*levenshtein.ComputeDistance(x, y) <= longer
}

// simStopWords are the English words a key leaves out: articles,
// prepositions, pronouns and auxiliaries that do not change what is
// searched for. Negations (not, no, without), question words that pick the
// answer (when, where, who, why, which) and directions (see simDirections)
// are not stop words: they change the question. The one exception, "to",
// is a stop word where it is not a direction.
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

// simDirections maps each direction word to its mark. A direction word
// gives the word after it a role, so that swapping the words around it
// reverses the question: "usd to eur" is not "eur to usd", "flights from
// paris" not "flights to paris", "python faster than go" not "go faster
// than python". A direction word is not kept in the key itself: it marks
// the next word that is not a stop word, "to:eur", "from:paris". Since
// keys are compared sorted, a marked word keeps its role wherever it
// stands: "from paris to london" is "to london from paris". "to" is a
// direction except right after a stop word, where it starts an infinitive
// ("how to fix"), and is a stop word itself. A direction word with no word
// after it to mark stays a plain word ("where does it come from"). "vs" is
// not a direction: "python vs go" asks what "go vs python" asks.
var simDirections = map[string]string{
	"to": "to:", "from": "from:", "into": "into:", "onto": "onto:", "than": "than:",
	"towards": "towards:", "toward": "toward:",
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
// turn, each with its scope (a hash of the call's other arguments), the
// round it was first asked in and whether it brought a new fact, and
// answers whether a new query repeats one of them.
//
// Its cost per call stops growing with the turn: a new query is looked up
// exactly, by a scan, among the last queryIndexCap distinct queries, and
// compared by simScore only with the last queryIndexWindow of them, most
// of which the cheap bounds of simScore rule out. A query asked again in
// the same scope is not stored again. Most turns ask a few queries, so the
// entries and results are slices grown from empty, not maps. The zero
// value is an empty index ready to use; an index is not safe for
// concurrent use.
type queryIndex struct {
	entries []queryEntry // a ring of at most queryIndexCap entries
	next    int          // where the next entry goes in the ring
	results []Hash       // the distinct digests of the results recorded so far
	// Past queryIndexWindow entries (or results), maps find them: the
	// index's exact matches and known results cost no scan of a long turn.
	byQuery  map[queryID]int32
	byResult map[Hash]struct{}
}

// queryID is a query in its scope.
type queryID struct {
	scope Hash
	query string
}

// queryEntry is one distinct query, in one scope, of a queryIndex.
type queryEntry struct {
	query string
	scope Hash
	key   *simKey // of query, shared with the turn's window
	round uint64  // the earliest round the query was asked in
	seq   uint64  // the call that asked it last
	stale bool    // the call seq is settled and brought no new fact
}

// ring returns the j-th newest entry, j from 1 to len(x.entries).
func (x *queryIndex) ring(j int) *queryEntry {
	i := x.next - j
	if i < 0 {
		i += len(x.entries)
	}
	return &x.entries[i]
}

// find returns the entry of the query q in scope, or nil.
func (x *queryIndex) find(q string, scope Hash) *queryEntry {
	if x.byQuery != nil {
		if i, ok := x.byQuery[queryID{scope, q}]; ok {
			return &x.entries[i]
		}
		return nil
	}
	for i := range x.entries {
		if e := &x.entries[i]; e.scope == scope && e.query == q {
			return e
		}
	}
	return nil
}

// addKey records the normalized query q, whose key is k, as asked in
// round, in scope, by the call seq, and returns the key it keeps for q, or
// nil. A query asked before in the same scope keeps its place, its key and
// the earlier of its rounds, and waits for the outcome of seq. Queries
// without a word (see querySimilarity) are not recorded: they are similar
// to nothing. A q longer than a normalized query can be is normalized
// first (queryBound), so that the index stays bounded however it is
// misused.
func (x *queryIndex) addKey(q string, k *simKey, scope Hash, round, seq uint64) *simKey {
	q = queryBound(q)
	if e := x.find(q, scope); e != nil {
		e.round, e.seq, e.stale = min(e.round, round), seq, false
		return e.key
	}
	if k.runes == 0 {
		return nil
	}
	e := queryEntry{query: q, scope: scope, key: heldKey(nil, k), round: round, seq: seq}
	i := x.next
	if len(x.entries) < queryIndexCap {
		x.entries = append(x.entries, e)
	} else {
		if x.byQuery != nil {
			old := &x.entries[i]
			delete(x.byQuery, queryID{old.scope, old.query})
		}
		x.entries[i] = e
	}
	x.next = (x.next + 1) % queryIndexCap
	switch {
	case x.byQuery != nil:
		x.byQuery[queryID{scope, q}] = int32(i)
	case len(x.entries) > queryIndexWindow:
		x.byQuery = make(map[queryID]int32, 2*len(x.entries))
		for k := range x.entries {
			x.byQuery[queryID{x.entries[k].scope, x.entries[k].query}] = int32(k)
		}
	}
	return e.key
}

// heldKey returns held when it is not nil, and otherwise a copy of k to
// keep, or nil when k has no word (it is similar to nothing). Each
// distinct query's key is copied once and shared by its holders.
func heldKey(held, k *simKey) *simKey {
	if held != nil || k.runes == 0 {
		return held
	}
	c := *k
	return &c
}

// settle records the outcome of the call seq: whether it failed, and the
// digest of its result. The call brought a new fact if it succeeded with a
// result that no call settled before returned. Until it is settled, a
// query counts as having brought one. The results of calls that asked no
// query the index holds, or whose query another call asked again since,
// are remembered all the same. The index remembers queryIndexCap distinct
// results; past that it starts over, and a result seen before counts as new
// again, which can only delay a firing.
func (x *queryIndex) settle(seq uint64, failed bool, digest Hash) {
	var seen bool
	if x.byResult != nil {
		_, seen = x.byResult[digest]
	} else {
		seen = slices.Contains(x.results, digest)
	}
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
		clear(x.byResult)
	}
	x.results = append(x.results, digest)
	switch {
	case x.byResult != nil:
		x.byResult[digest] = struct{}{}
	case len(x.results) > queryIndexWindow:
		x.byResult = make(map[Hash]struct{}, 2*len(x.results))
		for _, r := range x.results {
			x.byResult[r] = struct{}{}
		}
	}
}

// similarKey reports whether the normalized query q, whose key k the
// caller computed once, repeats a query recorded in the same scope in a
// round before round: one with the same text among the last queryIndexCap
// distinct queries, or one whose score with q (querySimilarity) is at least
// threshold among the last queryIndexWindow. Unless blind is set, only a
// query settled without a new fact counts: a reworded query after one that
// found something is refinement, and so is one that adds a specific term
// to it (refines). Queries of the same round never match:
// they were asked together, as distinct questions. A threshold above 1 or
// NaN matches nothing.
func (x *queryIndex) similarKey(q string, k *simKey, scope Hash, round uint64, threshold float64, blind bool) bool {
	if !(threshold <= 1) || k.runes == 0 {
		return false // a query without a word is similar to nothing
	}
	q = queryBound(q)
	counts := func(e *queryEntry) bool {
		return e.round < round && e.scope == scope && (blind || e.stale)
	}
	if e := x.find(q, scope); e != nil && counts(e) {
		return true // the same query: among the last queryIndexCap
	}
	for j := 1; j <= min(len(x.entries), queryIndexWindow); j++ {
		if e := x.ring(j); counts(e) && simScore(k, e.key, threshold) >= threshold && (blind || !refines(k, e.key)) {
			return true
		}
	}
	return false
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
