// Package canon is the core's one scanner of a call's arguments and its
// masking of results and failures: the canonical form and hash of the
// arguments, the members the rules read, and the masked text the rules
// compare. The root package's rules use it, and so does the hook of
// cmd/toolguard for the stand-ins it keeps in place of raw arguments and
// results, so that both compare exactly the same things. Nothing here is
// part of the library's public surface.
package canon

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"hash"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Domain prefixes of argument hashes: they differ within their common
// length, so a canonical payload never hashes like a raw one.
const (
	canonPrefixJSON = "toolguard:j1\x00"
	canonPrefixRaw  = "toolguard:r1\x00"
)

// Bounds of the argument canonicalizer. Payloads beyond them are hashed as
// raw bytes (docs/concepts.md, "How arguments are hashed").
const (
	canonMaxDepth = 512      // maximum nesting of arrays and objects
	canonMaxBytes = 64 << 20 // maximum payload size in bytes
	canonNumMax   = 21       // integers with up to this many digits are written without exponent
	canonChunk    = 8192     // the canonical form is hashed in pieces of this size
)

// Args is one scan of a call's arguments. Scan validates them and lists
// every object with its members' key positions in key order; Hash then
// streams the canonical form into SHA-256, and the methods of args.go read
// the top-level members. The canonical form is never held whole.
type Args struct {
	in     []byte
	ok     bool       // valid JSON within canonMaxBytes and canonMaxDepth
	inf    bool       // Shape met a number out of float64's range
	objs   []canonObj // the objects, in the order they open
	keys   []int32    // their members' key positions, each object's in key order
	open   []int32    // key positions of the members of the objects being scanned
	ka, kb []byte     // escaped keys decoded to be compared

	ignore []string // top-level keys Hash drops
	h      hash.Hash
	sum    [sha256.Size]byte
	buf    []byte     // canonical bytes not hashed yet; the shape being written
	num    []byte     // the canonical form of a number
	mat    int        // > 0: write to vals instead, to order duplicate keys
	vals   []byte     // values of duplicate keys
	spans  [][2]int32 // their spans in vals, while they are ordered
}

// canonObj is an object: the position of its '{', and its members' key
// positions, keys[off:off+n].
type canonObj struct{ start, off, n int32 }

// Clear drops the references c holds to a payload and returns the bytes of
// scratch space it keeps for the next.
func (c *Args) Clear() int {
	c.in, c.ignore = nil, nil
	return cap(c.buf) + cap(c.num) + cap(c.vals) + cap(c.ka) + cap(c.kb) + 8*cap(c.spans) +
		12*cap(c.objs) + 4*cap(c.keys) + 4*cap(c.open)
}

// Scan validates the payload in and lists its objects. c.ok reports
// whether in is valid JSON within the bounds (white space only is valid:
// no arguments).
func (c *Args) Scan(in []byte) {
	c.in, c.ok = in, false
	c.open, c.keys, c.objs = c.open[:0], c.keys[:0], c.objs[:0]
	if i := SkipWS(in, 0); len(in) <= canonMaxBytes {
		c.ok = i == len(in) || SkipWS(in, c.scanValue(i, 0)) == len(in)
	}
}

// Hash returns the hash of the scanned payload without the top-level
// members whose key is in ignore (docs/concepts.md, "How arguments are hashed").
func (c *Args) Hash(ignore []string) [16]byte {
	if c.h == nil {
		c.h = sha256.New()
	}
	c.h.Reset()
	c.buf, c.ignore = c.buf[:0], ignore
	switch i := SkipWS(c.in, 0); {
	case !c.ok:
		c.write([]byte(canonPrefixRaw))
		c.write(c.in)
	case i == len(c.in) || c.in[i] == 'n':
		c.write([]byte(canonPrefixJSON + "{}")) // no arguments: nothing or null
	default:
		c.write([]byte(canonPrefixJSON))
		c.value(i)
	}
	c.h.Write(c.buf)
	return [16]byte(c.h.Sum(c.sum[:0]))
}

// scanValue validates the value at in[i:] (after white space) inside
// depth arrays and objects, and returns the index after it, or -1.
func (c *Args) scanValue(i, depth int) int {
	switch i = SkipWS(c.in, i); canonAt(c.in, i) {
	case '{', '[':
		return c.scanContainer(i, depth+1)
	case '"':
		return ScanString(c.in, i)
	case 't', 'f', 'n':
		return canonScanLiteral(c.in, i)
	}
	return canonScanNumber(c.in, i) // -1 at the end too, or at a byte no value starts with
}

// scanContainer is scanValue of the array or object at in[i], the
// depth-th container. An object's key positions are kept in open while its
// members are scanned, then listed in key order.
func (c *Args) scanContainer(i, depth int) int {
	in, obj, base, o := c.in, c.in[i] == '{', len(c.open), len(c.objs)
	closer := in[i] + 2 // '[' + 2 is ']', '{' + 2 is '}'
	if depth > canonMaxDepth {
		return -1
	}
	if obj {
		c.objs = append(canonGrow(c.objs, 1), canonObj{start: int32(i)})
	}
	for first := true; ; first = false {
		if i = SkipWS(in, i+1); first && canonAt(in, i) == closer {
			break
		}
		if obj {
			if canonAt(in, i) != '"' {
				return -1
			}
			c.open = append(canonGrow(c.open, 1), int32(i))
			if i = SkipWS(in, ScanString(in, i)); canonAt(in, i) != ':' {
				return -1
			}
			i++
		}
		if i = SkipWS(in, c.scanValue(i, depth)); canonAt(in, i) != ',' {
			break
		}
	}
	if canonAt(in, i) != closer {
		return -1
	}
	if obj {
		c.list(o, base)
	}
	return i + 1
}

// list sorts the key positions open[base:] of objs[o] into keys.
func (c *Args) list(o, base int) {
	n := len(c.open) - base
	if base == 0 && len(c.keys) == 0 {
		// The outermost object alone: its keys stay, saving the longest copy.
		c.keys, c.open = c.open, c.keys
	} else {
		c.keys = append(canonGrow(c.keys, n), c.open[base:]...)
	}
	slices.SortFunc(c.keys[len(c.keys)-n:], c.cmpKeys)
	c.objs[o].off, c.objs[o].n = int32(len(c.keys)-n), int32(n)
	c.open = c.open[:base]
}

// members returns the key positions of the object at in[i], in key order.
func (c *Args) members(i int) []int32 {
	k, _ := slices.BinarySearchFunc(c.objs, int32(i), func(o canonObj, start int32) int {
		return cmp.Compare(o.start, start)
	})
	o := c.objs[k]
	return c.keys[o.off : o.off+o.n]
}

// value writes the canonical form of the value at in[i]; it returns its end.
func (c *Args) value(i int) int {
	in := c.in
	switch in[i] {
	case '{':
		return c.object(i)
	case '[':
		c.byte('[')
		for i = SkipWS(in, i+1); in[i] != ']'; {
			if i = SkipWS(in, c.value(i)); in[i] == ',' {
				c.byte(',')
				i = SkipWS(in, i+1)
			}
		}
		c.byte(']')
		return i + 1
	case '"':
		return c.str(i)
	case 't', 'f', 'n':
		e := canonScanLiteral(in, i)
		c.write(in[i:e])
		return e
	}
	e := canonScanNumber(in, i)
	c.num = canonAppendNumber(c.num[:0], in[i:e])
	c.write(c.num)
	return e
}

// object is value for the object at in[i]: its members in key order,
// without the ignored keys at the top level (the end returned is then wrong
// if the last member is ignored; it is not used).
func (c *Args) object(i int) int {
	ks := c.members(i)
	drop := len(c.ignore) > 0 && i == SkipWS(c.in, 0)
	c.byte('{')
	end, wrote := i+1, false // end: of the last value in the payload
	for a, b := 0, 0; a < len(ks); a = b {
		if b = c.keyRun(ks, a); drop && c.ignored(ks[a], c.ignore) {
			continue
		}
		if wrote {
			c.byte(',')
		}
		wrote = true
		end = max(end, c.run(ks[a:b]))
	}
	c.byte('}')
	return SkipWS(c.in, end) + 1
}

// keyRun returns the end of the run of equal keys ks[a:] starts.
func (c *Args) keyRun(ks []int32, a int) int {
	b := a + 1
	for b < len(ks) && c.cmpKeys(ks[a], ks[b]) == 0 {
		b++
	}
	return b
}

// ignored reports whether the key at in[k] is one of ignore.
func (c *Args) ignored(k int32, ignore []string) bool {
	return slices.ContainsFunc(ignore, func(s string) bool { return c.keyIs(k, s) })
}

// valueOf returns the position of the value of the key at in[k].
func (c *Args) valueOf(k int32) int {
	return SkipWS(c.in, SkipWS(c.in, ScanString(c.in, int(k)))+1)
}

// run writes the members, `"key":value`, whose keys, at the positions ks,
// are equal, duplicates ordered by their canonical values: these are
// written to vals first, to be compared, their spans to spans; both are
// truncated back when done, so nested duplicates share them. It returns
// the index after the value that ends last in the payload.
func (c *Args) run(ks []int32) int {
	if len(ks) == 1 {
		c.str(int(ks[0]))
		c.byte(':')
		return c.value(c.valueOf(ks[0]))
	}
	v0, s0, end := len(c.vals), len(c.spans), 0
	c.mat++
	for _, k := range ks {
		lo := len(c.vals)
		end = max(end, c.value(c.valueOf(k)))
		c.spans = append(canonGrow(c.spans, 1), [2]int32{int32(lo), int32(len(c.vals))})
	}
	c.mat--
	spans := c.spans[s0:]
	slices.SortFunc(spans, func(a, b [2]int32) int {
		return bytes.Compare(c.vals[a[0]:a[1]], c.vals[b[0]:b[1]])
	})
	v1 := len(c.vals)
	for n, sp := range spans {
		if n > 0 {
			c.byte(',')
		}
		c.str(int(ks[0]))
		c.byte(':')
		c.write(c.vals[sp[0]:sp[1]])
	}
	c.spans = c.spans[:s0]
	// Nested, the members went to vals too: move them over the values.
	c.vals = append(c.vals[:v0], c.vals[v1:]...)
	return end
}

// str is value for the valid string at in[i]: escapes decoded, then
// written as canonAppendEscaped writes them.
func (c *Args) str(i int) int {
	in := c.in
	c.byte('"')
	for j := i + 1; ; {
		k := j
		for in[k] != '"' && in[k] != '\\' {
			k++
		}
		c.write(in[j:k])
		if in[k] == '"' {
			c.byte('"')
			return k + 1
		}
		var r rune
		r, j = canonDecodeEscape(in, k)
		var tmp [8]byte
		c.write(canonAppendEscaped(tmp[:0], r))
	}
}

// write appends b to the canonical form: to vals while the values of
// duplicate keys are ordered, else to buf, which is hashed whenever it
// holds canonChunk bytes.
func (c *Args) write(b []byte) {
	if c.mat > 0 {
		c.vals = append(canonGrow(c.vals, len(b)), b...)
		return
	}
	for len(b) > 0 {
		n := min(len(b), canonChunk-len(c.buf))
		c.buf = append(c.buf, b[:n]...)
		if b = b[n:]; len(c.buf) == canonChunk {
			c.h.Write(c.buf)
			c.buf = c.buf[:0]
		}
	}
}

func (c *Args) byte(b byte) { c.write([]byte{b}) }

// canonGrow makes room for n more elements in s, at least doubling its
// capacity: append grows large slices by a quarter, which allocates about
// five times their final size on the way (TestLargeArgsMemory).
func canonGrow[T any](s []T, n int) []T {
	if len(s)+n <= cap(s) {
		return s
	}
	t := make([]T, len(s), max(2*cap(s), len(s)+n, 16))
	copy(t, s)
	return t
}

// key returns the decoded bytes of the key at in[k], lone surrogates as
// generalized UTF-8 (see canonAppendRune): decoded into *dst if escaped.
func (c *Args) key(k int32, dst *[]byte) []byte {
	x := c.rawStr(k)
	if bytes.IndexByte(x, '\\') >= 0 {
		*dst = unescape((*dst)[:0], x, true, math.MaxInt)
		x = *dst
	}
	return x
}

// cmpKeys compares the keys at in[a] and in[b] by their decoded bytes.
func (c *Args) cmpKeys(a, b int32) int { return bytes.Compare(c.key(a, &c.ka), c.key(b, &c.kb)) }

// keyIs reports whether the key at in[k] decodes to s.
func (c *Args) keyIs(k int32, s string) bool { return string(c.key(k, &c.ka)) == s }

// rawStr returns the raw content (escapes kept) of the string at in[k].
func (c *Args) rawStr(k int32) []byte {
	return c.in[k+1 : ScanString(c.in, int(k))-1]
}

// unescape appends the decoded content raw of a valid JSON string to dst,
// until dst holds at least limit bytes. Lone surrogates are written as
// generalized UTF-8 if exact (canonAppendRune), else as U+FFFD, as
// encoding/json decodes them.
func unescape(dst, raw []byte, exact bool, limit int) []byte {
	for len(raw) > 0 && len(dst) < limit {
		if run, _, _ := bytes.Cut(raw, []byte(`\`)); len(run) > 0 {
			dst, raw = append(dst, run[:min(len(run), limit-len(dst))]...), raw[len(run):]
			continue
		}
		r, n := canonDecodeEscape(raw, 0)
		if !exact && utf16.IsSurrogate(r) {
			r = utf8.RuneError
		}
		dst, raw = canonAppendRune(dst, r), raw[n:]
	}
	return dst
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// JSON's one-letter escapes, and the bytes they stand for.
const (
	canonEscapes = `"\bfnrt/`
	canonEscaped = "\"\\\b\f\n\r\t/"
)

// canonAppendEscaped appends the canonical string encoding of r: the short
// escapes but \/, \u00XX for other control bytes, else as canonAppendRune.
func canonAppendEscaped(dst []byte, r rune) []byte {
	if k := strings.IndexRune(canonEscaped[:7], r); k >= 0 {
		return append(dst, '\\', canonEscapes[k])
	}
	if r < 0x20 {
		const hexDigits = "0123456789abcdef"
		return append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
	}
	return canonAppendRune(dst, r)
}

// canonAppendRune appends r as UTF-8, surrogates as generalized
// UTF-8 so that lone surrogate escapes stay distinct from U+FFFD.
func canonAppendRune(dst []byte, r rune) []byte {
	if utf16.IsSurrogate(r) {
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return utf8.AppendRune(dst, r)
}

// canonDecodeEscape decodes the validated escape at raw[j] and returns the
// rune and the index after it. A surrogate pair of \u escapes decodes to
// one rune; lone surrogates are returned as they are.
func canonDecodeEscape(raw []byte, j int) (rune, int) {
	if raw[j+1] != 'u' {
		return rune(canonEscaped[strings.IndexByte(canonEscapes, raw[j+1])]), j + 2
	}
	r := canonHex4(raw[j+2:])
	if j+12 <= len(raw) && raw[j+6] == '\\' && raw[j+7] == 'u' {
		if pair := utf16.DecodeRune(r, canonHex4(raw[j+8:])); pair != utf8.RuneError {
			return pair, j + 12
		}
	}
	return r, j + 6
}

// canonHex4 decodes four validated hexadecimal digits.
func canonHex4(b []byte) rune {
	r, _ := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(r)
}

// SkipWS returns the index of the first non-whitespace byte at or after i
// (-1 if i is -1).
func SkipWS(in []byte, i int) int {
	for 0 <= i && i < len(in) && (in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\r') {
		i++
	}
	return i
}

// canonAt returns in[i], or 0 if i is out of range.
func canonAt(in []byte, i int) byte {
	if 0 <= i && i < len(in) {
		return in[i]
	}
	return 0
}

func canonIsDigit(c byte) bool { return '0' <= c && c <= '9' }

func canonIsHex(c byte) bool { return canonIsDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'f' }

// canonScanLiteral returns the end of true, false or null at in[i], or -1.
func canonScanLiteral(in []byte, i int) int {
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(in[i:], []byte(lit)) {
			return i + len(lit)
		}
	}
	return -1
}

// canonAppendNumber appends the canonical form of the valid JSON number num
// (docs/concepts.md, "How arguments are hashed"). Its significant digits d
// are gathered in dst, then the form is written after them and moved over.
func canonAppendNumber(dst, num []byte) []byte {
	neg := num[0] == '-'
	mant, exp := num[b2i(neg):], []byte{'0'}
	if k := bytes.IndexAny(mant, "eE"); k >= 0 {
		mant, exp = mant[:k], mant[k+1:]
	}
	whole, frac, _ := bytes.Cut(mant, []byte("."))
	p0 := len(dst)
	dst = append(append(dst, whole...), frac...)
	lead := len(dst) - p0 - len(bytes.TrimLeft(dst[p0:], "0"))
	d := bytes.Trim(dst[p0:], "0")
	if len(d) == 0 {
		return append(dst[:p0], '0')
	}
	p1 := len(dst)
	dst = append(dst, num[:b2i(neg)]...)
	e, _ := strconv.ParseInt(string(exp), 10, 64) // ±MaxInt64 if out of range
	adj, k := int64(len(whole)-lead), int64(len(d))
	// An astronomical exponent, bounded here, is far outside the plain forms.
	switch n := adj + min(max(e, -1<<60), 1<<60); {
	case k <= n && n <= canonNumMax:
		dst = append(append(dst, d...), "000000000000000000000"[:n-k]...)
	case 0 < n && n <= canonNumMax:
		dst = append(append(append(dst, d[:n]...), '.'), d[n:]...)
	case -6 < n && n <= 0:
		dst = append(append(dst, "0."+"00000"[:-n]...), d...)
	default:
		dst = append(dst, d[0])
		if len(d) > 1 {
			dst = append(append(dst, '.'), d[1:]...)
		}
		if dst = append(dst, 'e'); -1<<60 < e && e < 1<<60 {
			dst = strconv.AppendInt(dst, n-1, 10)
			break
		}
		var x big.Int // n-1 exactly, from the exponent's digits
		x.SetString(string(exp), 10)
		dst = x.Add(&x, big.NewInt(adj-1)).Append(dst, 10)
	}
	return append(dst[:p0], dst[p1:]...)
}

func canonDigitsEnd[T string | []byte](in T, i int) int {
	for i < len(in) && canonIsDigit(in[i]) {
		i++
	}
	return i
}

// canonScanNumber returns the end of the JSON number at in[i], or -1.
func canonScanNumber(in []byte, i int) int {
	i += b2i(canonAt(in, i) == '-')
	e := canonDigitsEnd(in, i)
	if e == i || in[i] == '0' && e > i+1 {
		return -1 // no digit, or a leading zero
	}
	if canonAt(in, e) == '.' {
		if i, e = e+1, canonDigitsEnd(in, e+1); e == i {
			return -1
		}
	}
	if canonAt(in, e)|0x20 == 'e' {
		i = e + 1 + b2i(canonAt(in, e+1) == '+' || canonAt(in, e+1) == '-')
		if e = canonDigitsEnd(in, i); e == i {
			return -1
		}
	}
	return e
}

// ScanString validates the JSON string starting with the quote at
// in[i] and returns the index after its closing quote, or -1.
func ScanString(in []byte, i int) int {
	for j := i + 1; j < len(in); j++ {
		switch c := in[j]; {
		case c == '"':
			return j + 1
		case c < 0x20 || c == '\\' && j+1 == len(in):
			return -1
		case c == '\\' && in[j+1] == 'u':
			if j+6 > len(in) || len(bytes.TrimLeft(in[j+2:j+6], "0123456789abcdefABCDEF")) > 0 {
				return -1
			}
			j += 5
		case c == '\\':
			if strings.IndexByte(canonEscapes, in[j+1]) < 0 {
				return -1
			}
			j++
		}
	}
	return -1
}
