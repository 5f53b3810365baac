package canon

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maskTestSum digests the masked text b in one piece, the reference for
// the streaming digests: two maphash sums of b under the seeds of its kind.
func maskTestSum(err bool, b string) [16]byte {
	seeds := &maskSeeds[b2i(err)]
	var h [16]byte
	binary.LittleEndian.PutUint64(h[:8], maphash.String(seeds[0], b))
	binary.LittleEndian.PutUint64(h[8:], maphash.String(seeds[1], b))
	return h
}

func TestMaskNoise(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"plain text, nothing to mask", "plain text, nothing to mask"},
		{"2024-05-20T10:00:00Z", "<time>"},
		{"at 2024-05-20T10:00:00.123+02:00.", "at <time>."},
		{"2024-05-20 10:00:00 start", "<time> start"},
		{"ts=2024-05-20t10:00:00-0500;", "ts=<time>;"},
		{"flight on 2024-05-20 to LIS", "flight on 2024-05-20 to LIS"},
		{"at 10:00:00 and 9:05:03.123Z", "at <time> and <time>"},
		{"10:00 and 99:99:99 stay", "10:00 and 99:99:99 stay"},
		{"id 123E4567-E89B-12D3-A456-426614174000!", "id <uuid>!"},
		{"commit 3f2a9c1d4e5b6a7980fedcba12345678 ok", "commit <hex> ok"},
		{"trace=4bf92f3577b34da6a3ce929d0e0e4736 span=00f067aa0ba902b7", "trace=<hex> span=<hex>"},
		{"0123456789abcdef-x 0123456789abcdef:y", "<hex>-x <hex>:y"},
		{"short deadbeef and 0123456789abcde", "short deadbeef and 0123456789abcde"},
		{"word x0123456789abcdef0123 and 0123456789abcdef0123y", "word x0123456789abcdef0123 and 0123456789abcdef0123y"},
		{"took 1.23s, then 450ms, 2m3s, 1h2m3.5s, 5µs, 7ns", "took <dur>, then <dur>, <dur>, <dur>, <dur>, <dur>"},
		{"waited 5 seconds (300 milliseconds, 2 sec, 1 second, 3secs)", "waited <dur> (<dur>, <dur>, <dur>, <dur>)"},
		{"5min 3d 5 minutes 2m3 x5s", "5min 3d 5 minutes 2m3 x5s"},
		{"retry in 5s.", "retry in <dur>."},
		{"x10:00:00 and 10:00:00x", "x10:00:00 and 10:00:00x"},
		{"2024-05-20T10:00:00Zulu", "2024-05-20T10:00:00Zulu"},
		{"<time> <dur> <uuid> <hex>", "<time> <dur> <uuid> <hex>"},
		{"línea 10:00:00 ü", "línea <time> ü"},
		{"key deadbeefcafebabe0 ok", "key <hex> ok"},
		{"id abcdef01-abcd-abcd-abcd-abcdefabcdef.", "id <uuid>."},
		{"----------------- x -abcdefabcdefabcdef-", "----------------- x -<hex>-"},
		{"xdeadbeefcafebabedeadbeef and fade-face-cafe-bead", "xdeadbeefcafebabedeadbeef and fade-face-cafe-bead"},
	}
	for _, c := range cases {
		got := maskNoise(c.in)
		assert.Equal(t, c.want, got, c.in)
		assert.Equal(t, got, maskNoise(got), "idempotent: %q", c.in)
		assert.Equal(t, maskTestSum(false, got), DigestResult(c.in), c.in)
	}
}

// TestMaskNoiseOffsets puts matches at every offset from the blocks the
// scan reads, after plain words, digits or hex text, and at the end.
func TestMaskNoiseOffsets(t *testing.T) {
	matches := []struct{ in, ph string }{
		{"deadbeefcafebabe", "<hex>"},
		{"abcdef01-abcd-abcd-abcd-abcdefabcdef", "<uuid>"},
		{"0123456789abcdef01234", "<hex>"},
		{"2024-05-20T10:00:00Z", "<time>"},
		{"12:30:45", "<time>"},
		{"1.5ms", "<dur>"},
	}
	fills := []string{"", "word ", "a-b ", "12 ", "fade ", "- "}
	for _, m := range matches {
		for _, fill := range fills {
			for n := 0; n < 24; n++ {
				prefix := strings.Repeat(" ", n) + fill
				for _, suffix := range []string{"", " tail", "-", ". more text after it"} {
					in := prefix + m.in + suffix
					assert.Equal(t, prefix+m.ph+suffix, maskNoise(in), "%q", in)
				}
			}
		}
	}
}

func TestDigestResult(t *testing.T) {
	a := "build 3f2a9c1d4e5b6a7980fedcba12345678 finished at 2024-05-20T10:00:00Z in 1.5s"
	b := "build 0000000000000000aaaaaaaaaaaaaaaa finished at 2024-06-01T23:59:59.999Z in 12m3s"
	assert.Equal(t, DigestResult(a), DigestResult(b))
	assert.NotEqual(t, DigestResult(a), DigestResult(strings.Replace(b, "finished", "failed", 1)))
	assert.NotEqual(t, DigestResult("flight 2024-05-20"), DigestResult("flight 2024-05-21"))
	assert.NotEqual(t, DigestResult("x"), DigestError("x"))
}

func TestMaskError(t *testing.T) {
	cases := []struct{ in, want string }{
		{"open /tmp/a.txt: no such file or directory (line 12)", "open <path>: no such file or directory (line <n>)"},
		{"  Connection   REFUSED\n", "connection refused"},
		{`KeyError: 'user_42'`, "keyerror: <str>"},
		{`invalid value "abc" for flag -n`, "invalid value <str> for flag -n"},
		{"run `rm -rf /` failed", "run <str> failed"},
		{"GET https://api.example.com/v1/users/42?x=1 failed: 503", "get <url> failed: <n>"},
		{"tool call call_HGn16KZh9o failed", "tool call <id> failed"},
		{"request req-42ab timed out after 30s", "request <id> timed out after <dur>"},
		{`C:\Users\bob\file.txt not found`, "<path> not found"},
		{"./a/b.py:12: SyntaxError", "<path>: syntaxerror"},
		{"cannot load /usr/lib/x.so.", "cannot load <path>."},
		{"exit status 1", "exit status <n>"},
		{"value 3.14 out of range [0, 1]", "value <n> out of range [<n>, <n>]"},
		{"deadline exceeded at 2024-05-20T10:00:00Z (id 123e4567-e89b-12d3-a456-426614174000)", "deadline exceeded at <time> (id <uuid>)"},
		{"can't open 'x'", "can't open <str>"},
		{"hash 1a2b3c4d mismatch, deadbeef kept", "hash <id> mismatch, deadbeef kept"},
		{"ERROR: 12345678 rows", "error: <n> rows"},
		{"sha 0123456789abcdef0123 bad", "sha <hex> bad"},
		{"took 5 seconds", "took <dur>"},
		{"it's 'unterminated", "it's 'unterminated"},
		{"<n> <str> <path> <url> <id>", "<n> <str> <path> <url> <id>"},
	}
	for _, c := range cases {
		got := maskError(c.in)
		assert.Equal(t, c.want, got, c.in)
		assert.Equal(t, got, maskError(got), "idempotent: %q", c.in)
		assert.Equal(t, maskTestSum(true, got), DigestError(c.in), c.in)
	}
	long := `fail: "` + strings.Repeat("Ab 1 ", 50) + `" end`
	assert.Equal(t, "fail: \""+strings.TrimSpace(strings.Repeat("ab 1 ", 50))+" \" end", maskError(long))
	assert.Equal(t, maskError(long), maskError(maskError(long)))
}

func TestDigestError(t *testing.T) {
	assert.Equal(t,
		DigestError("open /tmp/a.txt: no such file or directory (line 12)"),
		DigestError("open /var/b.txt: no such file or directory (line 7)"))
	assert.NotEqual(t,
		DigestError("open /tmp/a.txt: permission denied"),
		DigestError("open /tmp/a.txt: no such file or directory"))
	assert.Equal(t,
		DigestError(`HTTP 503 from https://a.example/x: "busy" (req-1a2b)`),
		DigestError(`http 502   from https://b.example/y?q=2: 'down' (req-9z8y)`))
}

func TestDigestStreamingChunks(t *testing.T) {
	// Matches and kept runs straddle the hashes' internal block boundaries.
	var b strings.Builder
	for i := 0; b.Len() < 5*2048; i++ {
		fmt.Fprintf(&b, "Line %d at 2024-05-20T10:%02d:00Z id=%016x took %dms path /var/log/%d.log 'q%d' %s\n",
			i, i%60, i*7919, i, i, i, strings.Repeat("x", i%97))
	}
	s := b.String()
	assert.Equal(t, maskTestSum(false, maskNoise(s)), DigestResult(s))
	assert.Equal(t, maskTestSum(true, maskError(s)), DigestError(s))
	// A single verbatim run much longer than a block.
	long := strings.Repeat("y", 3*2048+5)
	assert.Equal(t, maskTestSum(false, long), DigestResult(long))
	assert.Equal(t, maskTestSum(true, long), DigestError(long))
}

// maskTestLinearInputs are texts that a masker which goes back over what
// it read would make slow, each about size bytes: every fragment the
// masker treats specially repeated, and hex and digit runs that fail only
// at their end.
func maskTestLinearInputs(size int) []string {
	units := []string{"a.", "1h1.5", "'", "a-", "1_", "f", "ab1://", "x'", "2024-05-20 ", "a/", "\"", "1 ",
		"-", "0123-", "01234567-", "deadbeef-", "x-deadbeefcafe", "12:"}
	var out []string
	for _, u := range units {
		out = append(out, strings.Repeat(u, size/len(u)))
	}
	return append(out, strings.Repeat("f", size)+"g", "x"+strings.Repeat("0", size))
}

// TestMaskLinearTime digests each text of maskTestLinearInputs at 1 MiB
// and checks the streamed digests against the masked text's. It measures
// no time: a masker quadratic in its input takes hours here and fails at
// the package's -timeout. The time per byte at 16 KiB and 1 MiB, equal for
// a linear masker, is BenchmarkMaskScaling. Under the race detector the
// texts are 64 KiB (.ci/run runs the test without it too).
func TestMaskLinearTime(t *testing.T) {
	size := 1 << 20
	if raceEnabled {
		size = 64 << 10
	}
	for _, s := range maskTestLinearInputs(size) {
		assert.Equal(t, maskTestSum(false, maskNoise(s)), DigestResult(s), "noise %.20q", s)
		assert.Equal(t, maskTestSum(true, maskError(s)), DigestError(s), "error %.20q", s)
	}
}

// BenchmarkMaskScaling digests each text of maskTestLinearInputs at 16 KiB
// and at 1 MiB: the MB/s of the two sizes are about equal for a linear
// masker (a quadratic one is 64 times slower at 1 MiB).
//
//	go test -run '^$' -bench MaskScaling .
func BenchmarkMaskScaling(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20} {
		for i, s := range maskTestLinearInputs(size) {
			b.Run(fmt.Sprintf("text%d/%dKiB", i, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(s)))
				for b.Loop() {
					DigestResult(s)
					DigestError(s)
				}
			})
		}
	}
}

func TestDigestAllocs(t *testing.T) {
	var b strings.Builder
	for b.Len() < 2048 {
		b.WriteString("2024-05-20T10:00:00Z INFO request 3f2a9c1d4e5b6a7980fedcba12345678 done in 12ms: ok\n")
	}
	s := b.String()[:2048]
	assert.Zero(t, testing.AllocsPerRun(100, func() { DigestResult(s) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { DigestError(s) }))
	plain := "nothing to mask here"
	assert.Zero(t, testing.AllocsPerRun(100, func() { maskNoise(plain) }))
}

func TestMaskIdempotentRandom(t *testing.T) {
	frags := []string{
		"2024-05-20", "T", "t", " ", "  ", "\t", "\n", "10:00:00", "10:00", ":00", ".123", "Z", "z", "+02:00", "-0500",
		"123e4567-e89b-12d3-a456-426614174000", "0123456789abcdef0123", "deadbeef", "DEADBEEF", "1a2b3c4d",
		"1.23s", "450ms", "2m3s", "1h2m3.5s", "5", "12", "3.14", "µs", "μs", "s", "m", "h", "ms", " seconds", " sec",
		"'", "\"", "`", "it's", "can't", "/", "\\", "./a/b.py", "/tmp/x.txt", "C:\\x\\y", ":", ".", ",", "-", "_",
		"https://", "http://x.org/a?b=1", "ab1://", "<", ">", "<n>", "<str>", "<id>", "<time>", "<dur>", "<hex>",
		"call_HGn16KZh9o", "req-42ab", "x", "Error", "NOT", "é", "\xff", "=", "@", "~", "%", "+", "(", ")", "[", "]",
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(frags[r.IntN(len(frags))])
		}
		s := b.String()
		n := maskNoise(s)
		require.Equal(t, n, maskNoise(n), "maskNoise(%q) = %q", s, n)
		e := maskError(s)
		require.Equal(t, e, maskError(e), "maskError(%q) = %q", s, e)
	}
	long := strings.Repeat("x 'quoted text' ", 20)
	require.Equal(t, maskError(long), maskError(maskError(long)))
}

func BenchmarkDigestResult2KB(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 2048 {
		sb.WriteString("2024-05-20T10:00:00Z INFO GET /api/v1/items 200 in 12ms trace=4bf92f3577b34da6a3ce929d0e0e4736 items=42 ok\n")
	}
	s := sb.String()[:2048]
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		DigestResult(s)
	}
}

func BenchmarkDigestError(b *testing.B) {
	s := "open /tmp/a.txt: no such file or directory (line 12) after 1.5s, request req-42ab"
	b.ReportAllocs()
	for b.Loop() {
		DigestError(s)
	}
}

func TestMaskClass(t *testing.T) {
	for i := range 256 {
		c := byte(i)
		letter := 'a' <= c|0x20 && c|0x20 <= 'z' || c >= utf8.RuneSelf
		word := letter || canonIsDigit(c) || c == '_'
		assert.Equal(t, c == ' ' || '\t' <= c && c <= '\r', maskIs(c, maskSpace), "space %#x", c)
		assert.Equal(t, letter, maskIs(c, maskLetter), "letter %#x", c)
		assert.Equal(t, word, maskIs(c, maskWord), "word %#x", c)
		assert.Equal(t, word || strings.IndexByte(`/\.-~:+@%=`, c) >= 0, maskIs(c, maskPath), "path %#x", c)
		assert.Equal(t, word || c == '-', maskIs(c, maskID), "id %#x", c)
		assert.Equal(t, c == '/' || c == '\\', maskIs(c, maskSlash), "slash %#x", c)
		assert.Equal(t, canonIsDigit(c), maskIs(c, maskDigit), "digit %#x", c)
		assert.Equal(t, canonIsHex(c), maskIs(c, maskHex), "hex %#x", c)
		assert.Equal(t, 'A' <= c && c <= 'Z', maskIs(c, maskUpper), "upper %#x", c)
		scheme := c < utf8.RuneSelf && (letter || canonIsDigit(c) || strings.IndexByte("+.-", c) >= 0)
		assert.Equal(t, scheme, maskIs(c, maskScheme), "scheme %#x", c)
	}
}

// maskNoise returns s with the noise DigestResult masks replaced by
// placeholders (see mask.go); s itself if nothing is masked.
func maskNoise(s string) string {
	var b strings.Builder
	one := "" // the first piece, until there is a second one
	Mask(s, false, func(p string) {
		if one == "" && b.Len() == 0 {
			one = p
			return
		}
		b.WriteString(one)
		b.WriteString(p)
		one = ""
	})
	if b.Len() == 0 {
		return one
	}
	return b.String()
}
