package toolguard

import "github.com/toolguard/toolguard/internal/canon"

// A call that cannot change anything is not progress for other calls: a
// call whose arguments are an object of only blank strings (an empty shell
// command, {"command": ""}, {"path": " "}). It may succeed with a new
// result — an empty command's empty output — but it did nothing, so it
// does not move the turn's change counter, as a read-only tool's call does
// not. A call with no arguments at all ({} or none) is not blank: many
// tools act without arguments (submit, reset, next_page).

// blankArgs reports whether in is a JSON object with at least one member
// whose every value is a string of whitespace only (spaces, and the
// escapes \n, \r, \t). It stops at the first other value, so it costs a
// few bytes for almost every call; bad JSON is not blank.
func blankArgs(in []byte) bool {
	i := canon.SkipWS(in, 0)
	if i >= len(in) || in[i] != '{' {
		return false
	}
	for {
		if i = blankMember(in, i+1); i < 0 {
			return false // also "}" with no member after "{" or ","
		}
		switch in[i] {
		case ',':
		case '}':
			return canon.SkipWS(in, i+1) == len(in)
		default:
			return false
		}
	}
}

// blankMember reads a member with a blank value at in[i:] after white
// space, and returns the index of the next byte that is not white space,
// or -1.
func blankMember(in []byte, i int) int {
	if i = canon.SkipWS(in, i); i >= len(in) || in[i] != '"' {
		return -1
	}
	if i = canon.ScanString(in, i); i < 0 {
		return -1
	}
	if i = canon.SkipWS(in, i); i >= len(in) || in[i] != ':' {
		return -1
	}
	if i = canon.SkipWS(in, i+1); i >= len(in) || in[i] != '"' {
		return -1
	}
	if i = blankString(in, i); i < 0 {
		return -1
	}
	if i = canon.SkipWS(in, i); i >= len(in) {
		return -1
	}
	return i
}

// blankString returns the index after the string of white space at in[i],
// or -1.
func blankString(in []byte, i int) int {
	for i++; i < len(in) && in[i] != '"'; i++ {
		switch in[i] {
		case ' ', '\t', '\n', '\r':
		case '\\':
			if i+1 >= len(in) || in[i+1] != 'n' && in[i+1] != 'r' && in[i+1] != 't' {
				return -1
			}
			i++
		default:
			return -1
		}
	}
	if i >= len(in) {
		return -1
	}
	return i + 1
}
