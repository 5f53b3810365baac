package canon

import (
	"bytes"
	"cmp"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// topKeys returns the key positions of the top-level object's members, in
// key order; nil for any other payload.
func (c *Args) topKeys() []int32 {
	if i := SkipWS(c.in, 0); c.ok && i < len(c.in) && c.in[i] == '{' {
		return c.members(i)
	}
	return nil
}

// stringValue returns the raw content of the key at in[k]'s string value.
func (c *Args) stringValue(k int32) ([]byte, bool) {
	i := c.valueOf(k)
	if c.in[i] != '"' {
		return nil, false
	}
	return c.rawStr(int32(i)), true
}

// StringArg returns the decoded value, cut to at most max bytes, of the
// first key of keys, in their order, whose value in the top-level object is
// a string, and that key. As with encoding/json, the last of duplicate keys
// counts. ok is false if the payload is not a valid JSON object or has none
// of the keys with a string value.
func (c *Args) StringArg(keys []string, max int) (key, s string, ok bool) {
	ks := c.topKeys()
	for _, k := range keys {
		a := slices.IndexFunc(ks, func(pos int32) bool { return c.keyIs(pos, k) })
		if a < 0 {
			continue
		}
		if raw, ok := c.stringValue(slices.Max(ks[a:c.keyRun(ks, a)])); ok {
			return k, decode(raw, max), true
		}
	}
	return "", "", false
}

// URL returns the lower-cased host (port kept, user information dropped)
// and the path ("/" if empty) of the first top-level string value, in
// document order, that is an absolute http or https URL with a host; query
// and fragment are ignored. ok is false if there is none or the payload is
// not a valid JSON object.
func (c *Args) URL() (host, path string, ok bool) {
	first := int32(math.MaxInt32)
	for _, pos := range c.topKeys() {
		raw, isStr := c.stringValue(pos)
		if !isStr || pos > first {
			continue
		}
		var pre [16]byte // the scheme, checked before the string is decoded and parsed
		scheme, _, _ := bytes.Cut(unescape(pre[:0], raw, false, 8), []byte("://"))
		if !bytes.EqualFold(scheme, []byte("http")) && !bytes.EqualFold(scheme, []byte("https")) {
			continue
		}
		if u, err := url.Parse(decode(raw, len(raw))); err == nil && u.Host != "" {
			first, host, path = pos, strings.ToLower(u.Host), cmp.Or(u.Path, "/")
		}
	}
	return host, path, host != ""
}

// Limits of AppendNames.
const (
	canonNameMax  = 32 // bytes kept of each key
	canonNamesMax = 8  // keys listed
)

// AppendNames appends to dst the sorted, de-duplicated top-level key names
// of the JSON object, comma-separated (for example "command,timeout"), for a
// redacted description of a call: names only, never values. Each name is
// the decoded key cut to 32 bytes, with bytes that are not printable ASCII,
// and commas, replaced by '?'; names are de-duplicated and sorted after
// that. At most 8 names are listed, followed by ",…" if there are more. If
// the payload is not a valid JSON object or has no keys, dst is returned
// unchanged. It allocates only to grow dst.
func (c *Args) AppendNames(dst []byte) []byte {
	type name struct {
		b [canonNameMax + utf8.UTFMax]byte // room for a rune unescape adds past its limit
		n int
	}
	var store [canonNamesMax + 1]name // the smallest names, sorted
	set := store[:0]
	for _, k := range c.topKeys() {
		var nm name
		nm.n = min(len(unescape(nm.b[:0], c.rawStr(k), false, canonNameMax)), canonNameMax)
		for i, ch := range nm.b[:nm.n] {
			if ch < 0x20 || ch >= 0x7f || ch == ',' {
				nm.b[i] = '?'
			}
		}
		pos, found := slices.BinarySearchFunc(set, nm, func(a, b name) int {
			return bytes.Compare(a.b[:a.n], b.b[:b.n])
		})
		if !found && pos < len(store) {
			set = slices.Insert(set[:min(len(set), len(store)-1)], pos, nm)
		}
	}
	for i, nm := range set {
		if i > 0 {
			dst = append(dst, ',')
		}
		if i == canonNamesMax {
			return append(dst, "…"...) // more names than listed
		}
		dst = append(dst, nm.b[:nm.n]...)
	}
	return dst
}

// Shape returns the arguments with their particulars masked, for the
// failure rule's Tweaked retries: the names and the values of the JSON
// arguments, written out ("name: value ", object members in key order,
// numbers as Go formats a float64, null as <nil>), masked by maskError and
// cut to ShapeMax. "grep -n 'x' ./a.py" and "grep -n 'y' ./b.py" have
// one shape. Arguments that are not JSON (or that encoding/json would
// refuse: a number out of float64's range), or larger than InspectMax, are
// masked as they are. The shape stays in memory for the failure rule: it
// is never logged.
func (c *Args) Shape() string {
	c.buf, c.inf = c.buf[:0], false
	if i := SkipWS(c.in, 0); len(c.in) <= InspectMax && c.ok && i < len(c.in) {
		if c.shape(i); !c.inf {
			return cutShape(maskError(string(c.buf)))
		}
	}
	return cutShape(maskError(string(c.in[:min(len(c.in), InspectMax)])))
}

// shape appends the shape of the value at in[i] to buf and returns the
// index after the value; a number out of float64's range sets inf. An
// object's members are written in key order, the last of duplicate keys
// only, as encoding/json decodes them into a map.
func (c *Args) shape(i int) int {
	in := c.in
	switch in[i] {
	case '{':
		ks, end := c.members(i), i+1
		for a, b := 0, 0; a < len(ks); a = b {
			b = c.keyRun(ks, a)
			k := slices.Max(ks[a:b])
			c.buf = append(appendDecoded(c.buf, c.rawStr(k)), ':', ' ')
			end = max(end, c.shape(c.valueOf(k)))
			c.buf = append(c.buf, ' ')
		}
		return SkipWS(in, end) + 1
	case '[':
		for i = SkipWS(in, i+1); in[i] != ']'; {
			i = SkipWS(in, c.shape(i))
			if c.buf = append(c.buf, ' '); in[i] == ',' {
				i = SkipWS(in, i+1)
			}
		}
		return i + 1
	case '"':
		e := ScanString(in, i)
		c.buf = appendDecoded(c.buf, in[i+1:e-1])
		return e
	case 'n':
		c.buf = append(c.buf, "<nil>"...)
		return i + 4
	case 't', 'f':
		e := canonScanLiteral(in, i)
		c.buf = append(c.buf, in[i:e]...)
		return e
	}
	e := canonScanNumber(in, i)
	f, err := strconv.ParseFloat(string(in[i:e]), 64)
	c.inf = c.inf || err != nil
	c.buf = strconv.AppendFloat(c.buf, f, 'g', -1, 64)
	return e
}

// appendDecoded appends the decoded raw JSON string content raw as
// encoding/json decodes it: invalid UTF-8 and lone surrogates become U+FFFD.
func appendDecoded(dst, raw []byte) []byte {
	for _, r := range string(unescape(nil, raw, false, math.MaxInt)) {
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}

// decode returns the decoded raw JSON string content raw, lone surrogates
// as U+FFFD, cut to at most max bytes.
func decode(raw []byte, max int) string {
	if bytes.IndexByte(raw, '\\') >= 0 {
		raw = unescape(make([]byte, 0, min(len(raw), max)+utf8.UTFMax), raw, false, max)
	}
	return string(raw[:min(len(raw), max)])
}

// EachScalar calls fn with each top-level member of the scanned object, in
// key order, leaving out the keys in ignore: its raw key, and its value — a
// string's raw content (escapes not decoded; str is true), or a number's or
// a literal's text. It stops when fn returns false and reports false when
// the payload is not a valid JSON object with members, or a member's value
// is an object or an array.
func (c *Args) EachScalar(ignore []string, fn func(name, value []byte, str bool) bool) bool {
	keys := c.topKeys()
	for _, k := range keys {
		if c.ignored(k, ignore) {
			continue
		}
		i := c.valueOf(k)
		str := c.in[i] == '"'
		if c.in[i] == '{' || c.in[i] == '[' ||
			!fn(c.rawStr(k), c.in[i+b2i(str):c.scanValue(i, 0)-b2i(str)], str) {
			return false
		}
	}
	return len(keys) > 0
}

// Decode appends the decoded raw JSON string content raw to dst (a lone
// surrogate as U+FFFD); the result is never longer than raw.
func Decode(dst, raw []byte) []byte { return unescape(dst, raw, false, math.MaxInt) }

// InspectMax is the size above which arguments are hashed but not read for
// their shape (nor, in the root package, for their names and URL).
const InspectMax = 64 << 10
