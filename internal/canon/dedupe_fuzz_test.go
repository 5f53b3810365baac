package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"testing"
	"unicode/utf8"
)

// canonTestSurrogate matches \u escapes of UTF-16 surrogates, which
// encoding/json decodes lossily (lone ones become U+FFFD).
var canonTestSurrogate = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

// canonTestShape reports the nesting depth of the valid JSON data and
// whether any object in it has duplicate keys.
func canonTestShape(data []byte) (depth int, dup bool) {
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // the next string token is a key
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return depth, dup
		}
		if err != nil {
			return depth, true // be conservative
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{obj: v == '{', keys: map[string]bool{}, key: true})
				depth = max(depth, len(stack))
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.obj && top.key {
				if top.keys[v] {
					dup = true
				}
				top.keys[v] = true
				top.key = false
				continue
			}
			if top != nil && top.obj {
				top.key = true
			}
		default:
			if top != nil && top.obj {
				top.key = true
			}
		}
	}
}

func FuzzHashArgs(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{"a":1,"b":[true,false,null]}`, `{"b":{"d":[1,2,{"f":1,"e":2}],"c":"x"},"a":0}`,
		`{"a":1,"a":2}`, `"\u0041\/\n\u00e9\ud83d\ude00"`, `"\ud800"`, `[1,1.0,1e0,10e-1,-0,0.0,1E+2,123456789012345678901234]`,
		`{"key with spaces":"<html>&amp;","\u2028":"\u2029"}`, "\"\xff\xfe\"", "{\"a\":1}\xff", `{"a":1`,
		`[[[[[[[[[[]]]]]]]]]]`, `{"x":{"y":{"z":{}}}}`, `1e99999999999999999999`, `-0.000000000000000000001`,
		` { "cmd" : "ls -la" , "timeout" : 30 , "env" : { "B" : "2" , "A" : "1" } } `,
		`{"b":1.50,"a":-0,"c":1E3,"d":"x\u0001","e":true,"f":null}`, `{"b":1,"a":2,"b":0}`, `{"z":"\/"}`,
		`{"a":{"b":[1,{"c":2,"c":1}],"b":[1,{"c":1}]},"a":{"b":[1]}}`, `{"\ud800":1,"\udbff\udfff":2,"\u00e9":3,"é":4}`,
		`{"b":{"y":1,"x":2},"b":{"x":2,"y":1},"a\/":[]}`, `{"a":1,"b":2,"a":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		h := hashArgs(data, nil)
		if !bytes.Equal(orig, data) {
			t.Fatal("hashArgs modified its input")
		}
		if h != hashArgs(data, nil) {
			t.Fatal("hashArgs is not deterministic")
		}
		// Hashes are persisted: every payload hashes as v0.1.0 hashed it,
		// except valid JSON over its 16 MiB limit (never a fuzz input).
		for _, ignore := range [][]string{nil, {"a", "b", ""}, {"\u00e9", "é", "\ufffd"}} {
			if got, want := hashArgs(data, ignore), v1Hash(data, ignore); got != want {
				t.Fatalf("hash of %q ignoring %q is %v, v0.1.0's was %v", data, ignore, got, want)
			}
		}
		topLevelString(data, []string{"a", "url"}, 1<<20)
		argURL(data)
		appendKeyNames(nil, data)
		if s := argsShape(data); !Tweaked(s, s) {
			t.Fatalf("shape %q of %q is not its own tweak", s, data)
		}

		form, canonical := canonTestForm(t, data, nil)
		if !json.Valid(data) {
			if len(bytes.TrimSpace(data)) > 0 && canonical {
				t.Fatalf("invalid JSON %q canonicalized to %q", data, form)
			}
			return
		}
		depth, dup := canonTestShape(data)
		if depth > canonMaxDepth {
			if canonical {
				t.Fatalf("too deep but canonicalized")
			}
			return
		}
		if !canonical {
			t.Fatalf("valid JSON %q hashed raw", data)
		}
		// The canonical form is valid JSON, a fixed point, and hashes
		// the same as the payload.
		if !json.Valid([]byte(form)) {
			t.Fatalf("canonical form %q of %q is not valid JSON", form, data)
		}
		if again, _ := canonTestForm(t, []byte(form), nil); again != form {
			t.Fatalf("canonical form not a fixed point: %q -> %q", form, again)
		}
		if hashArgs([]byte(form), nil) != h {
			t.Fatalf("canonical form %q hashes differently from %q", form, data)
		}
		// Re-indenting never changes the hash.
		var indented bytes.Buffer
		if err := json.Indent(&indented, data, "\t", "   "); err != nil {
			t.Fatal(err)
		}
		if hashArgs(indented.Bytes(), nil) != h {
			t.Fatalf("indent changed the hash of %q", data)
		}
		// Nor does a round trip through encoding/json, which sorts keys
		// and re-escapes strings but keeps numbers verbatim with
		// UseNumber, when it is lossless: valid UTF-8, no surrogate
		// escapes, no duplicate keys.
		if dup || !utf8.Valid(data) || canonTestSurrogate.Match(data) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		re, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if hashArgs(re, nil) != h {
			f, _ := canonTestForm(t, re, nil)
			t.Fatalf("re-marshal changed the hash of %q: %q vs %q", data, form, f)
		}
	})
}

func FuzzMask(f *testing.F) {
	for _, s := range []string{
		"", "open /tmp/a.txt: no such file or directory (line 12)",
		"2024-05-20T10:00:00.123+02:00 took 1.23s id 123e4567-e89b-12d3-a456-426614174000",
		"trace 4bf92f3577b34da6a3ce929d0e0e4736 at 10:00:00 in 2m3s, 5 seconds",
		`KeyError: 'user_42' "quoted" ` + "`x`", "GET https://x.org/a?b=1 failed: 503",
		`C:\x\y and ./a/b.py:12: call_HGn16KZh9o req-42ab`, "it's 'a' \"b' c\" d", "  MiXeD\t\nCase  ",
		"2024-05-20 10:00:00 2024-05-20", "1h2m3.5s 1.5h2m 5µs 5μs 5 ms", "<n> <str> <time>", "a1'b' x1\"y\"",
		"\xff\xfe 10:00:00\x00", "'" + string(make([]byte, 250)) + "'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := maskNoise(s)
		if n2 := maskNoise(n); n2 != n {
			t.Fatalf("maskNoise not idempotent: %q -> %q -> %q", s, n, n2)
		}
		e := maskError(s)
		if e2 := maskError(e); e2 != e {
			t.Fatalf("maskError not idempotent: %q -> %q -> %q", s, e, e2)
		}
		if DigestResult(s) != maskTestSum(false, n) {
			t.Fatalf("DigestResult differs from maskNoise for %q", s)
		}
		if DigestError(s) != maskTestSum(true, e) {
			t.Fatalf("DigestError differs from maskError for %q", s)
		}
	})
}
