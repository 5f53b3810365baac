package canon

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// maskNoise and maskError run a small left-to-right lexer over the text. At
// each lexeme start they try their rules in order; a match is replaced by
// its placeholder, otherwise a word (a run of letters, digits, '_' and
// non-ASCII bytes; maskError stops it before a digit) or a single other byte
// is kept. The noise rules must also end before a non-word byte. Lexing
// never looks back, and no rule except a URL consumes '<' or '>', so a
// placeholder neither matches again nor changes how the text around it
// lexes: both functions are idempotent (FuzzMask checks this).

// Placeholders written in place of masked text.
const (
	maskTime = "<time>"
	maskUUID = "<uuid>"
	maskHex  = "<hex>"
	maskDur  = "<dur>"
	maskURL  = "<url>"
	maskPath = "<path>"
	maskStr  = "<str>"
	maskID   = "<id>"
	maskNum  = "<n>"
)

// Limits of the masking rules.
const (
	maskHexMin    = 16   // digits of a noise hex run
	maskQuoteMax  = 200  // bytes of quoted text masked by maskError
	maskChunk     = 2048 // bytes hashed at a time by the digests
	maskSchemeMax = 32   // bytes of a URL scheme
)

// Noise is what DigestResult masks in a result, so that two tool results
// that differ only by noise digest equal (maskNoise in the tests writes the
// masked text out). Masked are:
//
//   - timestamps with a time part, "2024-05-20T10:00:00Z",
//     "2024-05-20T10:00:00.123+02:00", "2024-05-20 10:00:00" → <time>
//     (a bare date such as 2024-05-20 is content and kept);
//   - clock times with seconds, "10:00:00", "9:05:03.123", optionally
//     followed by a zone as in a timestamp → <time>;
//   - UUIDs, 8-4-4-4-12 hex digits in any case → <uuid>;
//   - runs of 16 or more hex digits forming a whole word, such as commit
//     SHAs and trace ids (long decimal numbers included) → <hex>;
//   - durations: a number, possibly with a fraction, immediately followed by
//     one of the units ns, us, µs, ms, s, m, h, compounded as in "2m3s" or
//     "1h2m3.5s" (a fraction only in the last part), or a number followed by
//     an optional single space and one of ms, s, sec, secs, second, seconds,
//     millisecond, milliseconds, as in "5 seconds" → <dur>.
//
// Each must form whole words: "x10:00:00" and "5min" are kept. Masking is
// idempotent.

// maskError returns the failure text s normalized so that failures that
// differ only by their particulars mask equal: it lower-cases ASCII letters,
// collapses runs of whitespace to one space and trims the ends, applies the
// rules of maskNoise, and also masks:
//
//   - quoted strings, '…', "…" and `…` (from a quote to the next quote of
//     the same kind) whose content is at most 200 bytes → <str>; longer
//     ones are kept;
//   - URLs, a scheme followed by "://" up to the next whitespace → <url>;
//   - paths: tokens of letters, digits and _ - . ~ : + @ % = / \ that
//     contain a '/' or '\', with trailing '.' and ':' left out, such as
//     /usr/lib/x.so, ./a/b.py or C:\x\y → <path>;
//   - ids: tokens of letters, digits, '_' and '-' mixing letters and digits,
//     such as call_HGn16KZh9o, req-42ab or 1a2b3c4d → <id>;
//   - numbers, a run of digits with an optional fraction → <n>.
//
// For example "open /tmp/a.txt: no such file or directory (line 12)" masks
// to "open <path>: no such file or directory (line <n>)". maskError is
// idempotent.
func maskError(s string) string {
	m := maskState{s: s, err: true}
	return string(m.fill(make([]byte, 0, len(s)+8), math.MaxInt))
}

// DigestResult returns the digest of maskNoise(s) (under its own domain
// prefix), computed in a streaming fashion without allocating.
//
// Results need change detection, not collision resistance against an
// adversary, so the digest is a keyed 128-bit non-cryptographic hash (see
// maskSum): equal masked texts digest equal, and different ones collide
// with negligible probability for text not chosen with knowledge of the
// seeds. The seeds are made once per process, so a digest is only
// comparable with digests of the same process, which is all the Tracker
// compares it with; it must never be persisted or shared.
func DigestResult(s string) [16]byte {
	return maskDigest(s, false)
}

// DigestError returns the digest of maskError(s) (under its own domain
// prefix), computed in a streaming fashion without allocating. Like
// DigestResult, it is comparable within one process only.
func DigestError(s string) [16]byte {
	return maskDigest(s, true)
}

// maskSeeds key the result digests (index 0) and the error digests (index
// 1): two seeds per kind, one per 64-bit half. Separate seeds keep the two
// kinds of digest apart. They are made once per process and never change.
var maskSeeds = [2][2]maphash.Seed{
	{maphash.MakeSeed(), maphash.MakeSeed()},
	{maphash.MakeSeed(), maphash.MakeSeed()},
}

// maskDigest hashes the masked form of s, chunk by chunk: a maphash.Hash
// depends only on the concatenation of what is written to it.
func maskDigest(s string, err bool) [16]byte {
	m := maskState{s: s, err: err}
	seeds := &maskSeeds[b2i(err)]
	var h0, h1 maphash.Hash
	h0.SetSeed(seeds[0])
	h1.SetSeed(seeds[1])
	var buf [maskChunk]byte
	for !m.done {
		b := m.fill(buf[:0], len(buf))
		h0.Write(b)
		h1.Write(b)
	}
	var h [16]byte
	binary.LittleEndian.PutUint64(h[:8], h0.Sum64())
	binary.LittleEndian.PutUint64(h[8:], h1.Sum64())
	return h
}

// maskState is the state of the lexer over one text.
type maskState struct {
	s      string
	err    bool   // error mode: maskError rules
	v      int    // s[v:i] is kept text not yet written
	i      int    // next byte to lex
	ph     string // placeholder to write after s[v:i], replacing s[i:skip]
	skip   int
	done   bool
	space  bool // error mode: whitespace is pending
	wrote  bool // error mode: something was written
	noPath int  // error mode: no path token starts before this index
	noID   int  // error mode: no id token starts before this index
	noQ    [3]bool
	sep    int // error mode: index of the next "://" at or after the last URL check, -1 if none, 0 unknown
}

// fill appends masked text to dst until len(dst) reaches about limit or the
// text is done.
func (m *maskState) fill(dst []byte, limit int) []byte {
	for {
		if m.v < m.i {
			if dst = m.drain(dst, limit); m.v < m.i {
				return dst
			}
		}
		if m.ph != "" {
			if limit-len(dst) < len(m.ph)+1 {
				return dst
			}
			if m.space && m.wrote {
				dst = append(dst, ' ')
			}
			m.space, m.wrote = false, true
			dst = append(dst, m.ph...)
			m.ph = ""
			m.i, m.v = m.skip, m.skip
		}
		if m.i >= len(m.s) {
			m.done = true
			return dst
		}
		if m.err {
			m.lexError()
		} else {
			m.lexNoise()
		}
	}
}

// drain writes kept text s[v:i] to dst, up to limit.
func (m *maskState) drain(dst []byte, limit int) []byte {
	if !m.err {
		k := min(m.i-m.v, limit-len(dst))
		dst = append(dst, m.s[m.v:m.v+k]...)
		m.v += k
		return dst
	}
	for m.v < m.i && len(dst)+2 <= limit {
		c := m.s[m.v]
		m.v++
		if maskIsSpace(c) {
			m.space = true
			continue
		}
		if m.space && m.wrote {
			dst = append(dst, ' ')
		}
		m.space, m.wrote = false, true
		dst = append(dst, maskLower(c))
	}
	return dst
}

// lexNoise finds the next noise match from m.i, at word starts: it leaves
// m.i at the match and sets m.ph, or leaves m.i at the end of the text.
// m.i itself is a word start (0, or the end of a match, which is not
// followed by a word byte).
func (m *maskState) lexNoise() {
	s := m.s
	for i := m.i; i < len(s); {
		if !maskIsWord(s[i]) {
			i++
			continue
		}
		if canonIsHex(s[i]) {
			if e, ph := m.noise(i); ph != "" {
				m.i, m.ph, m.skip = i, ph, e
				return
			}
		}
		for i++; i < len(s) && maskIsWord(s[i]); i++ {
		}
	}
	m.i = len(s)
}

// lexError lexes one lexeme at m.i: it either extends the kept text or sets
// m.ph.
func (m *maskState) lexError() {
	s, i := m.s, m.i
	switch {
	case maskIsSpace(s[i]):
		for i++; i < len(s) && maskIsSpace(s[i]); i++ {
		}
		m.i = i
	case maskQuote(s[i]) >= 0:
		m.quoted(i)
	default:
		if ph, e := m.token(i); ph != "" {
			m.ph, m.skip = ph, e
		} else {
			m.i = e
		}
	}
}

// quoted masks the quoted text at s[i] if it is short enough.
func (m *maskState) quoted(i int) {
	s, q := m.s, maskQuote(m.s[i])
	k := -1
	if !m.noQ[q] {
		k = strings.IndexByte(s[i+1:], s[i])
	}
	switch end := i + 1 + k; {
	case k < 0:
		// No closing quote: none of this kind can close later.
		m.noQ[q] = true
		m.i = i + 1
	case maskCollapsedLen(s[i+1:end]) <= maskQuoteMax:
		m.ph, m.skip = maskStr, end+1
	default:
		m.i = end + 1 // kept whole, not masked inside
	}
}

// token lexes the token at s[i] in error mode: a URL, a path, noise, an id
// or a number is masked (its placeholder and its end are returned); else
// the word or the byte is kept (its end is returned).
func (m *maskState) token(i int) (string, int) {
	s, c := m.s, m.s[i]
	if e := m.url(i); e > 0 {
		return maskURL, e
	}
	if i >= m.noPath && maskIsPath(c) {
		if e := m.path(i); e > 0 {
			return maskPath, e
		}
	}
	if !maskIsWord(c) {
		return "", i + 1
	}
	if canonIsHex(c) {
		if e, ph := m.noise(i); ph != "" {
			return ph, e
		}
	}
	if i >= m.noID {
		if e := m.id(i); e > 0 {
			return maskID, e
		}
	}
	if canonIsDigit(c) {
		e := canonDigitsEnd(s, i)
		if e+1 < len(s) && s[e] == '.' && canonIsDigit(s[e+1]) {
			e = canonDigitsEnd(s, e+1)
		}
		return maskNum, e
	}
	return "", maskWordEnd(s, i)
}

// maskWordEnd returns the end of the word without digits at s[i]:
// apostrophes between letters belong to it.
func maskWordEnd(s string, i int) int {
	for i++; i < len(s); i++ {
		if c := s[i]; c == '\'' && i+1 < len(s) && maskIsLetter(s[i+1]) {
			continue
		} else if !maskIsWord(c) || canonIsDigit(c) {
			break
		}
	}
	return i
}

// at returns s[i], lower-cased in error mode, or 0 beyond the end.
func (m *maskState) at(i int) byte {
	if i >= len(m.s) {
		return 0
	}
	c := m.s[i]
	if m.err {
		c = maskLower(c)
	}
	return c
}

// bound reports whether a match may end at i: at the end of the text or
// before a non-word byte.
func (m *maskState) bound(i int) bool {
	return i >= len(m.s) || !maskIsWord(m.s[i])
}

func (m *maskState) digits(i, n int) bool { return m.all(i, n, canonIsDigit) }

func (m *maskState) hexes(i, n int) bool { return m.all(i, n, canonIsHex) }

// all reports whether s[i:i+n] are n bytes of which is reports true.
func (m *maskState) all(i, n int, is func(byte) bool) bool {
	if i+n > len(m.s) {
		return false
	}
	for _, c := range []byte(m.s[i : i+n]) {
		if !is(c) {
			return false
		}
	}
	return true
}

// noise tries the maskNoise rules at the word start i, in order, and
// returns the end of the match and its placeholder, or "" if none matches.
func (m *maskState) noise(i int) (int, string) {
	if e := m.timestamp(i); e > 0 {
		return e, maskTime
	}
	if e := m.uuid(i); e > 0 {
		return e, maskUUID
	}
	if e := m.clock(i, false); e > 0 {
		return e, maskTime
	}
	if e := m.hexRun(i); e > 0 {
		return e, maskHex
	}
	if e := m.duration(i); e > 0 {
		return e, maskDur
	}
	return 0, ""
}

// hexRun matches a run of at least maskHexMin hex digits forming a word.
func (m *maskState) hexRun(i int) int {
	e := i
	for e < len(m.s) && canonIsHex(m.s[e]) {
		e++
	}
	if e-i < maskHexMin || !m.bound(e) {
		return -1
	}
	return e
}

// timestamp matches YYYY-MM-DD[T ]hh:mm:ss[.f][zone] at i.
func (m *maskState) timestamp(i int) int {
	if !m.digits(i, 4) || m.at(i+4) != '-' || !m.digits(i+5, 2) || m.at(i+7) != '-' || !m.digits(i+8, 2) {
		return -1
	}
	if c := m.at(i + 10); c != 't' && c != 'T' && c != ' ' {
		return -1
	}
	return m.clock(i+11, true)
}

// clock matches h:mm:ss[.f][zone] at i (hh if two is set) and returns its
// end. Of the optional fraction and zone it takes the longest choice that
// ends before a non-word byte, or returns -1 if none does: taking a shorter
// choice only when the longer fails keeps masking idempotent whatever
// follows.
func (m *maskState) clock(i int, two bool) int {
	h := i
	for h-i < 2 && canonIsDigit(m.at(h)) {
		h++
	}
	if h == i || two && h-i != 2 || !m.minSec(h) {
		return -1
	}
	secs := h + 6
	if m.at(secs) == '.' && canonIsDigit(m.at(secs+1)) {
		frac := secs + 2
		for canonIsDigit(m.at(frac)) {
			frac++
		}
		if e := m.zoned(frac); e > 0 {
			return e
		}
	}
	return m.zoned(secs)
}

// minSec matches the ":mm:ss" of a clock time at h.
func (m *maskState) minSec(h int) bool {
	return m.at(h) == ':' && m.digits(h+1, 2) && m.at(h+3) == ':' && m.digits(h+4, 2) &&
		m.s[h+1] <= '5' && m.s[h+4] <= '6'
}

// zoned returns the end of a time at e with its optional zone, longest
// first (±hh:mm, ±hhmm, ±hh, Z), or -1 if it cannot end there.
func (m *maskState) zoned(e int) int {
	switch m.at(e) {
	case 'z', 'Z':
		if m.bound(e + 1) {
			return e + 1
		}
	case '+', '-':
		if !m.digits(e+1, 2) {
			break
		}
		if m.at(e+3) == ':' && m.digits(e+4, 2) && m.bound(e+6) {
			return e + 6
		}
		if m.digits(e+3, 2) && m.bound(e+5) {
			return e + 5
		}
		if m.bound(e + 3) {
			return e + 3
		}
	}
	if m.bound(e) {
		return e
	}
	return -1
}

// uuid matches 8-4-4-4-12 hex digits at i.
func (m *maskState) uuid(i int) int {
	for k, n := range [...]int{8, 4, 4, 4, 12} {
		if k > 0 {
			if m.at(i) != '-' {
				return -1
			}
			i++
		}
		if !m.hexes(i, n) {
			return -1
		}
		i += n
	}
	if !m.bound(i) {
		return -1
	}
	return i
}

// duration matches a duration at i and returns its end.
func (m *maskState) duration(i int) int {
	for first := true; ; first = false {
		k := canonDigitsEnd(m.s, i)
		if k == i {
			return -1
		}
		frac := m.at(k) == '.' && canonIsDigit(m.at(k+1))
		if frac {
			k = canonDigitsEnd(m.s, k+1)
		}
		if u := m.unit(k); u > 0 {
			e := k + u
			if !frac && canonIsDigit(m.at(e)) {
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
		return m.spelled(k)
	}
}

// spelled matches an optional space and a spelled-out unit at k.
func (m *maskState) spelled(k int) int {
	if m.at(k) == ' ' {
		k++
	}
	for _, w := range maskUnits {
		if m.hasUnit(k, w) && m.bound(k+len(w)) {
			return k + len(w)
		}
	}
	return -1
}

// The spelled-out duration units, longest first.
var maskUnits = [...]string{"milliseconds", "millisecond", "ms", "seconds", "second", "secs", "sec", "s"}

// The compact duration units, longest first.
var maskCompactUnits = [...]string{"ns", "us", "µs", "μs", "ms", "m", "s", "h"}

// unit returns the length of the longest compact duration unit at k, or 0.
func (m *maskState) unit(k int) int {
	for _, u := range maskCompactUnits {
		if m.hasUnit(k, u) {
			return len(u)
		}
	}
	return 0
}

// hasUnit reports whether the text at i starts with the unit u.
func (m *maskState) hasUnit(i int, u string) bool {
	if i+len(u) > len(m.s) {
		return false
	}
	for j := range len(u) {
		if m.at(i+j) != u[j] {
			return false
		}
	}
	return true
}

// url matches scheme://… up to whitespace at i.
func (m *maskState) url(i int) int {
	if c := m.s[i] | 0x20; c < 'a' || c > 'z' || !m.sepNear(i) {
		return -1
	}
	j := i + 1
	for ; j < len(m.s) && j-i < maskSchemeMax; j++ {
		c := m.at(j)
		if !('a' <= c && c <= 'z' || canonIsDigit(c) || c == '+' || c == '.' || c == '-') {
			break
		}
	}
	if !strings.HasPrefix(m.s[j:], "://") {
		return -1
	}
	e := j + 3
	for e < len(m.s) && !maskIsSpace(m.s[e]) {
		e++
	}
	return e
}

// sepNear reports whether the next "://" is close enough after i to end a
// scheme starting at i. It remembers where that is, so that the text is
// searched once.
func (m *maskState) sepNear(i int) bool {
	if m.sep >= 0 && m.sep <= i {
		if k := strings.Index(m.s[i:], "://"); k >= 0 {
			m.sep = i + k
		} else {
			m.sep = -1
		}
	}
	return m.sep >= 0 && m.sep-i <= maskSchemeMax
}

// path matches a path token at i; if there is none, no path token starts
// before the end of this run of path bytes.
func (m *maskState) path(i int) int {
	j, slash := i, false
	for ; j < len(m.s) && maskIsPath(m.s[j]); j++ {
		if m.s[j] == '/' || m.s[j] == '\\' {
			slash = true
		}
	}
	if !slash {
		m.noPath = j
		return -1
	}
	for m.s[j-1] == '.' || m.s[j-1] == ':' {
		j--
	}
	return j
}

// id matches a token of letters, digits, '_' and '-' that mixes letters and
// digits at i; if there is none, no id starts before the end of the run.
func (m *maskState) id(i int) int {
	j := i
	letter, digit := false, false
	for ; j < len(m.s); j++ {
		switch c := m.s[j]; {
		case canonIsDigit(c):
			digit = true
		case maskIsLetter(c):
			letter = true
		case c != '_' && c != '-':
			goto end
		}
	}
end:
	if letter && digit {
		return j
	}
	m.noID = j
	return -1
}

// maskCollapsedLen returns the length of s with whitespace runs collapsed to
// one byte.
func maskCollapsedLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if maskIsSpace(s[i]) {
			for i+1 < len(s) && maskIsSpace(s[i+1]) {
				i++
			}
		}
		n++
	}
	return n
}

// maskQuote returns the index of the quote c in the set " ' ` or -1.
func maskQuote(c byte) int { return strings.IndexByte("\"'`", c) }

// Byte classes of the masking lexer, as bits of maskClass.
const (
	maskCSpace  = 1 << iota // ASCII whitespace
	maskCLetter             // ASCII letter or non-ASCII byte
	maskCWord               // letter, digit or '_'
	maskCPath               // may occur in a path token
)

// maskClass holds the byte classes of every byte. It is computed once and
// never changes.
var maskClass = func() (t [256]uint8) {
	for i := range t {
		c := byte(i)
		if c == ' ' || '\t' <= c && c <= '\r' {
			t[i] |= maskCSpace
		}
		if 'a' <= c|0x20 && c|0x20 <= 'z' || c >= utf8.RuneSelf {
			t[i] |= maskCLetter | maskCWord | maskCPath
		}
		if canonIsDigit(c) {
			t[i] |= maskCWord | maskCPath
		}
		switch c {
		case '_':
			t[i] |= maskCWord | maskCPath
		case '/', '\\', '.', '-', '~', ':', '+', '@', '%', '=':
			t[i] |= maskCPath
		}
	}
	return t
}()

func maskIsSpace(c byte) bool { return maskClass[c]&maskCSpace != 0 }

func maskIsLetter(c byte) bool { return maskClass[c]&maskCLetter != 0 }

func maskIsWord(c byte) bool { return maskClass[c]&maskCWord != 0 }

func maskIsPath(c byte) bool { return maskClass[c]&maskCPath != 0 }

func maskLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
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
	if a == b {
		return true
	}
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	diff := 0
	for len(x) > 0 && len(y) > 0 && diff <= 2 {
		switch strings.Compare(x[0], y[0]) {
		case 0:
			x, y = x[1:], y[1:]
		case -1:
			x, diff = x[1:], diff+1
		default:
			y, diff = y[1:], diff+1
		}
	}
	return diff+len(x)+len(y) <= 2
}

// ResultSHA is DigestResult with SHA-256 in place of the per-process
// maphash: stable across processes, so that the hook can keep it on disk.
func ResultSHA(s string) [32]byte { return maskSHA(s, false) }

// FailureSHA is DigestError with SHA-256 in place of the per-process
// maphash.
func FailureSHA(s string) [32]byte { return maskSHA(s, true) }

func maskSHA(s string, err bool) [32]byte {
	m := maskState{s: s, err: err}
	h := sha256.New()
	var buf [maskChunk]byte
	for !m.done {
		h.Write(m.fill(buf[:0], len(buf)))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
