package canon

import (
	"encoding/binary"
	"hash/maphash"
	"strings"
	"unicode/utf8"
)

// Limits of the masking rules.
const (
	maskHexMin    = 16  // digits of a noise hex run
	maskQuoteMax  = 200 // bytes of quoted text masked by maskError
	maskSchemeMax = 32  // bytes of a URL scheme
)

// maskError returns the failure text s masked by the error rules (Mask), so
// that failures that differ only by their particulars mask equal.
func maskError(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	Mask(s, true, func(p string) { b.WriteString(p) })
	return b.String()
}

// DigestResult returns a 128-bit digest of s with its noise masked, computed without
// allocating. It is keyed per process (docs/concepts.md, "Masking"): comparable only with
// digests of the same process, never to be persisted or shared.
func DigestResult(s string) [16]byte {
	return maskDigest(s, false)
}

// DigestError is DigestResult of maskError(s) (keyed apart), comparable within one process
// only.
func DigestError(s string) [16]byte {
	return maskDigest(s, true)
}

// maskSeeds key the result digests (index 0) and the error digests (index
// 1), apart: one seed per 64-bit half, made once per process.
var maskSeeds = [2][2]maphash.Seed{
	{maphash.MakeSeed(), maphash.MakeSeed()},
	{maphash.MakeSeed(), maphash.MakeSeed()},
}

// maskDigest hashes the masked form of s piece by piece: a maphash.Hash
// depends only on the concatenation of what is written to it.
func maskDigest(s string, err bool) [16]byte {
	var h0, h1 maphash.Hash
	h0.SetSeed(maskSeeds[b2i(err)][0])
	h1.SetSeed(maskSeeds[b2i(err)][1])
	Mask(s, err, func(p string) {
		h0.WriteString(p)
		h1.WriteString(p)
	})
	var h [16]byte
	binary.LittleEndian.PutUint64(h[:8], h0.Sum64())
	binary.LittleEndian.PutUint64(h[8:], h1.Sum64())
	return h
}

// masker is the state of the lexer over one text.
type masker struct {
	s      string
	err    bool    // the error rules (maskError), else the noise rules
	noPath int     // error rules: no path token starts before this index
	noID   int     // error rules: no id token starts before this index
	noQ    [3]bool // error rules: no closing quote of this kind (maskQuote) follows
}

// Mask writes the masked form of s to out, in order and in non-empty pieces, under the noise
// rules (what DigestResult hashes), or the error rules if err is set (DigestError, maskError).
// The form is the same in every process: cmd/toolguard's hook keeps its SHA-256 on disk. How
// it lexes, and why masking is idempotent (FuzzMask): docs/concepts.md, "Masking".
func Mask(s string, err bool, out func(string)) {
	if err {
		// Lower-case ASCII letters, collapse runs of whitespace to one space
		// and trim the ends: the placeholders pass unchanged.
		raw, space, wrote := out, false, false
		out = func(t string) {
			for e := 0; t != ""; t = t[e:] {
				if e, _ = maskSpan(t, 0, maskSpace); e > 0 {
					space = true
					continue
				}
				if space && wrote {
					raw(" ")
				}
				space, wrote, e = false, true, 1
				if c := t[0]; maskIs(c, maskUpper) {
					raw("abcdefghijklmnopqrstuvwxyz"[c-'A' : c-'A'+1])
					continue
				}
				for e < len(t) && !maskIs(t[e], maskSpace|maskUpper) {
					e++
				}
				raw(t[:e])
			}
		}
	}
	m := masker{s: s, err: err}
	m.lex(out)
}

// lex writes the masked form of m.s to out.
func (m *masker) lex(out func(string)) {
	s, err, kept := m.s, m.err, 0 // s[kept:i] is kept, not yet written
	for i := 0; i < len(s); {
		ph, e := "", i+1
		switch c := s[i]; {
		case err:
			ph, e = m.lexError(i)
		case maskIs(c, maskHex): // under the noise rules, i starts a word
			if ph, e = m.rule(i); ph == "" {
				e, _ = maskSpan(s, i, maskWord)
			}
		case maskIs(c, maskWord):
			e, _ = maskSpan(s, i, maskWord)
		}
		if ph != "" {
			if i > kept {
				out(s[kept:i])
			}
			out(ph)
			kept = e
		}
		i = e
	}
	if kept < len(s) {
		out(s[kept:])
	}
}

// lexError returns the placeholder and the end of a match of the error
// rules at i, or "" and the end of the lexeme kept at i.
func (m *masker) lexError(i int) (string, int) {
	s, c := m.s, m.s[i]
	switch {
	case maskIs(c, maskSpace):
		e, _ := maskSpan(s, i, maskSpace)
		return "", e
	case maskQuote(c) >= 0:
		return m.quoted(i)
	}
	if e := m.url(i); e > i {
		return "<url>", e
	}
	if e := m.run(i, &m.noPath, maskPath, maskSlash); e > i { // a path token
		return "<path>", i + len(strings.TrimRight(s[i:e], ".:"))
	}
	if ph, e := m.rule(i); ph != "" || !maskIs(c, maskWord) {
		return ph, max(e, i+1)
	}
	if e := m.run(i, &m.noID, maskID, maskLetter|maskDigit); e > i { // an id token
		return "<id>", e
	}
	if e := m.number(i); e > i {
		return "<n>", e
	}
	// A word without digits: apostrophes between letters belong to it.
	for i++; i < len(s); i++ {
		if s[i] == '\'' && maskIs(m.at(i+1), maskLetter) {
			continue
		}
		if !maskIs(s[i], maskWord) || maskIs(s[i], maskDigit) {
			break
		}
	}
	return "", i
}

// rule returns the placeholder and the end of the first of the noise rules
// that matches at i, or "" and i if none does; the error rules try theirs
// around them (lexError). docs/concepts.md, "Masking", lists the rules.
func (m *masker) rule(i int) (string, int) {
	// A text matching one of the noise rules matches no other, but for a
	// hex run and a duration (the hex run wins); only a UUID and a hex run
	// may start with a letter.
	if e := m.match(i, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"); e > i && m.bound(e) {
		return "<uuid>", e
	}
	if e, _ := maskSpan(m.s, i, maskHex); e-i >= maskHexMin && m.bound(e) {
		return "<hex>", e
	}
	if maskIs(m.s[i], maskDigit) {
		if e := max(m.timestamp(i), m.clock(i)); e > i {
			return "<time>", e
		}
		if e := m.duration(i); e > i {
			return "<dur>", e
		}
	}
	return "", i
}

// quoted returns <str> and the end of the quoted text at s[i] if it is
// short enough, else "" and the end of what is kept.
func (m *masker) quoted(i int) (string, int) {
	s, q := m.s, maskQuote(m.s[i])
	k := -1
	if !m.noQ[q] {
		k = strings.IndexByte(s[i+1:], s[i])
	}
	switch end := i + 1 + k; {
	case k < 0:
		// No closing quote: none of this kind can close later.
		m.noQ[q] = true
		return "", i + 1
	case maskCollapsedLen(s[i+1:end]) <= maskQuoteMax:
		return "<str>", end + 1
	default:
		return "", end + 1 // kept whole, not masked inside
	}
}

// at returns s[i], lower-cased under the error rules, or 0 beyond the end.
func (m *masker) at(i int) byte {
	if i >= len(m.s) {
		return 0
	}
	if c := m.s[i]; !m.err || c < 'A' || c > 'Z' {
		return c
	}
	return m.s[i] + 'a' - 'A'
}

// bound reports whether a match may end at e (<= len(s)): at the end of the
// text or before a non-word byte.
func (m *masker) bound(e int) bool {
	return e == len(m.s) || !maskIs(m.s[e], maskWord)
}

// match returns the end of the pattern p matched at i, or -1. In p, '0'
// stands for a decimal digit and 'x' for a hex digit; other bytes stand for
// themselves (see at).
func (m *masker) match(i int, p string) int {
	for j := range len(p) { // beyond the end, at's 0 matches nothing
		if c := m.at(i + j); !(c == p[j] && p[j] != 'x' || p[j] == '0' && maskIs(c, maskDigit) ||
			p[j] == 'x' && maskIs(c, maskHex)) {
			return -1
		}
	}
	return i + len(p)
}

// first returns the end of the first of the patterns matched at i (bounded
// if bounded is set), or -1. The patterns' first bytes stand for themselves.
func (m *masker) first(i int, pats []string, bounded bool) int {
	c := m.at(i)
	for _, p := range pats {
		if p != "" && p[0] != c {
			continue
		}
		if e := m.match(i, p); e > 0 && (!bounded || m.bound(e)) {
			return e
		}
	}
	return -1
}

// The time zones, and the duration units: the compact ones, which
// compound, and the spelled-out ones; each longest first.
var (
	maskZones        = []string{"+00:00", "+0000", "+00", "-00:00", "-0000", "-00", "z", "Z", ""}
	maskCompactUnits = []string{"ns", "us", "µs", "μs", "ms", "m", "s", "h"}
	maskUnits        = []string{"milliseconds", "millisecond", "ms", "seconds", "second", "secs",
		"sec", "s"}
)

// timestamp matches YYYY-MM-DD[T ]hh:mm:ss[.f][zone] at i.
func (m *masker) timestamp(i int) int {
	e := m.match(i, "0000-00-00")
	if e < 0 || strings.IndexByte("tT ", m.at(e)) < 0 || m.match(e+1, "00") < 0 {
		return -1
	}
	return m.clock(e + 1)
}

// clock matches h:mm:ss[.f][zone] or hh:mm:ss[.f][zone] at i and returns
// its end. Of the optional fraction and zone it takes the longest choice
// that ends before a non-word byte, or returns -1 if none does: taking a
// shorter choice only when the longer fails keeps masking idempotent
// whatever follows.
func (m *masker) clock(i int) int {
	h := min(canonDigitsEnd(m.s, i), i+2)
	if h == i || m.match(h, ":00:00") < 0 || m.s[h+1] > '5' || m.s[h+4] > '6' {
		return -1
	}
	secs := h + 6
	if m.match(secs, ".0") > 0 {
		if e := m.first(canonDigitsEnd(m.s, secs+1), maskZones, true); e > 0 {
			return e
		}
	}
	return m.first(secs, maskZones, true)
}

// duration matches a duration at i and returns its end.
func (m *masker) duration(i int) int {
	for first := true; ; first = false {
		k := m.number(i)
		if k == i {
			return -1
		}
		frac := k > canonDigitsEnd(m.s, i)
		if e := m.first(k, maskCompactUnits, false); e > 0 {
			if !frac && maskIs(m.at(e), maskDigit) {
				i = e // a compound duration continues
				continue
			}
			if m.bound(e) {
				return e
			}
		}
		if !first {
			return -1
		}
		if m.at(k) == ' ' {
			k++
		}
		return m.first(k, maskUnits, true)
	}
}

// number returns the end of the digits at i with their optional fraction,
// or i if there are none.
func (m *masker) number(i int) int {
	e := canonDigitsEnd(m.s, i)
	if e > i && m.at(e) == '.' && m.match(e, ".0") > 0 {
		e = canonDigitsEnd(m.s, e+1)
	}
	return e
}

// url matches scheme://… up to whitespace at i.
func (m *masker) url(i int) int {
	j, _ := maskSpan(m.s[:min(len(m.s), i+maskSchemeMax)], i, maskScheme)
	if c := m.s[i] | 0x20; c < 'a' || c > 'z' || !strings.HasPrefix(m.s[j:], "://") {
		return -1
	}
	if k := strings.IndexAny(m.s[j:], " \t\n\v\f\r"); k >= 0 {
		return j + k
	}
	return len(m.s)
}

// run returns the end of the run of bytes in the classes at i if the run has
// bytes of every class in want, else -1, and then no such run starts before
// its end: *no moves there.
func (m *masker) run(i int, no *int, classes, want uint16) int {
	if i < *no {
		return -1
	}
	e, seen := maskSpan(m.s, i, classes)
	if seen&want != want {
		*no, e = e, -1
	}
	return e
}

// maskCollapsedLen returns the length of s with whitespace runs collapsed to
// one byte.
func maskCollapsedLen(s string) int {
	n := len(s)
	for i := 1; i < len(s); i++ {
		if maskIs(s[i], maskSpace) && maskIs(s[i-1], maskSpace) {
			n--
		}
	}
	return n
}

// maskQuote returns the index of the quote c in the set " ' ` or -1.
func maskQuote(c byte) int { return strings.IndexByte("\"'`", c) }

// Byte classes of the masking lexer, as bits of maskClass.
const (
	maskSpace  = 1 << iota // ASCII whitespace
	maskUpper              // ASCII upper-case letter
	maskLetter             // ASCII letter or non-ASCII byte
	maskDigit              // decimal digit
	maskHex                // hex digit
	maskWord               // letter, digit or '_'
	maskID                 // in an id token: a word byte or '-'
	maskPath               // in a path token: a word byte or / \ . - ~ : + @ % =
	maskSlash              // '/' or '\'
	maskScheme             // in a URL scheme: an ASCII letter, a digit, '+', '.' or '-'
)

// maskClass holds the classes of every byte. It never changes.
var maskClass = func() (t [256]uint16) {
	for i := range t {
		c := byte(i)
		letter := 'a' <= c|0x20 && c|0x20 <= 'z' || c >= utf8.RuneSelf
		word := letter || canonIsDigit(c) || c == '_'
		for bit, in := range [...]bool{ // in the order of the classes
			c == ' ' || '\t' <= c && c <= '\r', 'A' <= c && c <= 'Z', letter, canonIsDigit(c),
			canonIsHex(c), word, word || c == '-', word || strings.IndexByte(`/\.-~:+@%=`, c) >= 0,
			c == '/' || c == '\\',
			c < utf8.RuneSelf && (word && c != '_' || strings.IndexByte("+.-", c) >= 0),
		} {
			t[i] |= uint16(b2i(in)) << bit
		}
	}
	return t
}()

// maskIs reports whether c is in one of the classes.
func maskIs(c byte, classes uint16) bool { return maskClass[c]&classes != 0 }

// maskSpan returns the end of the run of bytes in the classes at s[i], and
// the classes of the bytes in it.
func maskSpan(s string, i int, classes uint16) (int, uint16) {
	var seen uint16
	for ; i < len(s) && maskIs(s[i], classes); i++ {
		seen |= maskClass[s[i]]
	}
	return i, seen
}

// ShapeMax is the most bytes of an argument shape (Args.Shape).
const ShapeMax = 1024

// cutShape cuts s to at most ShapeMax bytes, on a rune boundary.
func cutShape(s string) string {
	if len(s) <= ShapeMax {
		return s
	}
	s = s[:ShapeMax]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// Tweaked reports whether two argument shapes are one call Tweaked: the
// same words but for at most two — a flag added or dropped, one word
// changed ("npm test" and "npm run test", "make -j4" and "make -B"). The
// words are compared as multisets, split at white space.
func Tweaked(a, b string) bool {
	n := map[string]int{}
	for _, w := range strings.Fields(a) {
		n[w]++
	}
	for _, w := range strings.Fields(b) {
		n[w]--
	}
	diff := 0
	for _, k := range n {
		diff += max(k, -k)
	}
	return diff <= 2
}
