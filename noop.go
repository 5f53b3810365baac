package toolguard

import (
	"strings"

	"github.com/toolguard/toolguard/internal/canon"
)

// blankArgs reports whether in is a JSON object of one or more members
// whose values are all strings of white space (spaces, and the escapes \n,
// \r, \t): a call that changes nothing (docs/patterns.md, "Calls that
// change nothing between repeats"; no arguments, {} or none, are not blank).
// It stops at the first other value: a few bytes for almost every call.
// Bad JSON is not blank.
func blankArgs(in []byte) bool {
	const tokens = `{":",` // '{', then each member's name, ':', blank value and ','
	for i, k := 0, 0; ; k = k%4 + 1 {
		if i = canon.SkipWS(in, i); i >= len(in) {
			return false
		}
		switch c := in[i]; {
		case k == 4 && c == '}':
			return canon.SkipWS(in, i+1) == len(in)
		case c != tokens[k]:
			return false
		case k == 1:
			i = canon.ScanString(in, i)
		case k == 3:
			i = blankString(in, i)
		default:
			i++
		}
		if i < 0 {
			return false
		}
	}
}

// blankString returns the index after the string of white space at in[i],
// or -1.
func blankString(in []byte, i int) int {
	for i++; i < len(in); i += 2 {
		if i = canon.SkipWS(in, i); i < len(in) && in[i] == '"' {
			return i + 1
		}
		if i+1 >= len(in) || in[i] != '\\' || strings.IndexByte("nrt", in[i+1]) < 0 {
			return -1
		}
	}
	return -1
}
