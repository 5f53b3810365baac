package audit

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// decode decodes one record into v. It is encoding/json's Unmarshal in
// behaviour (same types, same errors) from a faster implementation: the
// audit of gigabytes of transcripts spends most of its time here. Error
// messages that name a field path still come from encoding/json, which
// parseRecord uses.
func decode(data []byte, v any) error { return segjson.Unmarshal(data, v) }

// text is a JSON string that decodes faster than a string field: the
// decoder above re-encodes every rune of a string that holds an escape
// (tool results are full of "\n"), while text copies the runs between
// escapes whole once they are known to be valid UTF-8. It decodes to what
// encoding/json decodes: invalid UTF-8 and lone surrogates become U+FFFD.
type text string

// UnmarshalJSON decodes a JSON string; null leaves t unchanged.
func (t *text) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if s, ok := unquote(b); ok {
		*t = text(s)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = text(s)
	return nil
}

// unquote decodes a JSON string literal; ok is false for anything it does
// not read (encoding/json then decodes it, or names the error).
func unquote(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	s := b[1 : len(b)-1]
	if bytes.IndexByte(s, '\\') < 0 && (asciiText(s) || utf8.Valid(s) && !hasControl(s)) {
		return string(s), true
	}
	// A builder's String does not copy what it built.
	var out strings.Builder
	out.Grow(len(s))
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		run := s
		if i >= 0 {
			run = s[:i]
		}
		switch {
		case asciiText(run):
			out.Write(run)
		case hasControl(run):
			return "", false
		case utf8.Valid(run):
			out.Write(run)
		default:
			for _, r := range string(run) {
				out.WriteRune(r)
			}
		}
		if i < 0 {
			break
		}
		s = s[i+1:]
		if len(s) == 0 {
			return "", false
		}
		c := s[0]
		s = s[1:]
		switch c {
		case '"', '\\', '/':
			out.WriteByte(c)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r, ok := hex4(s)
			if !ok {
				return "", false
			}
			s = s[4:]
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					if x, ok := hex4(s[2:]); ok {
						r2 = x
					}
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					s = s[6:]
				} else {
					r = utf8.RuneError
				}
			}
			out.WriteRune(r)
		default:
			return "", false
		}
	}
	return out.String(), true
}

// asciiText reports whether s is ASCII without a control character or a
// quote: what a JSON string holds as it is and decodes to itself. Eight
// bytes at a time.
func asciiText(s []byte) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(s[i : i+8])
		q := w ^ (ones * '"')
		// A high bit, a byte below 0x20, or a zero byte of q (a quote).
		if (w|(w-ones*0x20)&^w|(q-ones)&^q)&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Word-at-a-time helpers for the scans the audit makes over every result.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// countChars counts the characters (code points) of s, which must be valid
// UTF-8, as the decoded strings of a transcript are: the bytes that are not
// continuation bytes (10xxxxxx), eight at a time.
func countChars(s string) int {
	n := len(s)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64([]byte(s[i : i+8]))
		// Bit 7 set and bit 6 clear: a continuation byte.
		n -= bits.OnesCount64((w >> 7) & ^(w >> 6) & ones)
	}
	for ; i < len(s); i++ {
		if s[i]&0xC0 == 0x80 {
			n--
		}
	}
	return n
}

// hasControl reports a control character or a quote, which a JSON string
// may not hold unescaped; eight bytes at a time.
func hasControl(s []byte) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(s[i : i+8])
		q := w ^ (ones * '"')
		// A byte below 0x20, or a zero byte of q (a quote).
		if ((w-ones*0x20)&^w|(q-ones)&^q)&highs != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == '"' {
			return true
		}
	}
	return false
}
