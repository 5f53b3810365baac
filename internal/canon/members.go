package canon

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
		if keyIn(in, int(k), ignore) {
			continue
		}
		i := SkipWS(in, SkipWS(in, ScanString(in, int(k)))+1)
		var v []byte
		switch {
		case in[i] == '"':
			v, _ = c.rawString(k)
		case in[i] == 't' || in[i] == 'f' || in[i] == 'n':
			v = in[i:canonScanLiteral(in, i)]
		case in[i] == '-' || canonIsDigit(in[i]):
			v = in[i:canonScanNumber(in, i)]
		default:
			return false // an object or an array
		}
		if !fn(c.rawKey(k), v, in[i] == '"') {
			return false
		}
	}
	return true
}

// Decode writes at most len(dst) bytes of the raw JSON string content raw,
// decoded, into dst and returns how many it wrote.
func Decode(dst, raw []byte) int { return canonRawPrefix(dst, raw) }

func keyIn(in []byte, k int, names []string) bool {
	for _, name := range names {
		if canonKeyIs(in, k, name) {
			return true
		}
	}
	return false
}
