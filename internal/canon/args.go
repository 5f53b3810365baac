package canon

import (
	"bytes"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What the rules read of a call's arguments, from the members Args.Scan
// listed: nothing here scans the payload again.

// topKeys returns the key positions of the top-level object's members, in
// key order (Scan lists the top-level object always); nil for any other
// payload.
func (c *Args) topKeys() []int32 {
	if !c.ok || c.topStart < 0 {
		return nil
	}
	o, ok := c.listed(int(c.topStart))
	if !ok {
		return nil // {}
	}
	return c.keys[o.off : o.off+o.n]
}

// stringValue returns the raw content of the value of the key at in[k] if
// it is a string.
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
		last := int32(-1)
		for _, pos := range ks {
			if pos > last && c.keyIs(pos, k) {
				last = pos
			}
		}
		if last < 0 {
			continue
		}
		if raw, ok := c.stringValue(last); ok {
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
	first := int32(-1)
	for _, pos := range c.topKeys() {
		raw, ok := c.stringValue(pos)
		if !ok || first >= 0 && pos > first {
			continue
		}
		var pre [16]byte
		p := unescape(pre[:0], raw, false, 8)
		for k, ch := range p {
			p[k] = maskLower(ch)
		}
		if !bytes.HasPrefix(p, []byte("http://")) && !bytes.HasPrefix(p, []byte("https://")) {
			continue
		}
		u, err := url.Parse(decode(raw, len(raw)))
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			continue
		}
		first, host, path = pos, strings.ToLower(u.Host), u.Path
	}
	if first < 0 {
		return "", "", false
	}
	if path == "" {
		path = "/"
	}
	return host, path, true
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
	var set canonNameSet
	var name [canonNameMax + utf8.UTFMax]byte
	for _, k := range c.topKeys() {
		set.add(unescape(name[:0], c.rawStr(k), false, canonNameMax))
	}
	return set.appendTo(dst)
}

// shape returns the arguments with their particulars masked, for the
// failure rule's Tweaked retries: the names and the values of the JSON
// arguments, written out ("name: value ", object members in key order,
// numbers as Go formats a float64, null as <nil>), masked by maskError and
// cut to ShapeMax. "grep -n 'x' ./a.py" and "grep -n 'y' ./b.py" have
// one shape. Arguments that are not JSON (or that encoding/json would
// refuse: a number out of float64's range), or larger than InspectMax, are
// masked as they are. The shape stays in memory for the failure rule: it
// is never logged.
func (c *Args) Shape() string {
	lo, hi := canonTrim(c.in)
	if len(c.in) <= InspectMax && c.ok && lo < hi {
		var b []byte
		if _, ok := c.shapeOf(&b, lo); ok {
			return cutShape(maskError(string(b)))
		}
	}
	return cutShape(maskError(string(c.in[:min(len(c.in), InspectMax)])))
}

// shapeOf appends the shape of the value at in[i] to b and returns the
// index after the value; ok is false for a number out of float64's range.
func (c *Args) shapeOf(b *[]byte, i int) (end int, ok bool) {
	in := c.in
	switch in[i] {
	case '{':
		return c.shapeObject(b, i)
	case '[':
		for i = SkipWS(in, i+1); in[i] != ']'; {
			if i, ok = c.shapeOf(b, i); !ok {
				return 0, false
			}
			*b = append(*b, ' ')
			if i = SkipWS(in, i); in[i] == ',' {
				i = SkipWS(in, i+1)
			}
		}
		return i + 1, true
	case '"':
		e := ScanString(in, i)
		*b = appendDecoded(*b, in[i+1:e-1])
		return e, true
	case 't', 'f':
		e := canonScanLiteral(in, i)
		*b = append(*b, in[i:e]...)
		return e, true
	case 'n':
		*b = append(*b, "<nil>"...)
		return i + 4, true
	}
	e := canonScanNumber(in, i)
	f, err := strconv.ParseFloat(string(in[i:e]), 64)
	if err != nil {
		return 0, false
	}
	*b = strconv.AppendFloat(*b, f, 'g', -1, 64)
	return e, true
}

// shapeObject is shapeOf of an object: its members in key order, the last
// of duplicate keys only, as encoding/json decodes them into a map.
func (c *Args) shapeObject(b *[]byte, i int) (end int, ok bool) {
	in := c.in
	member := func(k int) (int, bool) {
		e := ScanString(in, k)
		*b = appendDecoded(*b, in[k+1:e-1])
		*b = append(*b, ':', ' ')
		e, ok := c.shapeOf(b, SkipWS(in, SkipWS(in, e)+1))
		*b = append(*b, ' ')
		return e, ok
	}
	o, listed := c.listed(i)
	if !listed {
		for i = SkipWS(in, i+1); in[i] != '}'; {
			if i, ok = member(i); !ok {
				return 0, false
			}
			if i = SkipWS(in, i); in[i] == ',' {
				i = SkipWS(in, i+1)
			}
		}
		return i + 1, true
	}
	ks := c.keys[o.off : o.off+o.n]
	end = i + 1
	for a, b := 0, 0; a < len(ks); a = b {
		b = c.keyRun(ks, a)
		e, ok := member(int(slices.Max(ks[a:b])))
		if !ok {
			return 0, false
		}
		end = max(end, e)
	}
	return SkipWS(in, end) + 1, true
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
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[:min(len(raw), max)])
	}
	b := unescape(make([]byte, 0, min(len(raw), max)+utf8.UTFMax), raw, false, max)
	return string(b[:min(len(b), max)])
}

// canonNameSet collects key names for appendKeyNames: the sorted,
// de-duplicated smallest canonNamesMax+1 of them.
type canonNameSet struct {
	names [canonNamesMax + 1][canonNameMax]byte
	lens  [canonNamesMax + 1]int
	count int
}

// add adds the name of the decoded key.
func (s *canonNameSet) add(key []byte) {
	var name [canonNameMax]byte
	n := copy(name[:], key)
	for i, c := range name[:n] {
		if c < 0x20 || c >= 0x7f || c == ',' {
			name[i] = '?'
		}
	}
	// Insert into the sorted set of the smallest names.
	pos := 0
	for pos < s.count && bytes.Compare(s.names[pos][:s.lens[pos]], name[:n]) < 0 {
		pos++
	}
	if pos < s.count && bytes.Equal(s.names[pos][:s.lens[pos]], name[:n]) || pos == len(s.names) {
		return
	}
	if s.count < len(s.names) {
		s.count++
	}
	copy(s.names[pos+1:s.count], s.names[pos:s.count-1])
	copy(s.lens[pos+1:s.count], s.lens[pos:s.count-1])
	s.names[pos], s.lens[pos] = name, n
}

// appendTo appends the names, comma-separated, with ",…" if there are more
// than canonNamesMax.
func (s *canonNameSet) appendTo(dst []byte) []byte {
	for i := range min(s.count, canonNamesMax) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, s.names[i][:s.lens[i]]...)
	}
	if s.count > canonNamesMax {
		dst = append(dst, ",…"...)
	}
	return dst
}

// InspectMax is the size above which arguments are hashed but not read for
// their shape (nor, in the root package, for their names and URL).
const InspectMax = 64 << 10

// ShapeOf returns the shape of args (Args.Shape).
func ShapeOf(args []byte) string {
	var c Args
	c.Scan(args)
	return c.Shape()
}
