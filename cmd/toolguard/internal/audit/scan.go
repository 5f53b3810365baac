package audit

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// scanEpisodeLine decodes a record of the episode format into l as decode
// does, in one pass over its bytes and without reflection: most of the
// bytes an audit reads are these records. It reads the records it knows
// how to read exactly, and returns false for anything else — a key that
// matches a field only without regard to case, a key given twice, a
// number that is not a small integer where one is expected, a value of
// another type, JSON that is not valid — and decode then reads the record
// (or fails on it, and parseRecord names the problem). Raw values (the
// episode, a call's id and args) share data's bytes.
func scanEpisodeLine(data []byte, l *episodeLine) bool {
	s := scanner{b: data}
	var seen [3]bool
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "episode":
			if seen[0] {
				return false
			}
			seen[0] = true
			l.Episode = s.raw()
			return l.Episode != nil
		case "label":
			if seen[1] {
				return false
			}
			seen[1] = true
			return s.optString((*string)(nil), &l.Label)
		case "calls":
			if seen[2] {
				return false
			}
			seen[2] = true
			if s.null() {
				return true
			}
			calls := make([]episodeCall, 0, 8)
			ok := s.array(func() bool {
				calls = append(calls, episodeCall{})
				return s.episodeCall(&calls[len(calls)-1])
			})
			l.Calls = &calls
			return ok
		}
		return s.other(key, "episode", "label", "calls")
	})
	s.space()
	return ok && s.i == len(s.b)
}

// callValues holds the decoded values an episodeCall points to: one
// allocation per call instead of one per field.
type callValues struct {
	turn, userTurn int
	tool           string
	result         text
	isError        bool
}

// episodeCall reads one call object into c.
func (s *scanner) episodeCall(c *episodeCall) bool {
	v := new(callValues)
	var seen [7]bool
	once := func(i int) bool {
		if seen[i] {
			return false
		}
		seen[i] = true
		return true
	}
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "turn":
			return once(0) && s.optInt(&v.turn, &c.Turn)
		case "user_turn":
			return once(1) && s.optInt(&v.userTurn, &c.UserTurn)
		case "id":
			if !once(2) {
				return false
			}
			c.ID = s.raw()
			return c.ID != nil
		case "tool":
			return once(3) && s.optString(&v.tool, &c.Tool)
		case "args":
			if !once(4) {
				return false
			}
			c.Args = s.raw()
			return c.Args != nil && utf8.Valid(c.Args)
		case "result":
			if !once(5) {
				return false
			}
			if s.null() {
				return true
			}
			str, ok := s.str()
			v.result, c.Result = text(str), &v.result
			return ok
		case "is_error":
			if !once(6) {
				return false
			}
			if s.null() {
				return true
			}
			b, ok := s.boolean()
			v.isError, c.IsError = b, &v.isError
			return ok
		}
		return s.other(key, "turn", "user_turn", "id", "tool", "args", "result", "is_error")
	})
}

// scanner reads JSON from b at i. Its methods skip the white space before
// a value and return false when they do not read what they expect.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// literal reads word (true, false, null).
func (s *scanner) literal(word string) bool {
	if s.peek() != word[0] || !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// null reads a null if one is next.
func (s *scanner) null() bool { return s.literal("null") }

func (s *scanner) boolean() (bool, bool) {
	if s.literal("true") {
		return true, true
	}
	return false, s.literal("false")
}

// object reads an object, calling field for each key with the scanner
// before the key's value, which field reads.
func (s *scanner) object(field func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		key, ok := s.rawString()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !field(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// array reads an array, calling elem for each element.
func (s *scanner) array(elem func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// other skips the value of a key that is none of known. A key that
// matches one of them without regard to case is a field for decode (as
// is any key that is not plain ASCII, which case folding might match).
func (s *scanner) other(key []byte, known ...string) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	for _, k := range known {
		if strings.EqualFold(string(key), k) {
			return false
		}
	}
	return s.skip(0)
}

// maxScanDepth bounds the nesting the scanner follows; deeper values are
// left to decode.
const maxScanDepth = 1000

// skip reads any value.
func (s *scanner) skip(depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	switch s.peek() {
	case '{':
		return s.object(func([]byte) bool { return s.skip(depth + 1) })
	case '[':
		return s.array(func() bool { return s.skip(depth + 1) })
	case '"':
		_, ok := s.rawString()
		return ok
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.null()
	}
	return s.number()
}

// raw reads any value and returns its bytes; nil when it is not valid.
func (s *scanner) raw() []byte {
	start := s.i
	if !s.skip(0) {
		return nil
	}
	return bytes.TrimLeft(s.b[start:s.i], " \t\n\r")
}

// number reads a JSON number.
func (s *scanner) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	s.i = i
	return true
}

// optInt reads an integer into *v and points p at it, or a null.
func (s *scanner) optInt(v *int, p **int) bool {
	if s.null() {
		return true
	}
	b, i := s.b, s.i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	n := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' && i-start < 18 {
		n = n*10 + int(b[i]-'0')
		i++
	}
	if i == start || (b[start] == '0' && i-start > 1) {
		return false
	}
	if i < len(b) {
		switch b[i] {
		case '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return false // a fraction, an exponent or a long number: decode's
		}
	}
	if neg {
		n = -n
	}
	s.i, *v, *p = i, n, v
	return true
}

// optString reads a string into *v (a new string when v is nil) and
// points p at it, or a null.
func (s *scanner) optString(v *string, p **string) bool {
	if s.null() {
		return true
	}
	str, ok := s.str()
	if !ok {
		return false
	}
	if v == nil {
		v = new(string)
	}
	*v, *p = str, v
	return true
}

// str reads a string and decodes it as encoding/json does.
func (s *scanner) str() (string, bool) {
	body, ok := s.stringBody()
	if !ok {
		return "", false
	}
	// unquote checks the escapes and control characters.
	return unquote(s.b[s.i-len(body)-2 : s.i])
}

// rawString reads a string and returns what is between its quotes,
// escapes unread. Control characters and escapes JSON does not have are
// not valid.
func (s *scanner) rawString() ([]byte, bool) {
	body, ok := s.stringBody()
	if ok && (hasControlOnly(body) || bytes.IndexByte(body, '\\') >= 0 && !validEscapes(body)) {
		return nil, false
	}
	return body, ok
}

// stringBody reads a string up to its closing quote, unchecked.
func (s *scanner) stringBody() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	b := s.b
	start := s.i + 1
	i := start
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return nil, false
		}
		i += j
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		k := i
		for k > start && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			break
		}
		i++
	}
	s.i = i + 1
	return b[start:i], true
}

// validEscapes reports whether every backslash of a string's body starts
// an escape JSON has.
func validEscapes(body []byte) bool {
	for i := 0; i < len(body); i++ {
		j := bytes.IndexByte(body[i:], '\\')
		if j < 0 {
			return true
		}
		i += j
		if i+1 >= len(body) {
			return false
		}
		i++
		switch body[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if _, ok := hex4(body[i+1:]); !ok {
				return false
			}
			i += 4
		default:
			return false
		}
	}
	return true
}

// hasControlOnly reports a byte below 0x20, eight bytes at a time.
func hasControlOnly(s []byte) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(s[i : i+8])
		if (w-ones*0x20)&^w&highs != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return false
}
