package hook

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"unicode"

	"github.com/toolguard/toolguard/internal/canon"
)

// The session log keeps no raw arguments or results (they may hold
// secrets). Each call is kept in a stand-in form that the Tracker, fed it
// again, decides as it decided the real call in every respect the rules
// read:
//
//   - "_h": a hash of the canonical arguments (query left out), so equal
//     calls stay equal and different ones stay different;
//   - the query of a query-like argument (query, search_query, q, text,
//     question, prompt), normalized as the similar-query rule reads it
//     (lower case, words and single spaces, at most 256 runes), with long
//     random-looking words redacted: the similar-query rule compares words;
//   - "_u": the first http(s) URL's host and path, without user, query or
//     fragment: the fetch rule counts fetches of one host and path;
//   - "_s": the arguments' shape (query left out) as the failure rule
//     compares it to spot a tweaked retry, computed by the core's own code
//     (internal/canon): names and values with every particular masked.
//
// A result is kept as the SHA-256 of its text with the Tracker's volatile
// noise masked, a failure's as the SHA-256 of its text masked as the
// Tracker's failure signature masks it, both by the core's own masking;
// both spelled in letters, which the Tracker's masking leaves as they are.
// So two results or failures the Tracker reads alike keep equal tokens,
// and different ones different tokens.
//
// Logs written before the core's masking was used here (toolguard before
// this change) hold tokens and shapes of the older, coarser masking; such
// lines are replayed as they are: a failure or result of an old line never
// equals one of a new line, which can only let a call run that the
// Tracker would have stopped, never stop one it would have let run.

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
		return marshalPlain(map[string]string{"_h": "h0" + letters(sha(string(args)), 20), "_s": argsShape(args)})
	}
	out := map[string]any{}
	shapeOf := args
	for _, k := range queryArgKeys {
		if s, ok := m[k].(string); ok {
			out[k] = normalizeQuery(s)
			delete(m, k)
			shapeOf = nil // the shape of the other arguments
			break
		}
	}
	if u := firstURL(args); u != "" {
		out["_u"] = u
	}
	rest, _ := json.Marshal(m)                        // maps marshal with sorted keys
	out["_h"] = "h0" + letters(sha(string(rest)), 20) // masked as an id in the shape the failure rule compares
	if shapeOf == nil {
		shapeOf = rest
	}
	out["_s"] = argsShape(shapeOf)
	return marshalPlain(out)
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

// resultToken is the stand-in of a result: the digest of its text with
// the Tracker's volatile noise masked, in letters.
func resultToken(s string) string {
	if s == "" {
		return ""
	}
	return "r" + letters(maskedSHA(s, false), 24)
}

// errorToken is the stand-in of a failure's text: the digest of its text
// masked as the Tracker's failure signature masks it, in letters.
func errorToken(s string) string {
	return "e" + letters(maskedSHA(s, true), 24)
}

// encodeLine is json.Marshal followed by a newline, without escaping '<',
// '>' and '&': the placeholders of the core's masking in a stand-in, such
// as "<n>", would take 12 bytes each.
func encodeLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// marshalPlain is encodeLine without the newline, for a value that cannot
// fail to marshal (a map of strings).
func marshalPlain(v any) []byte {
	b, _ := encodeLine(v)
	return bytes.TrimSuffix(b, []byte("\n"))
}

func sha(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// maskedSHA returns the SHA-256 of s masked by the core's own masking
// (canon.Mask): its volatile noise masked as in the Tracker's result digests,
// or, if err is set, as the Tracker's failure signature masks it. Unlike
// those per-process digests, it is stable across processes, so that it can
// be kept on disk.
func maskedSHA(s string, err bool) (sum [32]byte) {
	h := sha256.New()
	canon.Mask(s, err, func(p string) { io.WriteString(h, p) })
	h.Sum(sum[:0])
	return sum
}

// argsShape returns the core's shape of the arguments args (canon.Args.Shape).
func argsShape(args []byte) string {
	var c canon.Args
	c.Scan(args)
	return c.Shape()
}

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
