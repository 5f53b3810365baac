package mcpproxy

import (
	"encoding/json"
)

// maxScalar bounds the id and method an oversized message may carry: a
// longer one is not kept.
const maxScalar = 256

// idScanner reads the top-level "id" and "method" of a JSON-RPC message
// fed to it in pieces, keeping nothing else, so that a message over
// --max-message can be answered with its id without being held. Malformed
// input gives no id.
type idScanner struct {
	started, object bool // the first non-blank byte was seen; it was '{'
	depth           int
	inString, esc   bool
	isKey           bool   // the string at depth 1 is a key
	expectValue     bool   // at depth 1, after ':'
	buf             []byte // the string or scalar at depth 1, raw
	over            bool   // buf passed maxScalar
	key             string // the last key at depth 1
	id              json.RawMessage
	method          string
}

func (s *idScanner) feed(p []byte) {
	for _, c := range p {
		s.byte(c)
	}
}

func (s *idScanner) keep(c byte) {
	if s.depth != 1 || s.over {
		return
	}
	if len(s.buf) >= maxScalar {
		s.over = true
		return
	}
	s.buf = append(s.buf, c)
}

func (s *idScanner) byte(c byte) {
	if s.inString {
		switch {
		case s.esc:
			s.esc = false
			s.keep(c)
		case c == '\\':
			s.esc = true
			s.keep(c)
		case c == '"':
			s.inString = false
			if s.depth == 1 {
				s.endString()
			}
		default:
			s.keep(c)
		}
		return
	}
	switch c {
	case ' ', '\t', '\r', '\n':
		return
	}
	if !s.started {
		s.started, s.object = true, c == '{'
	}
	if !s.object {
		return
	}
	switch c {
	case '"':
		s.inString = true
		if s.depth == 1 {
			s.isKey = !s.expectValue
			s.buf, s.over = s.buf[:0], false
		}
	case '{', '[':
		if s.depth == 1 {
			s.expectValue = false // a container value: not an id
		}
		s.depth++
	case '}', ']':
		if s.depth == 1 {
			s.endScalar()
		}
		s.depth--
	case ':':
		if s.depth == 1 {
			s.expectValue = true
			s.buf, s.over = s.buf[:0], false
		}
	case ',':
		if s.depth == 1 {
			s.endScalar()
		}
	default:
		if s.depth == 1 && s.expectValue {
			s.keep(c)
		}
	}
}

func (s *idScanner) endString() {
	if s.over {
		s.expectValue = false
		return
	}
	quoted := append(append([]byte{'"'}, s.buf...), '"')
	switch {
	case s.isKey:
		var k string
		if json.Unmarshal(quoted, &k) == nil {
			s.key = k
		}
	case s.key == "id" && json.Valid(quoted):
		s.id = json.RawMessage(quoted)
	case s.key == "method":
		var m string
		if json.Unmarshal(quoted, &m) == nil {
			s.method = m
		}
	}
	s.expectValue = false
}

func (s *idScanner) endScalar() {
	if s.expectValue && s.key == "id" && !s.over && len(s.buf) > 0 {
		var n json.Number
		if json.Unmarshal(s.buf, &n) == nil && n != "" {
			s.id = json.RawMessage(append([]byte(nil), s.buf...))
		}
	}
	s.expectValue = false
}

// result returns the id and method found, the id only when the message
// ended as a whole object.
func (s *idScanner) result() (json.RawMessage, string) {
	if !s.object || s.depth != 0 || s.inString {
		return nil, ""
	}
	return s.id, s.method
}
