package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// canonTestForm returns the canonical form hashArgs hashes for args, or
// false if args is hashed as raw bytes. It checks that v0.1.0's
// canonicalizer (canon_v1_test.go) wrote the same for every payload up to
// its size limit.
func canonTestForm(t testing.TB, args []byte, ignore []string) (string, bool) {
	t.Helper()
	c := new(Args)
	if c.Scan(args); !c.ok {
		if len(args) <= v1MaxBytes {
			if form, ok := v1Form(args, ignore); ok {
				t.Fatalf("%q is hashed raw, v0.1.0 canonicalized it to %q", args, form)
			}
		}
		return "", false
	}
	c.mat = 1 // write the prefix and the form to c.vals
	c.Hash(ignore)
	form := strings.TrimPrefix(string(c.vals), canonPrefixJSON)
	if len(args) <= v1MaxBytes {
		if old, ok := v1Form(args, ignore); !ok || old != form {
			t.Fatalf("canonical form of %q is %q, v0.1.0's was %q (canonical: %v)", args, form, old, ok)
		}
	}
	return form, true
}

// canonTestSum hashes prefix+b the slow way.
func canonTestSum(prefix, b string) Hash {
	sum := sha256.Sum256([]byte(prefix + b))
	return Hash(sum[:16])
}

func TestHashString(t *testing.T) {
	var h Hash
	for i := range h {
		h[i] = byte(i * 17)
	}
	assert.Equal(t, "00112233445566778899aabbccddeeff", h.String())
	assert.Len(t, hashArgs([]byte(`{"a":1}`), nil).String(), 32)
}

func TestHashArgsEqual(t *testing.T) {
	groups := []struct {
		name string
		in   []string
	}{
		{"no arguments", []string{"", " \n\t\r ", "null", " null ", "{}", "{ }", "{\n}"}},
		{"key order", []string{`{"a":1,"b":2}`, `{"b":2,"a":1}`}},
		{"key order at depth 3", []string{
			`{"x":{"y":{"c":3,"a":1,"b":2}},"w":0}`,
			`{"w":0,"x":{"y":{"b":2,"c":3,"a":1}}}`,
			` { "w" : 0 , "x" : { "y" : { "a" : 1 , "b" : 2 , "c" : 3 } } } `,
		}},
		{"whitespace", []string{`[1,2,{"a":"b c"}]`, " [ 1 ,\n\t2 ,\r\n{ \"a\" :\"b c\" } ] "}},
		{"string escapes", []string{`"A/é😀\n\"\\"`, `"\u0041\/\u00e9\ud83d\ude00\u000a\u0022\u005c"`, `"\u0041\/\u00E9\uD83D\uDE00\n\"\\"`}},
		{"control escapes", []string{`"\u0001\b\t"`, `"\u0001\u0008\u0009"`, `"\u0001\u0008\t"`}},
		{"escaped keys", []string{`{"\u0062":1,"a":2}`, `{"a":2,"b":1}`}},
		{"keys with quote and bang", []string{`{"a\"":1,"a!":2,"a":3}`, `{"a":3,"a!":2,"a\u0022":1}`, `{"a!":2,"a":3,"a\"":1}`}},
		{"one", []string{"1", "1.0", "1e0", "10e-1", "0.1e1", "100e-2", "1.000", "1E0", "1e+0", "0.00001e5"}},
		{"hundred", []string{"100", "1e2", "1E2", "1e+2", "10e1", "100.0", "0.1e3", "1000e-1"}},
		{"zero", []string{"0", "-0", "0.0", "-0.0", "0e10", "-0.0e-5", "0E-0"}},
		{"negative fraction", []string{"-1.5", "-15e-1", "-0.15e1", "-1.50"}},
		{"small", []string{"0.000001", "1e-6", "10e-7"}},
		{"smaller", []string{"1e-7", "0.0000001", "0.1e-6"}},
		{"big", []string{"1e21", "1000000000000000000000", "1e+21", "10e20"}},
		{"long integer", []string{"12345678901234567890123", "1.2345678901234567890123e22"}},
		{"huge exponent", []string{"1e100000000000000000000", "10e99999999999999999999", "0.1e100000000000000000001"}},
		{"tiny exponent", []string{"1e-100000000000000000000", "10e-100000000000000000001"}},
		{"numbers in arrays", []string{`[1,2.50,3e1]`, `[1.0,2.5,30]`}},
		{"duplicate keys", []string{`{"a":1,"a":2}`, `{"a":2,"a":1}`, `{ "a" : 2.0 , "a" : 1 }`}},
		{"duplicate nested", []string{`{"a":{"y":1,"x":2},"a":[1]}`, `{"a":[1],"a":{"x":2,"y":1}}`}},
		{"invalid utf-8 in string", []string{"\"a\xffb\"", " \"a\xffb\" "}},
		{"literals", []string{`[true,false,null]`, "[ true , false , null ]"}},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			want := hashArgs([]byte(g.in[0]), nil)
			require.NotEqual(t, v1RawHash([]byte(g.in[0])), want, "%q must be canonical", g.in[0])
			for _, s := range g.in[1:] {
				assert.Equal(t, want, hashArgs([]byte(s), nil), "%q vs %q", g.in[0], s)
			}
		})
	}
	assert.Equal(t, hashArgs(nil, nil), hashArgs([]byte("{}"), nil))
}

func TestHashArgsNotEqual(t *testing.T) {
	pairs := [][2]string{
		{`{"a":1}`, `{"a":2}`},
		{`{"a":1}`, `{"A":1}`},
		{`{"a":1}`, `{"a":"1"}`},
		{`{"a":1}`, `{"a":1,"b":null}`},
		{`{"a":null}`, `{}`},
		{`[1,2]`, `[2,1]`},
		{`[]`, `{}`},
		{`[]`, `null`},
		{`""`, ``},
		{`0`, `null`},
		{`"a"`, `"a "`},
		{`"\u0000"`, `""`},
		{"\"\xff\"", "\"\xfe\""},
		{"\"\xef\xbf\xbd\"", `"\ud800"`}, // a lone surrogate is not U+FFFD
		{`12345678901234567890`, `12345678901234567891`},
		{`0.1`, `0.10000000000000001`}, // equal as float64
		{`1`, `1.0000000000000000000000001`},
		{`1e400`, `1e401`},
		{`1e-400`, `0`},
		{`-1`, `1`},
		{`1e100000000000000000000`, `1e100000000000000000001`},
		{`{"a":1,"a":1}`, `{"a":1}`},
		{`{"a":1,"a":2}`, `{"a":2,"a":2}`},
		{`{"a":{"b":1}}`, `{"a":{"b":1},"b":1}`},
		{`{"x":{"y":{"z":1}}}`, `{"x":{"y":{"z":2}}}`},
		{`true`, `"true"`},
		{`{"a\"":1}`, `{"a\\":1}`},
	}
	for _, p := range pairs {
		assert.NotEqual(t, hashArgs([]byte(p[0]), nil), hashArgs([]byte(p[1]), nil), "%q vs %q", p[0], p[1])
	}
}

func TestHashArgsNumbersByValue(t *testing.T) {
	nums := []string{
		"0", "-0", "1", "-1", "1.0", "10e-1", "0.1", "1e-1", "0.10", "0.01", "1e-2", "100", "1e2",
		"123.456", "1.23456e2", "123456e-3", "-123.456", "1e20", "100000000000000000000", "1e21",
		"1e22", "10000000000000000000000", "0.000001", "1e-6", "1e-7", "0.0000001", "5e-324",
		"2.2250738585072014e-308", "1.7976931348623157e308", "12345678901234567890",
		"12345678901234567891", "9007199254740993", "9007199254740992", "0.30000000000000004", "0.3",
	}
	for _, a := range nums {
		for _, b := range nums {
			ra, _ := new(big.Rat).SetString(a)
			rb, _ := new(big.Rat).SetString(b)
			require.NotNil(t, ra, a)
			require.NotNil(t, rb, b)
			eq := ra.Cmp(rb) == 0
			assert.Equal(t, eq, hashArgs([]byte(a), nil) == hashArgs([]byte(b), nil), "%s vs %s", a, b)
		}
	}
}

func TestHashArgsCanonicalForm(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"b":1,"a":[1.0,2e2,{"z":"\u0041","y":null}]}`, `{"a":[1,200,{"y":null,"z":"A"}],"b":1}`},
		{` [ 1 , "x" ] `, `[1,"x"]`},
		{`"\u0001\u001F\/\u2028"`, "\"\\u0001\\u001f/\u2028\""},
		{`"\b\f\n\r\t\"\\"`, `"\b\f\n\r\t\"\\"`},
		{`{"a":{"c":3,"b":2},"a":0}`, `{"a":0,"a":{"b":2,"c":3}}`},
		{`1.5e1`, `15`},
		{`-0.0e5`, `0`},
		{`1E+21`, `1e21`},
		{`123456789012345678901`, `123456789012345678901`},
		{`1234567890123456789012`, `1.234567890123456789012e21`},
		{`0.0000001`, `1e-7`},
		{`0.000001`, `0.000001`},
		{`123.4560`, `123.456`},
		{`-12.5e-3`, `-0.0125`},
		{`1e99999999999999999999`, `1e99999999999999999999`},
		{`12.5e-99999999999999999999`, `1.25e-99999999999999999998`},
		{`null`, `{}`},
		{``, `{}`},
	}
	for _, c := range cases {
		got, ok := canonTestForm(t, []byte(c.in), nil)
		require.True(t, ok, c.in)
		assert.Equal(t, c.want, got, c.in)
		assert.Equal(t, canonTestSum(canonPrefixJSON, c.want), hashArgs([]byte(c.in), nil), c.in)
		// The canonical form is a fixed point and takes the in-place path.
		again, ok := canonTestForm(t, []byte(got), nil)
		require.True(t, ok)
		assert.Equal(t, got, again)
	}
}

// TestHashArgsInPlace checks that a payload already in canonical form is
// hashed as it is, without reordering anything.
func TestHashArgsInPlace(t *testing.T) {
	canonical := []string{
		`{}`, `[]`, `{"a":1,"b":[true,false,null],"c":{"x":"y"}}`, `"A\n\"\\\u0001"`, `[1,-2,0.5,1e21,1.5e-7,100]`,
		`{"":0,"a":{"":[]},"b\"":1,"b\\":2}`, `{"\u0001":1,"a":2}`, "\"\xff\"", `12345678901234567890`,
	}
	// Nothing nested is reordered: every nested object's members are
	// listed in the order they are written in the payload, without
	// duplicate keys to order by value.
	nested := func(c *Args) (n int) {
		for _, o := range c.objs {
			ks := c.keys[o.off : o.off+o.n]
			for k := 1; int(o.start) != SkipWS(c.in, 0) && k < len(ks); k++ {
				if ks[k] < ks[k-1] || c.cmpKeys(ks[k-1], ks[k]) == 0 {
					n++
					break
				}
			}
		}
		return n
	}
	for _, s := range canonical {
		c := new(Args)
		c.Scan([]byte(s))
		require.True(t, c.ok, s)
		assert.Zero(t, nested(c), s)
		form, _ := canonTestForm(t, []byte(s), nil)
		assert.Equal(t, s, form)
		assert.Equal(t, canonTestSum(canonPrefixJSON, s), hashArgs([]byte(s), nil), s)
	}
	notCanonical := []string{
		`null`, `{ }`, `{"b":1,"a":2}`, `"\u0041"`, `"\/"`, `"\u000a"`, `"\u001F"`,
		`1.0`, `-0`, `1E2`, `1e+2`, `0.0000001`, `1234567890123456789012`, `[1, 2]`, `{"a":1`, `{"a":1}x`,
	}
	for _, s := range notCanonical {
		form, ok := canonTestForm(t, []byte(s), nil)
		assert.False(t, ok && form == s, s)
	}
	c := new(Args)
	c.Scan([]byte(`{"a":{"b":1,"a":2}}`))
	require.True(t, c.ok)
	assert.Equal(t, 1, nested(c)) // members out of order are listed
	c.Scan([]byte(`{"a":[{"a":1,"a":1}]}`))
	require.True(t, c.ok)
	assert.Equal(t, 1, nested(c)) // duplicate keys are ordered by value
}

func TestHashArgsIgnore(t *testing.T) {
	ignore := []string{"request_id", "ts"}
	a := hashArgs([]byte(`{"cmd":"ls","request_id":"r1","ts":5}`), ignore)
	assert.Equal(t, a, hashArgs([]byte(`{"request_id":"r2","cmd":"ls"}`), ignore))
	assert.Equal(t, a, hashArgs([]byte(`{"cmd":"ls"}`), ignore))
	assert.Equal(t, a, hashArgs([]byte(`{"cmd":"ls","request_\u0069d":{"deep":[1,2]}}`), ignore))
	assert.NotEqual(t, a, hashArgs([]byte(`{"cmd":"ls","request_id":"r1"}`), nil))
	// Only the top level.
	assert.NotEqual(t,
		hashArgs([]byte(`{"x":{"ts":1}}`), ignore),
		hashArgs([]byte(`{"x":{"ts":2}}`), ignore))
	// Dropping every key leaves no arguments.
	assert.Equal(t, hashArgs(nil, nil), hashArgs([]byte(`{"ts":1}`), ignore))
	// Duplicates of an ignored key are all dropped.
	assert.Equal(t, a, hashArgs([]byte(`{"ts":1,"cmd":"ls","ts":2}`), ignore))
	// Not applied to non-objects or raw payloads.
	assert.NotEqual(t, hashArgs([]byte(`["ts"]`), ignore), hashArgs([]byte(`[]`), ignore))
	assert.Equal(t, v1RawHash([]byte(`{"ts":1`)), hashArgs([]byte(`{"ts":1`), ignore))
}

func TestHashArgsInvalidIsRaw(t *testing.T) {
	invalid := []string{
		`{"a":1`, `{"a":1}}`, `{"a":1} x`, `{"a":1}{}`, `[1,]`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a" 1}`,
		`{1:2}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `nul`, `nulll`, `True`, `"abc`, `"a\x"`, `"\u12g4"`,
		"\"a\x01b\"", "\xff{}", "{}\xff", "\xef\xbb\xbf{}", `'a'`, `[1 2]`, `{"a":1 "b":2}`, `NaN`, `Infinity`,
		`[`, `]`, `}`, `"\`, "\x00",
	}
	for _, s := range invalid {
		h := hashArgs([]byte(s), nil)
		assert.Equal(t, v1RawHash([]byte(s)), h, "%q", s)
		_, ok := canonTestForm(t, []byte(s), nil)
		assert.False(t, ok, "%q", s)
	}
	// A raw hash never equals the canonical hash of the same bytes.
	for _, s := range []string{`{}`, `{"a":1}`, `[1,2]`, `"x"`} {
		assert.NotEqual(t, v1RawHash([]byte(s)), hashArgs([]byte(s), nil), s)
	}
}

func TestHashArgsDepth(t *testing.T) {
	deep := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	ok := deep(canonMaxDepth)
	assert.NotEqual(t, v1RawHash(ok), hashArgs(ok, nil))
	_, canonical := canonTestForm(t, ok, nil)
	assert.True(t, canonical)
	tooDeep := deep(canonMaxDepth + 1)
	assert.Equal(t, v1RawHash(tooDeep), hashArgs(tooDeep, nil))
	objs := []byte(strings.Repeat(`{"a":`, canonMaxDepth+1) + "1" + strings.Repeat("}", canonMaxDepth+1))
	assert.Equal(t, v1RawHash(objs), hashArgs(objs, nil))

	for _, payload := range [][]byte{
		bytes.Repeat([]byte("["), 200000),
		deep(200000),
		bytes.Repeat([]byte(`{"a":`), 200000),
	} {
		start := time.Now()
		assert.Equal(t, v1RawHash(payload), hashArgs(payload, nil))
		assert.Less(t, time.Since(start), 2*time.Second)
		_, ok := topLevelString(payload, []string{"a"}, 1<<20)
		assert.False(t, ok)
		assert.Empty(t, appendKeyNames(nil, payload))
	}
}

func TestHashArgsLarge(t *testing.T) {
	// An 8 MB payload: canonicalized, not raw.
	var b bytes.Buffer
	b.WriteString(`{"z":[`)
	for i := 0; b.Len() < 8<<20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"s":"line %d \u00e9 \"q\"","n":%d.50,"k":[true,null]}`, i, i)
	}
	b.WriteString(`],"a":1}`)
	payload := b.Bytes()
	h := hashArgs(payload, nil)
	assert.NotEqual(t, v1RawHash(payload), h)
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, payload, "", "  "))
	assert.Equal(t, h, hashArgs(indented.Bytes(), nil))
}

func TestHashArgsDoesNotModifyInput(t *testing.T) {
	in := []byte(`{"b":{"d":1,"c":"\u0041"},"a":[3e0]}`)
	orig := bytes.Clone(in)
	hashArgs(in, []string{"b"})
	assert.Equal(t, orig, in)
}

func TestHashArgsConcurrent(t *testing.T) {
	payloads := [][]byte{
		[]byte(`{"b":2,"a":1}`), []byte(`[1,2,3]`), []byte(`{"x":{"z":1,"y":2}}`), []byte(`{"a":1`),
	}
	want := make([]Hash, len(payloads))
	for i, p := range payloads {
		want[i] = hashArgs(p, nil)
	}
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 500; i++ {
				k := (i + g) % len(payloads)
				if hashArgs(payloads[k], nil) != want[k] {
					t.Error("hash changed under concurrency")
					return
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}

// canonTestRace reports whether the race detector is on; it makes
// sync.Pool drop items at random, so pooled code allocates.
func canonTestRace() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

func TestHashArgsAllocs(t *testing.T) {
	if canonTestRace() {
		t.Skip("sync.Pool drops items under the race detector")
	}
	payloads := []string{
		`{"command":"ls -la /tmp","timeout":30,"cwd":"/home/user"}`,
		`{"query":"weather in \u00c9vry","units":"metric","days":3.0,"opts":{"z":1,"a":[1,2,{"q":null}]}}`,
		`{"a":1,"a":2,"b":{"y":"\/","x":1e3}}`,
		"{\n  \"path\": \"/etc/hosts\",\n  \"lines\": [1, 2, 3]\n}",
		`{"request_id":"abc","cmd":"x"}`,
	}
	ignore := []string{"request_id"} // a policy's list, made once
	for _, p := range payloads {
		b := []byte(p)
		hashArgs(b, ignore)
		allocs := testing.AllocsPerRun(200, func() { hashArgs(b, ignore) })
		assert.Zero(t, allocs, p)
	}
}

// canonTestLinearUnits are argument fragments that a scan which goes back
// over what it read would make slow: nesting, duplicate keys, escapes,
// numbers, spaces.
var canonTestLinearUnits = []string{
	`{"b":{"d":1,"c":2},"a":0},`, `{"a":1,"a":[1],"a":{"x":1}},`, `"\u0041",`, `1.5e3,`,
	`[[[[1]]]],`, `{"k":"v"} , `, `"x",`,
}

// TestHashArgsLinearTime hashes each fragment repeated to 1 MiB and checks
// the result against the same arguments indented. It measures no time: a
// scan quadratic in its input takes hours here and fails at the package's
// -timeout. The time per byte at 16 KiB and 1 MiB, equal for a linear
// scan, is BenchmarkHashArgsScaling. Under the race detector, which makes
// each byte cost far more, the inputs are 64 KiB (.ci/run runs the test
// without it too).
func TestHashArgsLinearTime(t *testing.T) {
	size := 1 << 20
	if raceEnabled {
		size = 64 << 10
	}
	for _, u := range canonTestLinearUnits {
		payload := []byte("[" + strings.Repeat(u, size/len(u)) + "0]")
		var indented bytes.Buffer
		require.NoError(t, json.Indent(&indented, payload, "", " "), "%q", u)
		assert.Equal(t, hashArgs(payload, nil), hashArgs(indented.Bytes(), nil), "%q", u)
	}
}

// BenchmarkHashArgsScaling hashes each fragment of canonTestLinearUnits
// repeated to 16 KiB and to 1 MiB: the MB/s of the two sizes are about
// equal for a linear scan (a quadratic one is 64 times slower at 1 MiB).
//
//	go test -run '^$' -bench HashArgsScaling .
func BenchmarkHashArgsScaling(b *testing.B) {
	for i, u := range canonTestLinearUnits {
		for _, size := range []int{16 << 10, 1 << 20} {
			payload := []byte("[" + strings.Repeat(u, size/len(u)) + "0]")
			b.Run(fmt.Sprintf("unit%d/%dKiB", i, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(payload)))
				for b.Loop() {
					hashArgs(payload, nil)
				}
			})
		}
	}
}

func TestTopLevelString(t *testing.T) {
	cases := []struct {
		in   string
		keys []string
		want string
		ok   bool
	}{
		{`{"path":"/etc/hosts"}`, []string{"path"}, "/etc/hosts", true},
		{`{"file":"a","path":"b"}`, []string{"path", "file"}, "b", true},
		{`{"path":1,"file":"a"}`, []string{"path", "file"}, "a", true},
		{`{"path":{"x":"y"},"file":"a"}`, []string{"path", "file"}, "a", true},
		{`{"x":{"path":"nested"}}`, []string{"path"}, "", false},
		{`{"p\u0061th":"\u0041\n\ud83d\ude00"}`, []string{"path"}, "A\n😀", true},
		{`{"path":"a","path":"b"}`, []string{"path"}, "b", true},
		{`{"path":"a","path":null}`, []string{"path"}, "", false},
		{`{"path":null}`, []string{"path"}, "", false},
		{`{"path":""}`, []string{"path"}, "", true},
		{`{"path":"x"}`, nil, "", false},
		{`{"path":"x"`, []string{"path"}, "", false},
		{`{"path":"x"} trailing`, []string{"path"}, "", false},
		{`["path","x"]`, []string{"path"}, "", false},
		{`"path"`, []string{"path"}, "", false},
		{``, []string{"path"}, "", false},
		{`{"path":"x","bad":[1,}`, []string{"path"}, "", false},
		{` { "cmd" : [1, {"a": "b"}] , "path" : "ok" } `, []string{"path"}, "ok", true},
	}
	for _, c := range cases {
		got, ok := topLevelString([]byte(c.in), c.keys, 1<<20)
		assert.Equal(t, c.ok, ok, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	args := []byte(`{"nested":{"a":[1,2,3,{"b":"c"}]},"path":"/tmp/x"}`)
	if !canonTestRace() { // sync.Pool drops items under the race detector
		assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { topLevelString(args, []string{"path"}, 1<<20) }), 1.0)
	}
	// Cut to max bytes, escapes decoded first.
	for _, in := range []string{`{"q":"abcdef"}`, `{"q":"\u0061\u0062\u0063def"}`, `{"q":"ab\u00e9f"}`} {
		got, ok := topLevelString([]byte(in), []string{"q"}, 3)
		assert.True(t, ok)
		assert.Equal(t, map[bool]string{true: "ab\xc3", false: "abc"}[strings.Contains(in, "00e9")], got, in)
	}
}

func TestArgURL(t *testing.T) {
	cases := []struct {
		in, host, path string
		ok             bool
	}{
		{`{"url":"https://Example.com/a/b?q=1#f"}`, "example.com", "/a/b", true},
		{`{"url":"http://user:pw@Example.COM:8080"}`, "example.com:8080", "/", true},
		{`{"q":"not a url","u":"HTTPS://x.org/p"}`, "x.org", "/p", true},
		{`{"a":"ftp://x.org/p","b":"http://y.org/"}`, "y.org", "/", true},
		{`{"a":"https:\/\/esc.example\/p%20q"}`, "esc.example", "/p q", true},
		{`{"a":1,"b":{"url":"http://nested.example"}}`, "", "", false},
		{`{"a":"http://"}`, "", "", false},
		{`{"a":"/relative/path"}`, "", "", false},
		{`{"a":"http://[::1]:80/x"}`, "[::1]:80", "/x", true},
		{`{"a":"http://x.org"`, "", "", false},
		{`["http://x.org"]`, "", "", false},
		{`not json`, "", "", false},
		{`{"a":"http://bad host/"}`, "", "", false},
	}
	for _, c := range cases {
		host, path, ok := argURL([]byte(c.in))
		assert.Equal(t, c.ok, ok, c.in)
		assert.Equal(t, c.host, host, c.in)
		assert.Equal(t, c.path, path, c.in)
	}
}

func TestAppendKeyNames(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"timeout":30,"command":"ls"}`, "command,timeout"},
		{`{"b":1,"a":{"z":1},"b":2}`, "a,b"},
		{`{}`, ""},
		{`[]`, ""},
		{`{"a":1`, ""},
		{`{"a":1} x`, ""},
		{`null`, ""},
		{``, ""},
		{`{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1}`, "k1,k2,k3,k4,k5,k6,k7,k8"},
		{`{"k9":1,"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k0":1}`, "k0,k1,k2,k3,k4,k5,k6,k7,…"},
		{`{"` + strings.Repeat("x", 40) + `":1}`, strings.Repeat("x", 32)},
		{`{"a\u0000b":1,"tab\there":2,"caf\u00e9":3,"a,b":4}`, "a?b,caf??,tab?here"},
		{`{"\u0063md":1}`, "cmd"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, string(appendKeyNames(nil, []byte(c.in))), c.in)
		assert.Equal(t, "pre:"+c.want, string(appendKeyNames([]byte("pre:"), []byte(c.in))), c.in)
	}
	args := []byte(`{"command":"ls","timeout":30,"env":{"A":"b"},"cwd":"/"}`)
	dst := make([]byte, 0, 64)
	if !canonTestRace() { // sync.Pool drops items under the race detector
		assert.Zero(t, testing.AllocsPerRun(100, func() { appendKeyNames(dst[:0], args) }))
	}
}

// canonTestValue is a JSON value for the randomized reference test.
type canonTestValue struct {
	kind  byte // 'n' null, 't' true, 'f' false, '0' number, 's' string, 'a' array, 'o' object
	m     int64
	e     int // number m×10^e
	s     string
	items []canonTestValue
	keys  []string // object keys, parallel to items
}

// canonTestRef returns a reference canonical form: numbers by exact
// rational value, strings by decoded value, objects as sorted multisets.
func canonTestRef(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var parse func() (string, error)
	parse = func() (string, error) {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		switch v := tok.(type) {
		case json.Delim:
			var parts []string
			for dec.More() {
				var k string
				if v == '{' {
					kt, err := dec.Token()
					if err != nil {
						return "", err
					}
					k = strconv.Quote(kt.(string)) + ":"
				}
				val, err := parse()
				if err != nil {
					return "", err
				}
				parts = append(parts, k+val)
			}
			if _, err := dec.Token(); err != nil {
				return "", err
			}
			if v == '{' {
				slices.Sort(parts) // quoted keys are prefix-free
				return "{" + strings.Join(parts, ",") + "}", nil
			}
			return "[" + strings.Join(parts, ",") + "]", nil
		case json.Number:
			r, ok := new(big.Rat).SetString(string(v))
			if !ok {
				return "", fmt.Errorf("bad number %s", v)
			}
			return "#" + r.String(), nil
		case string:
			return strconv.Quote(v), nil
		case nil:
			return "null", nil
		case bool:
			return strconv.FormatBool(v), nil
		}
		return "", fmt.Errorf("unexpected %v", tok)
	}
	ref, err := parse()
	if ref == "null" {
		ref = "{}" // both mean no arguments
	}
	return ref, err
}

// canonTestGen generates a random value.
func canonTestGen(r *rand.Rand, depth int) canonTestValue {
	keys := []string{"a", "b", "A", "é", "a\"", "a!", "", "aa", "\u0001", "z\n"}
	strs := []string{"", "x", "A", "é😀", "a\"b\\c", "line\nnext\ttab", "\u0000\u001f", "<&>", "/path/to", "\u2028"}
	k := r.IntN(10)
	if depth <= 0 {
		k = r.IntN(6)
	}
	switch {
	case k == 0:
		return canonTestValue{kind: "ntf"[r.IntN(3)]}
	case k <= 3:
		ms := []int64{0, 1, 7, 10, 12345, 100, 999999999999, 12345678901234567}
		m := ms[r.IntN(len(ms))]
		if r.IntN(3) == 0 {
			m = -m
		}
		return canonTestValue{kind: '0', m: m, e: r.IntN(50) - 25}
	case k <= 5:
		return canonTestValue{kind: 's', s: strs[r.IntN(len(strs))]}
	case k <= 7:
		v := canonTestValue{kind: 'a'}
		for range r.IntN(4) {
			v.items = append(v.items, canonTestGen(r, depth-1))
		}
		return v
	default:
		v := canonTestValue{kind: 'o'}
		for range r.IntN(5) {
			v.keys = append(v.keys, keys[r.IntN(len(keys))])
			v.items = append(v.items, canonTestGen(r, depth-1))
		}
		return v
	}
}

// canonTestMutate returns v with one random change, which may or may not
// change its JSON value.
func canonTestMutate(r *rand.Rand, v canonTestValue) canonTestValue {
	switch v.kind {
	case 'a', 'o':
		if len(v.items) == 0 || r.IntN(4) == 0 {
			return canonTestGen(r, 2)
		}
		w := v
		w.items = slices.Clone(v.items)
		w.keys = slices.Clone(v.keys)
		i := r.IntN(len(w.items))
		switch r.IntN(3) {
		case 0:
			w.items[i] = canonTestMutate(r, w.items[i])
		case 1:
			j := r.IntN(len(w.items))
			w.items[i], w.items[j] = w.items[j], w.items[i] // an object stays equal
		default:
			if w.kind == 'o' {
				w.keys[i] = []string{"a", "b", "\u0061"}[r.IntN(3)]
			} else {
				w.items = w.items[:i]
			}
		}
		return w
	case '0':
		w := v
		switch r.IntN(3) {
		case 0:
			w.m *= 10
			w.e-- // same value
		case 1:
			w.e++
		default:
			w.m++
		}
		return w
	}
	return canonTestGen(r, 1)
}

// canonTestWrite serializes v with random layout, escapes and number
// spellings.
func canonTestWrite(r *rand.Rand, b *strings.Builder, v canonTestValue) {
	ws := func() {
		if r.IntN(3) == 0 {
			b.WriteString([]string{" ", "\n", "\t", "\r\n  "}[r.IntN(4)])
		}
	}
	ws()
	switch v.kind {
	case 'n':
		b.WriteString("null")
	case 't':
		b.WriteString("true")
	case 'f':
		b.WriteString("false")
	case '0':
		canonTestNumber(r, b, v.m, v.e)
	case 's':
		canonTestString(r, b, v.s)
	case 'a':
		b.WriteByte('[')
		for i, it := range v.items {
			if i > 0 {
				b.WriteByte(',')
			}
			canonTestWrite(r, b, it)
		}
		ws()
		b.WriteByte(']')
	case 'o':
		b.WriteByte('{')
		for n, i := range r.Perm(len(v.items)) {
			if n > 0 {
				b.WriteByte(',')
			}
			ws()
			canonTestString(r, b, v.keys[i])
			ws()
			b.WriteByte(':')
			canonTestWrite(r, b, v.items[i])
		}
		ws()
		b.WriteByte('}')
	}
	ws()
}

// canonTestString writes s as a JSON string, escaping characters at
// random.
func canonTestString(r *rand.Rand, b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case (c == '"' || c == '\\') && r.IntN(3) > 0:
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20 || c == '"' || c == '\\' || r.IntN(4) == 0:
			if c == '\n' && r.IntN(2) == 0 {
				b.WriteString(`\n`)
			} else if c == '/' && r.IntN(2) == 0 {
				b.WriteString(`\/`)
			} else if c > 0xFFFF {
				hi, lo := 0xD800+(c-0x10000)>>10, 0xDC00+(c-0x10000)&0x3FF
				fmt.Fprintf(b, `\u%04X\u%04x`, hi, lo)
			} else if r.IntN(2) == 0 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				fmt.Fprintf(b, `\u%04X`, c)
			}
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
}

// canonTestNumber writes m×10^e in a random valid spelling.
func canonTestNumber(r *rand.Rand, b *strings.Builder, m int64, e int) {
	if m < 0 || m == 0 && r.IntN(4) == 0 {
		b.WriteByte('-')
	}
	if m < 0 {
		m = -m
	}
	digits := strconv.FormatInt(m, 10)
	if m != 0 {
		z := r.IntN(3)
		digits += strings.Repeat("0", z)
		e -= z
	}
	// Put the decimal point p digits from the left; the written
	// exponent compensates.
	p := len(digits)
	if r.IntN(2) == 0 {
		p = r.IntN(len(digits) + 1)
	}
	exp := e + (len(digits) - p)
	switch {
	case p == 0:
		b.WriteString("0." + digits)
	case p == len(digits):
		b.WriteString(digits)
	default:
		b.WriteString(digits[:p] + "." + digits[p:])
	}
	if exp != 0 || r.IntN(4) == 0 {
		if exp < 0 {
			fmt.Fprintf(b, "%s%d", []string{"e", "E"}[r.IntN(2)], exp)
		} else {
			fmt.Fprintf(b, "%s%d", []string{"e", "E", "e+", "E+"}[r.IntN(4)], exp)
		}
	}
}

func TestHashArgsMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	write := func(v canonTestValue) []byte {
		var b strings.Builder
		canonTestWrite(r, &b, v)
		return []byte(b.String())
	}
	equal, unequal := 0, 0
	for range 20000 {
		v := canonTestGen(r, 4)
		a, b := write(v), write(v)
		ra, err := canonTestRef(a)
		require.NoError(t, err, "%s", a)
		rb, err := canonTestRef(b)
		require.NoError(t, err, "%s", b)
		require.Equal(t, ra, rb)
		require.Equal(t, hashArgs(a, nil), hashArgs(b, nil), "%s\n%s", a, b)
		require.Equal(t, v1Hash(a, nil), hashArgs(a, nil), "%s", a)

		c := write(canonTestMutate(r, v))
		rc, err := canonTestRef(c)
		require.NoError(t, err, "%s", c)
		same := ra == rc
		if same {
			equal++
		} else {
			unequal++
		}
		require.Equal(t, same, hashArgs(a, nil) == hashArgs(c, nil), "%s\n%s", a, c)
	}
	t.Logf("mutations: %d equal, %d unequal", equal, unequal)
	assert.Greater(t, equal, 1000)
	assert.Greater(t, unequal, 1000)
}

// canonBenchDoc returns a compact JSON document of about size bytes whose
// objects have unsorted keys, as encoding/json writes structs.
func canonBenchDoc(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"records":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"record %d","id":%d,"score":%d.25,"tags":["alpha","beta","gamma"],`+
			`"path":"/var/data/%d/file.txt","meta":{"owner":"user%d","active":true,"ratio":0.5,"note":null},`+
			`"text":"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor."}`, i, i, i, i, i)
	}
	b.WriteString(`],"count":1}`)
	return b.Bytes()
}

func BenchmarkHashArgsSmall(b *testing.B) {
	args := []byte(`{"command":"ls -la /tmp","timeout":30,"cwd":"/home/user","env":{"LANG":"C"}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		hashArgs(args, nil)
	}
}

func BenchmarkHashArgs1MB(b *testing.B) {
	doc := canonBenchDoc(1 << 20)
	form, _ := canonTestForm(b, doc, nil)
	var indented bytes.Buffer
	if err := json.Indent(&indented, doc, "", "  "); err != nil {
		b.Fatal(err)
	}
	// A write_file call: one large string, as encoding/json writes it
	// (escaping <, > and & as \u003c etc., which must be decoded).
	var content strings.Builder
	for i := 0; content.Len() < 1<<20; i++ {
		fmt.Fprintf(&content, "func f%d() { fmt.Println(\"line %d\t<ok>\") } // é\n", i, i)
	}
	file, err := json.Marshal(map[string]string{"path": "/src/main.go", "content": content.String()})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		doc  []byte
	}{
		{"unsorted", doc},
		{"canonical", []byte(form)},
		{"indented", indented.Bytes()},
		{"file", file},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.doc)))
			for b.Loop() {
				hashArgs(c.doc, nil)
			}
		})
	}
}

func BenchmarkSHA256_1MB(b *testing.B) {
	doc := canonBenchDoc(1 << 20)
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		sha256.Sum256(doc)
	}
}

// TestHashArgsV1Table checks payloads v0.1.0 took its flat fast path for,
// and payloads it did not, against its hashes.
func TestHashArgsV1Table(t *testing.T) {
	for _, tt := range []struct {
		in     string
		ignore []string
	}{
		{`{"path":"src/a.go","limit":200}`, nil},
		{` { "cmd" : "ls -la" , "timeout" : 30.0 } `, nil},
		{`{"b":1.50,"a":-0,"c":1E3,"d":"x\u0001","e":true,"f":null,"g":false}`, nil},
		{`{"z":1,"y":2,"x":3,"w":4,"v":5,"u":6,"t":7,"s":8,"r":9,"q":10,"p":11,"o":12,"n":13,"m":14,"l":15,"k":16}`, nil},
		{`{"seed":42,"query":"go maps"}`, []string{"seed"}},
		{`{"seed":42}`, []string{"seed"}},
		{`{"seed":42,"seed":43,"a":1}`, []string{"seed"}},
		{`{}`, nil},
		{`{"big":1e21,"tiny":1e-7,"long":12345678901234567890123}`, nil},
		{`{"s":"\/"}`, nil},
		{`{"\u0061":1}`, []string{"a"}},
		{`{"a":1,"a":2}`, nil},
		{`{"a":{"b":1}}`, nil},
		{`{"a":[1]}`, nil},
		{`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17}`, nil},
		{`{"a":1,}`, nil},
		{`{"a":01}`, nil},
		{`{"a":1} {}`, nil},
	} {
		in := []byte(tt.in)
		assert.Equal(t, v1Hash(in, tt.ignore), hashArgs(in, tt.ignore), "%s", tt.in)
	}
}

// TestScanTraces checks, on the arguments of every call in the bundled
// traces, that one scan hashes them as v0.1.0 did, also under a second
// ignore list (the scope of a query), and that their shape is the one
// encoding/json's decoding gave (argsShapeJSON).
func TestScanTraces(t *testing.T) {
	n := 0
	files, err := filepath.Glob("../../testdata/traces/*.jsonl")
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, line := range bytes.Split(b, []byte("\n")) {
			var ep struct {
				Calls []struct {
					Args json.RawMessage `json:"args"`
				} `json:"calls"`
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			require.NoError(t, json.Unmarshal(line, &ep), f)
			for _, c := range ep.Calls {
				args := []byte(c.Args)
				var s Args
				s.Scan(args)
				require.Equal(t, v1Hash(args, nil), Hash(s.Hash(nil)), "%s", args)
				require.Equal(t, v1Hash(args, []string{"query"}), Hash(s.Hash([]string{"query"})), "%s", args)
				require.Equal(t, argsShapeJSON(args), s.Shape(), "%s", args)
				n++
			}
		}
	}
	require.Positive(t, n)
}
