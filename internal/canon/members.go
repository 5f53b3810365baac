package canon

import (
	"math"
)

// EachScalar calls fn with each top-level member of the scanned object, in
// key order, leaving out the keys in ignore: its raw key, and its value — a
// string's raw content (escapes not decoded; str is true), or a number's or
// a literal's text. It stops when fn returns false and reports false when
// the payload is not a valid JSON object with members, or a member's value
// is an object or an array.
func (c *Args) EachScalar(ignore []string, fn func(name, value []byte, str bool) bool) bool {
	keys := c.topKeys()
	if len(keys) == 0 {
		return false
	}
	in := c.in
	for _, k := range keys {
		if c.ignored(k, ignore) {
			continue
		}
		i := c.valueOf(k)
		var v []byte
		switch {
		case in[i] == '"':
			v = c.rawStr(int32(i))
		case in[i] == 't' || in[i] == 'f' || in[i] == 'n':
			v = in[i:canonScanLiteral(in, i)]
		case in[i] == '-' || canonIsDigit(in[i]):
			v = in[i:canonScanNumber(in, i)]
		default:
			return false // an object or an array
		}
		if !fn(c.rawStr(k), v, in[i] == '"') {
			return false
		}
	}
	return true
}

// Decode appends the decoded raw JSON string content raw to dst (a lone
// surrogate as U+FFFD); the result is never longer than raw.
func Decode(dst, raw []byte) []byte { return unescape(dst, raw, false, math.MaxInt) }
