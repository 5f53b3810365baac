package toolguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// canonTestSurrogate matches \u escapes of UTF-16 surrogates, which
// encoding/json decodes lossily (lone ones become U+FFFD).
var canonTestSurrogate = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

// canonTestShape reports the nesting depth of the valid JSON data and
// whether any object in it has duplicate keys.
func canonTestShape(data []byte) (depth int, dup bool) {
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // the next string token is a key
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return depth, dup
		}
		if err != nil {
			return depth, true // be conservative
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{obj: v == '{', keys: map[string]bool{}, key: true})
				depth = max(depth, len(stack))
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.obj && top.key {
				if top.keys[v] {
					dup = true
				}
				top.keys[v] = true
				top.key = false
				continue
			}
			if top != nil && top.obj {
				top.key = true
			}
		default:
			if top != nil && top.obj {
				top.key = true
			}
		}
	}
}

func FuzzHashArgs(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{"a":1,"b":[true,false,null]}`, `{"b":{"d":[1,2,{"f":1,"e":2}],"c":"x"},"a":0}`,
		`{"a":1,"a":2}`, `"\u0041\/\n\u00e9\ud83d\ude00"`, `"\ud800"`, `[1,1.0,1e0,10e-1,-0,0.0,1E+2,123456789012345678901234]`,
		`{"key with spaces":"<html>&amp;","\u2028":"\u2029"}`, "\"\xff\xfe\"", "{\"a\":1}\xff", `{"a":1`,
		`[[[[[[[[[[]]]]]]]]]]`, `{"x":{"y":{"z":{}}}}`, `1e99999999999999999999`, `-0.000000000000000000001`,
		` { "cmd" : "ls -la" , "timeout" : 30 , "env" : { "B" : "2" , "A" : "1" } } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		h := hashArgs(data, nil)
		if !bytes.Equal(orig, data) {
			t.Fatal("hashArgs modified its input")
		}
		if h != hashArgs(data, nil) {
			t.Fatal("hashArgs is not deterministic")
		}
		hashArgs(data, []string{"a", "b", ""})
		topLevelString(data, []string{"a", "url"})
		argURL(data)
		appendKeyNames(nil, data)

		form, canonical := canonTestForm(t, data, nil)
		if !json.Valid(data) {
			if len(bytes.TrimSpace(data)) > 0 && canonical {
				t.Fatalf("invalid JSON %q canonicalized to %q", data, form)
			}
			return
		}
		depth, dup := canonTestShape(data)
		if depth > canonMaxDepth {
			if canonical {
				t.Fatalf("too deep but canonicalized")
			}
			return
		}
		if !canonical {
			t.Fatalf("valid JSON %q hashed raw", data)
		}
		// The canonical form is valid JSON, a fixed point, and hashes
		// the same as the payload.
		if !json.Valid([]byte(form)) {
			t.Fatalf("canonical form %q of %q is not valid JSON", form, data)
		}
		if again, _ := canonTestForm(t, []byte(form), nil); again != form {
			t.Fatalf("canonical form not a fixed point: %q -> %q", form, again)
		}
		if hashArgs([]byte(form), nil) != h {
			t.Fatalf("canonical form %q hashes differently from %q", form, data)
		}
		// Re-indenting never changes the hash.
		var indented bytes.Buffer
		if err := json.Indent(&indented, data, "\t", "   "); err != nil {
			t.Fatal(err)
		}
		if hashArgs(indented.Bytes(), nil) != h {
			t.Fatalf("indent changed the hash of %q", data)
		}
		// Nor does a round trip through encoding/json, which sorts keys
		// and re-escapes strings but keeps numbers verbatim with
		// UseNumber, when it is lossless: valid UTF-8, no surrogate
		// escapes, no duplicate keys.
		if dup || !utf8.Valid(data) || canonTestSurrogate.Match(data) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		re, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if hashArgs(re, nil) != h {
			f, _ := canonTestForm(t, re, nil)
			t.Fatalf("re-marshal changed the hash of %q: %q vs %q", data, form, f)
		}
	})
}

func FuzzMask(f *testing.F) {
	for _, s := range []string{
		"", "open /tmp/a.txt: no such file or directory (line 12)",
		"2024-05-20T10:00:00.123+02:00 took 1.23s id 123e4567-e89b-12d3-a456-426614174000",
		"trace 4bf92f3577b34da6a3ce929d0e0e4736 at 10:00:00 in 2m3s, 5 seconds",
		`KeyError: 'user_42' "quoted" ` + "`x`", "GET https://x.org/a?b=1 failed: 503",
		`C:\x\y and ./a/b.py:12: call_HGn16KZh9o req-42ab`, "it's 'a' \"b' c\" d", "  MiXeD\t\nCase  ",
		"2024-05-20 10:00:00 2024-05-20", "1h2m3.5s 1.5h2m 5µs 5μs 5 ms", "<n> <str> <time>", "a1'b' x1\"y\"",
		"\xff\xfe 10:00:00\x00", "'" + string(make([]byte, 250)) + "'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := maskNoise(s)
		if n2 := maskNoise(n); n2 != n {
			t.Fatalf("maskNoise not idempotent: %q -> %q -> %q", s, n, n2)
		}
		e := maskError(s)
		if e2 := maskError(e); e2 != e {
			t.Fatalf("maskError not idempotent: %q -> %q -> %q", s, e, e2)
		}
		if r := refMaskNoise(s); n != r {
			t.Fatalf("maskNoise(%q) = %q, the reference lexer gives %q", s, n, r)
		}
		if r := refMaskError(s); e != r {
			t.Fatalf("maskError(%q) = %q, the reference lexer gives %q", s, e, r)
		}
		if digestResult(s) != maskTestSum(maskPrefixNoise, n) {
			t.Fatalf("digestResult differs from maskNoise for %q", s)
		}
		if digestError(s) != maskTestSum(maskPrefixError, e) {
			t.Fatalf("digestError differs from maskError for %q", s)
		}
	})
}

// The masking lexer as it was before the table-driven rewrite, kept as the
// reference FuzzMask compares the current one with.

// Masking
//
// refMaskNoise and refMaskError run a small left-to-right lexer over the text. At
// each lexeme start they try their rules in order; a match is replaced by
// its placeholder, otherwise a word (a run of letters, digits, '_' and
// non-ASCII bytes; refMaskError stops it before a digit) or a single other byte
// is kept. The noise rules must also end before a non-word byte. Lexing
// never looks back, and no rule except a URL consumes '<' or '>', so a
// placeholder neither matches again nor changes how the text around it
// lexes: both functions are idempotent (FuzzMask checks this).

// refMaskNoise returns s with volatile noise replaced by placeholders, so that
// two tool results that differ only by noise mask equal. Masked are:
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
// Each must form whole words: "x10:00:00" and "5min" are kept. refMaskNoise is
// idempotent. It returns s itself if nothing is masked.
func refMaskNoise(s string) string {
	m := refMaskState{s: s}
	m.lexNoise()
	if m.ph == "" {
		return s
	}
	return string(m.fill(make([]byte, 0, len(s)+8), math.MaxInt))
}

// refMaskError returns the failure text s normalized so that failures that
// differ only by their particulars mask equal: it lower-cases ASCII letters,
// collapses runs of whitespace to one space and trims the ends, applies the
// rules of refMaskNoise, and also masks:
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
// to "open <path>: no such file or directory (line <n>)". refMaskError is
// idempotent.
func refMaskError(s string) string {
	m := refMaskState{s: s, err: true}
	return string(m.fill(make([]byte, 0, len(s)+8), math.MaxInt))
}

// refMaskState is the state of the lexer over one text.
type refMaskState struct {
	s      string
	err    bool   // error mode: refMaskError rules
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
func (m *refMaskState) fill(dst []byte, limit int) []byte {
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
func (m *refMaskState) drain(dst []byte, limit int) []byte {
	if !m.err {
		k := min(m.i-m.v, limit-len(dst))
		dst = append(dst, m.s[m.v:m.v+k]...)
		m.v += k
		return dst
	}
	for m.v < m.i && len(dst)+2 <= limit {
		c := m.s[m.v]
		m.v++
		if refMaskIsSpace(c) {
			m.space = true
			continue
		}
		if m.space && m.wrote {
			dst = append(dst, ' ')
		}
		m.space, m.wrote = false, true
		dst = append(dst, refMaskLower(c))
	}
	return dst
}

// lexNoise scans for the next noise match from m.i. It leaves m.i at the
// match and sets m.ph, or leaves m.i at the end of the text.
func (m *refMaskState) lexNoise() {
	s, i := m.s, m.i
	for i < len(s) {
		c := s[i]
		if !refMaskIsWord(c) {
			i++
			continue
		}
		if canonIsHex(c) {
			if e, ph := m.noise(i); ph != "" {
				m.i, m.ph, m.skip = i, ph, e
				return
			}
		}
		for i++; i < len(s) && refMaskIsWord(s[i]); i++ {
		}
	}
	m.i = len(s)
}

// lexError lexes one lexeme at m.i: it either extends the kept text or sets
// m.ph.
func (m *refMaskState) lexError() {
	s, i := m.s, m.i
	c := s[i]
	if refMaskIsSpace(c) {
		for i++; i < len(s) && refMaskIsSpace(s[i]); i++ {
		}
		m.i = i
		return
	}
	if q := refMaskQuote(c); q >= 0 {
		k := -1
		if !m.noQ[q] {
			k = strings.IndexByte(s[i+1:], c)
		}
		switch end := i + 1 + k; {
		case k < 0:
			// No closing quote: none of this kind can close later.
			m.noQ[q] = true
			m.i = i + 1
		case refMaskCollapsedLen(s[i+1:end]) <= maskQuoteMax:
			m.ph, m.skip = maskStr, end+1
		default:
			m.i = end + 1 // kept whole, not masked inside
		}
		return
	}
	if e := m.url(i); e > 0 {
		m.ph, m.skip = maskURL, e
		return
	}
	if i >= m.noPath && refMaskIsPath(c) {
		if e := m.path(i); e > 0 {
			m.ph, m.skip = maskPath, e
			return
		}
	}
	if !refMaskIsWord(c) {
		m.i = i + 1
		return
	}
	if canonIsHex(c) {
		if e, ph := m.noise(i); ph != "" {
			m.ph, m.skip = ph, e
			return
		}
	}
	if i >= m.noID {
		if e := m.id(i); e > 0 {
			m.ph, m.skip = maskID, e
			return
		}
	}
	if canonIsDigit(c) {
		e := i + 1
		for e < len(s) && canonIsDigit(s[e]) {
			e++
		}
		if e+1 < len(s) && s[e] == '.' && canonIsDigit(s[e+1]) {
			for e += 2; e < len(s) && canonIsDigit(s[e]); e++ {
			}
		}
		m.ph, m.skip = maskNum, e
		return
	}
	// A word without digits; apostrophes between letters belong to it.
	for i++; i < len(s); i++ {
		if c := s[i]; c == '\'' && i+1 < len(s) && refMaskIsLetter(s[i+1]) {
			continue
		} else if !refMaskIsWord(c) || canonIsDigit(c) {
			break
		}
	}
	m.i = i
}

// at returns s[i], lower-cased in error mode, or 0 beyond the end.
func (m *refMaskState) at(i int) byte {
	if i >= len(m.s) {
		return 0
	}
	c := m.s[i]
	if m.err {
		c = refMaskLower(c)
	}
	return c
}

// bound reports whether a match may end at i: at the end of the text or
// before a non-word byte.
func (m *refMaskState) bound(i int) bool {
	return i >= len(m.s) || !refMaskIsWord(m.s[i])
}

// digits reports whether s[i:i+n] are n decimal digits.
func (m *refMaskState) digits(i, n int) bool {
	if i+n > len(m.s) {
		return false
	}
	for _, c := range []byte(m.s[i : i+n]) {
		if !canonIsDigit(c) {
			return false
		}
	}
	return true
}

// hexes reports whether s[i:i+n] are n hexadecimal digits.
func (m *refMaskState) hexes(i, n int) bool {
	if i+n > len(m.s) {
		return false
	}
	for _, c := range []byte(m.s[i : i+n]) {
		if !canonIsHex(c) {
			return false
		}
	}
	return true
}

// noise tries the refMaskNoise rules at the word start i (a hex digit) and
// returns the end of the match and its placeholder, or "" if none matches.
// The length of the hex run at i and the byte after it select the rules
// that can match at all.
func (m *refMaskState) noise(i int) (int, string) {
	e := i
	for e < len(m.s) && canonIsHex(m.s[e]) {
		e++
	}
	run, next := e-i, m.at(e)
	digit := canonIsDigit(m.s[i])
	switch {
	case next == '-':
		if run == 4 && digit {
			if e := m.timestamp(i); e > 0 {
				return e, maskTime
			}
		}
		if run == 8 {
			if e := m.uuid(i); e > 0 {
				return e, maskUUID
			}
		}
	case next == ':':
		if run <= 2 && digit {
			if e := m.clock(i, false); e > 0 {
				return e, maskTime
			}
		}
	}
	if run >= maskHexMin && m.bound(e) {
		return e, maskHex
	}
	if digit {
		if e := m.duration(i); e > 0 {
			return e, maskDur
		}
	}
	return 0, ""
}

// timestamp matches YYYY-MM-DD[T ]hh:mm:ss[.f][zone] at i.
func (m *refMaskState) timestamp(i int) int {
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
func (m *refMaskState) clock(i int, two bool) int {
	h := i
	for h-i < 2 && canonIsDigit(m.at(h)) {
		h++
	}
	if h == i || two && h-i != 2 {
		return -1
	}
	if m.at(h) != ':' || !m.digits(h+1, 2) || m.at(h+3) != ':' || !m.digits(h+4, 2) ||
		m.s[h+1] > '5' || m.s[h+4] > '6' {
		return -1
	}
	secs := h + 6
	frac := -1
	if m.at(secs) == '.' && canonIsDigit(m.at(secs+1)) {
		for frac = secs + 2; canonIsDigit(m.at(frac)); frac++ {
		}
	}
	for _, e := range [...]int{frac, secs} {
		if e < 0 {
			continue
		}
		// Zones, longest first: ±hh:mm, ±hhmm, ±hh, Z.
		switch m.at(e) {
		case 'z', 'Z':
			if m.bound(e + 1) {
				return e + 1
			}
		case '+', '-':
			if m.digits(e+1, 2) {
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
		}
		if m.bound(e) {
			return e
		}
	}
	return -1
}

// uuid matches 8-4-4-4-12 hex digits at i.
func (m *refMaskState) uuid(i int) int {
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
func (m *refMaskState) duration(i int) int {
	for first := true; ; first = false {
		k := i
		for canonIsDigit(m.at(k)) {
			k++
		}
		if k == i {
			return -1
		}
		frac := false
		if m.at(k) == '.' && canonIsDigit(m.at(k+1)) {
			frac = true
			for k += 2; canonIsDigit(m.at(k)); k++ {
			}
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
		if m.at(k) == ' ' {
			k++
		}
		var words [5]string
		switch m.at(k) {
		case 'm':
			words = [5]string{"milliseconds", "millisecond", "ms"}
		case 's':
			words = [5]string{"seconds", "second", "secs", "sec", "s"}
		}
		for _, w := range words {
			if w != "" && m.hasUnit(k, w) && m.bound(k+len(w)) {
				return k + len(w)
			}
		}
		return -1
	}
}

// unit returns the length of the longest compact duration unit at k (ns, us,
// µs, μs, ms, s, m, h), or 0.
func (m *refMaskState) unit(k int) int {
	switch c := m.at(k); c {
	case 'n', 'u':
		if m.at(k+1) == 's' {
			return 2
		}
	case 0xC2, 0xCE: // µ (U+00B5) and μ (U+03BC)
		if (c == 0xC2 && m.at(k+1) == 0xB5 || c == 0xCE && m.at(k+1) == 0xBC) && m.at(k+2) == 's' {
			return 3
		}
	case 'm':
		if m.at(k+1) == 's' {
			return 2
		}
		return 1
	case 's', 'h':
		return 1
	}
	return 0
}

// hasUnit reports whether the text at i starts with the unit u.
func (m *refMaskState) hasUnit(i int, u string) bool {
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
func (m *refMaskState) url(i int) int {
	if !refMaskIsLetter(m.s[i]) || m.s[i] >= utf8.RuneSelf {
		return -1
	}
	if m.sep >= 0 && m.sep <= i {
		if k := strings.Index(m.s[i:], "://"); k >= 0 {
			m.sep = i + k
		} else {
			m.sep = -1
		}
	}
	if m.sep < 0 || m.sep-i > maskSchemeMax {
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
	for e < len(m.s) && !refMaskIsSpace(m.s[e]) {
		e++
	}
	return e
}

// path matches a path token at i; if there is none, no path token starts
// before the end of this run of path bytes.
func (m *refMaskState) path(i int) int {
	j, slash := i, false
	for ; j < len(m.s) && refMaskIsPath(m.s[j]); j++ {
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
func (m *refMaskState) id(i int) int {
	j := i
	letter, digit := false, false
	for ; j < len(m.s); j++ {
		switch c := m.s[j]; {
		case canonIsDigit(c):
			digit = true
		case refMaskIsLetter(c):
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

// refMaskCollapsedLen returns the length of s with whitespace runs collapsed to
// one byte.
func refMaskCollapsedLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if refMaskIsSpace(s[i]) {
			for i+1 < len(s) && refMaskIsSpace(s[i+1]) {
				i++
			}
		}
		n++
	}
	return n
}

// refMaskQuote returns the index of the quote c in the set " ' ` or -1.
func refMaskQuote(c byte) int {
	switch c {
	case '"':
		return 0
	case '\'':
		return 1
	case '`':
		return 2
	}
	return -1
}

// refMaskIsSpace reports whether c is ASCII whitespace.
func refMaskIsSpace(c byte) bool {
	return c == ' ' || '\t' <= c && c <= '\r'
}

// refMaskIsLetter reports whether c is an ASCII letter or a non-ASCII byte.
func refMaskIsLetter(c byte) bool {
	return 'a' <= c|0x20 && c|0x20 <= 'z' || c >= utf8.RuneSelf
}

// refMaskIsWord reports whether c is a word byte: a letter, digit or '_'.
func refMaskIsWord(c byte) bool {
	return refMaskIsLetter(c) || canonIsDigit(c) || c == '_'
}

// refMaskIsPath reports whether c may occur in a path token.
func refMaskIsPath(c byte) bool {
	switch c {
	case '/', '\\', '.', '-', '~', ':', '+', '@', '%', '=':
		return true
	}
	return refMaskIsWord(c)
}

// refMaskLower lower-cases an ASCII letter.
func refMaskLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
