package canon

// The v0.1.0 oracle's own scanning helpers: copies of the core's helpers as
// they were when the oracle was written, so that the oracle does not share
// the code it checks.

import (
	"bytes"
	"crypto/sha256"
)

// canonTrim returns the bounds of b without leading and trailing JSON
// whitespace.
func canonTrim(b []byte) (lo, hi int) {
	lo, hi = SkipWS(b, 0), len(b)
	for hi > lo && (b[hi-1] == ' ' || b[hi-1] == '\t' || b[hi-1] == '\n' || b[hi-1] == '\r') {
		hi--
	}
	return lo, hi
}

// v1Small is the size up to which v1Sum hashes from the stack.
const v1Small = 480

// Batching of the oracle's hashing, as the core's was.
const (
	v1DirectMin = 512
	v1GatherMax = 8192
)

// v1Sum returns the first 16 bytes of SHA-256 over prefix followed by b.
// Small inputs are hashed from a buffer on the stack in one call.
func v1Sum(prefix string, b []byte) Hash {
	if len(b) <= v1Small {
		var buf [16 + v1Small]byte
		sum := sha256.Sum256(append(append(buf[:0], prefix...), b...))
		return Hash(sum[:16])
	}
	h := sha256.New()
	h.Write([]byte(prefix))
	h.Write(b)
	var sum [sha256.Size]byte
	return Hash(h.Sum(sum[:0]))
}

// v1NumberIsCanonical reports whether the valid JSON number num is in
// canonical form; simple reports that it is a plain integer. Long numbers
// with a fraction or exponent are conservatively reported as not canonical.
func v1NumberIsCanonical(num []byte, simple bool) bool {
	if simple {
		d := num
		if d[0] == '-' {
			d = d[1:]
		}
		return len(d) <= canonNumMax && (num[0] != '-' || d[0] != '0')
	}
	if len(num) > 24 {
		return false
	}
	var buf [64]byte
	return bytes.Equal(canonAppendNumber(buf[:0], num), num)
}

// v1Plain marks the bytes a JSON string holds as they are: all but the
// quote, the backslash and control bytes.
var v1Plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// v1ScanNumber returns the end of the JSON number at in[i], or -1, and
// whether it is a plain integer (no fraction, no exponent).
func v1ScanNumber(in []byte, i int) (int, bool) {
	n := len(in)
	if i < n && in[i] == '-' {
		i++
	}
	switch {
	case i >= n:
		return -1, false
	case in[i] == '0':
		i++
	case '1' <= in[i] && in[i] <= '9':
		for i++; i < n && canonIsDigit(in[i]); i++ {
		}
	default:
		return -1, false
	}
	simple := true
	if i < n && in[i] == '.' {
		simple = false
		i++
		k := i
		for i < n && canonIsDigit(in[i]) {
			i++
		}
		if i == k {
			return -1, false
		}
	}
	if i < n && in[i]|0x20 == 'e' {
		simple = false
		i++
		if i < n && (in[i] == '+' || in[i] == '-') {
			i++
		}
		k := i
		for i < n && canonIsDigit(in[i]) {
			i++
		}
		if i == k {
			return -1, false
		}
	}
	return i, simple
}

// v1ScanString validates the JSON string starting with the quote at in[i]
// and returns the index after its closing quote, or -1. canon reports that
// the string is already in canonical encoding (its only escapes are \" \\
// \b \f \n \r \t and lower-case \u00XX for other control characters); esc
// reports that it contains an escape.
func v1ScanString(in []byte, i int) (end int, canon, esc bool) {
	canon = true
	j := i + 1
	for {
		for j < len(in) && v1Plain[in[j]] {
			j++
		}
		if j >= len(in) {
			return -1, false, false
		}
		switch c := in[j]; {
		case c == '"':
			return j + 1, canon, esc
		case c == '\\':
			esc = true
			if j+1 >= len(in) {
				return -1, false, false
			}
			switch in[j+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				j += 2
			case '/':
				canon = false
				j += 2
			case 'u':
				if j+6 > len(in) {
					return -1, false, false
				}
				h := in[j+2 : j+6]
				if !canonIsHex(h[0]) || !canonIsHex(h[1]) || !canonIsHex(h[2]) || !canonIsHex(h[3]) {
					return -1, false, false
				}
				// Canonical only for control characters without a short
				// escape, written in lower case.
				if canon {
					canon = h[0] == '0' && h[1] == '0' && (h[2] == '0' || h[2] == '1') &&
						(canonIsDigit(h[3]) || 'a' <= h[3] && h[3] <= 'f')
					if canon {
						switch canonHex4(h) {
						case '\b', '\f', '\n', '\r', '\t':
							canon = false
						}
					}
				}
				j += 6
			default:
				return -1, false, false
			}
		case c < 0x20:
			return -1, false, false
		default:
			j++
		}
	}
}

// v1RawHash hashes b as raw bytes, for payloads that are not canonicalized.
func v1RawHash(b []byte) Hash { return v1Sum(canonPrefixRaw, b) }
