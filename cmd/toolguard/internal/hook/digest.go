package hook

import (
	"crypto/sha256"
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// The session log keeps no raw arguments or results (they may hold
// secrets). Each call is kept in a stand-in form that the Tracker, fed it
// again, decides exactly as it decided the real call in every respect the
// rules read:
//
//   - "_h": a hash of the canonical arguments (query left out), so equal
//     calls stay equal and different ones stay different;
//   - the query of a query-like argument (query, search_query, q, text,
//     question, prompt), normalized as the similar-query rule reads it
//     (lower case, words and single spaces, at most 256 runes), with long
//     random-looking words redacted: the similar-query rule compares words;
//   - "_u": the first http(s) URL's host and path, without user, query or
//     fragment: the fetch rule counts fetches of one host and path;
//   - "_s": the arguments' shape with every particular masked (quoted text,
//     URLs, paths, ids, numbers, long words): the failure rule compares the
//     words of a failed call's arguments to spot a tweaked retry.
//
// A result is kept as a digest of its text with volatile noise masked
// (timestamps, UUIDs, long hex ids, durations), a failure's as a digest of
// its text with particulars masked; both spelled in letters, which the
// Tracker's own masking leaves as they are.

// queryArgKeys are the argument keys a search query is read from, in the
// Tracker's order.
var queryArgKeys = []string{"query", "search_query", "q", "text", "question", "prompt"}

// standIn returns the stand-in arguments for a call's arguments.
func standIn(args json.RawMessage) json.RawMessage {
	var m map[string]any
	if len(args) == 0 || json.Unmarshal(args, &m) != nil || m == nil {
		if len(args) == 0 {
			return nil
		}
		// Not an object: keep only its hash and shape.
		out, _ := json.Marshal(map[string]string{"_h": "h0" + letters(sha(string(args)), 20), "_s": maskShape(string(args))})
		return out
	}
	out := map[string]any{}
	for _, k := range queryArgKeys {
		if s, ok := m[k].(string); ok {
			out[k] = normalizeQuery(s)
			delete(m, k)
			break
		}
	}
	if u := firstURL(args); u != "" {
		out["_u"] = u
	}
	canon, _ := json.Marshal(m)                        // maps marshal with sorted keys
	out["_h"] = "h0" + letters(sha(string(canon)), 20) // masked as an id in the shape the failure rule compares
	var b strings.Builder
	writeShape(&b, m)
	out["_s"] = maskShape(b.String())
	res, _ := json.Marshal(out)
	return res
}

// firstURL returns "https://host/path" for the first top-level string of
// args, in document order, that is an absolute http(s) URL.
func firstURL(args json.RawMessage) string {
	dec := json.NewDecoder(strings.NewReader(string(args)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return ""
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			continue
		}
		low := strings.ToLower(s)
		if !strings.HasPrefix(low, "http://") && !strings.HasPrefix(low, "https://") {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			continue
		}
		p := u.Path
		if p == "" {
			p = "/"
		}
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + p
	}
	return ""
}

// writeShape writes the names and values of a decoded JSON value, object
// members in sorted order.
func writeShape(b *strings.Builder, v any) {
	if b.Len() > maxShapeInput {
		return // the shape kept is far shorter: huge arguments stop here
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(k)
			b.WriteString(": ")
			writeShape(b, v[k])
			b.WriteByte(' ')
		}
	case []any:
		for _, x := range v {
			writeShape(b, x)
			b.WriteByte(' ')
		}
	case string:
		b.WriteString(v)
	case nil:
		b.WriteString("null")
	default:
		j, _ := json.Marshal(v)
		b.Write(j)
	}
}

var (
	shapeQuoted = regexp.MustCompile("'[^']{0,200}'|\"[^\"]{0,200}\"|`[^`]{0,200}`")
	shapeURL    = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://\S+`)
)

// maxShape bounds the shape kept for one call, maxShapeInput the text it
// is made from.
const (
	maxShape      = 1024
	maxShapeInput = 64 << 10
)

// maskShape masks the particulars of an argument shape word by word:
// quoted text becomes 's', URLs u://x, paths /p, words mixing letters
// and digits (and long words) a1, numbers 1. Plain words (commands, flags)
// stay, lower-cased.
func maskShape(s string) string {
	if len(s) > maxShapeInput {
		s = s[:maxShapeInput]
	}
	s = shapeQuoted.ReplaceAllString(s, " 's' ")
	s = shapeURL.ReplaceAllString(s, " u://x ")
	words := strings.Fields(strings.ToLower(s))
	for i, w := range words {
		words[i] = maskWord(w)
	}
	out := strings.Join(words, " ")
	if len(out) > maxShape {
		out = out[:maxShape]
		if i := strings.LastIndexByte(out, ' '); i > 0 {
			out = out[:i]
		}
	}
	return out
}

func maskWord(w string) string {
	if w == "'s'" || w == "u://x" {
		return w
	}
	if strings.ContainsAny(w, `/\`) {
		return "/p"
	}
	var letter, digit, other bool
	for _, r := range w {
		switch {
		case unicode.IsLetter(r):
			letter = true
		case unicode.IsDigit(r):
			digit = true
		case r == '-' || r == '_' || r == '.' || r == ':' || r == '=' || r == ',':
		default:
			other = true
		}
	}
	switch {
	case letter && digit, len(w) > 24:
		return "a1"
	case digit && !letter:
		return "1"
	case other && !letter:
		return "#"
	}
	return w
}

// normalizeQuery is the similar-query rule's normalization: lower case,
// only letters, digits, '_' and single spaces, at most 256 runes. Words of
// 20 or more characters mixing letters and digits read "redacted".
func normalizeQuery(s string) string {
	var b strings.Builder
	space := false
	n := 0
	for _, r := range strings.ToLower(s) {
		if n >= 256 {
			break
		}
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
			if space && b.Len() > 0 {
				b.WriteByte(' ')
				n++
			}
			space = false
			b.WriteRune(r)
			n++
		case unicode.IsSpace(r):
			space = true
		}
	}
	words := strings.Fields(b.String())
	for i, w := range words {
		if len(w) >= 20 && strings.ContainsAny(w, "0123456789") && strings.IndexFunc(w, unicode.IsLetter) >= 0 {
			words[i] = "redacted"
		}
	}
	return strings.Join(words, " ")
}

var noisePatterns = []*regexp.Regexp{
	regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?`),
	regexp.MustCompile(`\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b`),
	regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`),
	regexp.MustCompile(`(?i)\b[0-9a-f]{16,}\b`),
	regexp.MustCompile(`\b\d+(\.\d+)?\s?(ns|us|µs|ms|s|m|h|sec|secs|seconds?|milliseconds?)\b`),
}

var errorPatterns = []*regexp.Regexp{
	shapeQuoted,
	shapeURL,
	regexp.MustCompile(`[\w.~:+@%=-]*[/\\][\w.~:+@%=/\\-]*`),
	regexp.MustCompile(`\b[\w-]*(\d[A-Za-z]|[A-Za-z]\d)[\w-]*\b`),
	regexp.MustCompile(`\d+(\.\d+)?`),
}

// maxDigestInput bounds the text a digest reads; the rest is hashed
// unmasked (its length included).
const maxDigestInput = 1 << 20

// resultToken is the stand-in of a result: its digest after masking
// volatile noise, in letters.
func resultToken(s string) string {
	if s == "" {
		return ""
	}
	head, tail := s, ""
	if len(s) > maxDigestInput {
		head, tail = s[:maxDigestInput], s[maxDigestInput:]
	}
	for _, re := range noisePatterns {
		head = re.ReplaceAllString(head, "<n>")
	}
	return "r" + letters(sha(head+"\x00"+tail), 24)
}

// errorToken is the stand-in of a failure's text: its digest after
// masking particulars (quoted text, URLs, paths, ids, numbers) and case.
func errorToken(s string) string {
	head := s
	if len(head) > maxDigestInput {
		head = head[:maxDigestInput]
	}
	head = strings.Join(strings.Fields(strings.ToLower(head)), " ")
	for _, re := range noisePatterns {
		head = re.ReplaceAllString(head, "<n>")
	}
	for _, re := range errorPatterns {
		head = re.ReplaceAllString(head, "<x>")
	}
	return "e" + letters(sha(head), 24)
}

func sha(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// letters spells the first n*5 bits of h in the letters a..z (32 of them
// would need digits, which the Tracker's masking reads as ids).
func letters(h [32]byte, n int) string {
	const abc = "abcdefghijklmnopqrstuvwxyzbcdfgh" // 32 symbols, 5 bits each
	b := make([]byte, n)
	var acc uint64
	bits := 0
	j := 0
	for i := range b {
		for bits < 5 {
			acc = acc<<8 | uint64(h[j%len(h)])
			j++
			bits += 8
		}
		bits -= 5
		b[i] = abc[(acc>>uint(bits))&31]
	}
	return string(b)
}
