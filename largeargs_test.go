package toolguard

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// largeArgs returns a tool-call argument of about size bytes of the named
// shape: "keys" (one flat object with many keys in no order), "nested" (an
// array of objects with unsorted keys, see canonBenchDoc), "files" (the
// same as BenchmarkLargeArgs), "sorted" (one flat object in canonical
// form), "string" (a write_file call: one large string with escapes),
// "search" (the same as a search query) or the hostile "tiny" (an array of
// small objects with unsorted keys), "dups" (one key repeated) and "deep"
// (duplicate keys nested 511 deep).
func largeArgs(t testing.TB, shape string, size int) []byte {
	var b bytes.Buffer
	switch shape {
	case "keys":
		b.WriteByte('{')
		for i := 0; b.Len() < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%07d":%d`, (i*7919)%10_000_000, i)
		}
		b.WriteByte('}')
	case "nested":
		return canonBenchDoc(size)
	case "search":
		return bytes.Replace(largeArgs(t, "string", size), []byte(`"content"`), []byte(`"query"`), 1)
	case "tiny": // many small objects with unsorted keys
		b.WriteByte('[')
		for i := 0; b.Len() < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"b":0,"a":0}`)
		}
		b.WriteByte(']')
	case "dups": // one key, many times
		b.WriteByte('{')
		for i := 0; b.Len() < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"a":0`)
		}
		b.WriteByte('}')
	case "deep": // duplicate keys at every level, the payload at the bottom
		b.WriteString(strings.Repeat(`{"a":`, canonMaxDepth-1))
		b.WriteString(`"` + strings.Repeat("x", max(0, size-12*canonMaxDepth)) + `"`)
		b.WriteString(strings.Repeat(`,"a":0}`, canonMaxDepth-1))
	case "sorted":
		b.WriteByte('{')
		for i := 0; b.Len() < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%08d":%d`, i, i)
		}
		b.WriteByte('}')
	case "files":
		b.WriteString(`{"files":[`)
		for i := 0; b.Len() < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"path":"src/pkg%d/file%d.go","size":%d,"mode":"0644","body":"package pkg%d // line of code %d"}`, i%50, i, i*31, i%50, i)
		}
		b.WriteString(`]}`)
	case "string":
		b.WriteString(`{"path":"/src/main.go","content":"`)
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, `func f%d() { fmt.Println(\"line %d\t\u003cok\u003e\") } // \u00e9\n`, i, i)
		}
		b.WriteString(`"}`)
	default:
		panic(shape)
	}
	return b.Bytes()
}

// argsAllocs returns the bytes and allocations ShouldSkip+Record of one call
// with args allocate, the fewest of a few runs. Each run starts with empty
// pools (two collections empty a sync.Pool), so that scratch space kept
// from an earlier call is counted: the figure is what a call needs.
func argsAllocs(tool string, args []byte) (bytesPerCall, allocsPerCall uint64) {
	tr := NewTracker(Policy{MaxCallsPerTurn: -1, SessionLimit: -1, MaxRepeats: -1})
	c := Call{Tool: tool, Args: args}
	tr.ShouldSkip(c)
	tr.Record(c, Outcome{Result: "ok"})
	bytesPerCall, allocsPerCall = ^uint64(0), ^uint64(0)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		tr.ShouldSkip(c)
		tr.Record(c, Outcome{Result: "ok"})
		runtime.ReadMemStats(&after)
		bytesPerCall = min(bytesPerCall, after.TotalAlloc-before.TotalAlloc)
		allocsPerCall = min(allocsPerCall, after.Mallocs-before.Mallocs)
	}
	return bytesPerCall, allocsPerCall
}

// TestLargeArgsMemory pins what a call with a large argument allocates
// (issue 18): at most 1× the argument for the shapes tools send, at most 8×
// for hostile ones (duplicate keys nested 511 deep are the worst), for
// arguments of 16 MB and of 40 MB (above v0.1.0's 16 MiB limit).
func TestLargeArgsMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation figures of large arguments")
	}
	for _, size := range []int{16_000_000, 40_000_000} {
		for _, shape := range []string{"keys", "nested", "files", "sorted", "string", "search", "tiny", "dups", "deep"} {
			args := largeArgs(t, shape, size)
			tool, bound := "write", 1.0
			switch shape {
			case "search":
				tool = "web_search"
			case "tiny", "dups", "deep":
				bound = 8
			}
			n, a := argsAllocs(tool, args)
			ratio := float64(n) / float64(len(args))
			t.Logf("%-6s %9d bytes: %11d bytes (%.2f×) in %d allocations per call", shape, len(args), n, ratio, a)
			if ratio > bound {
				t.Errorf("%s, %d bytes: a call allocates %.2f× the argument, want at most %v×", shape, len(args), ratio, bound)
			}
		}
	}
}

// TestHashArgsBeyond16MiB checks that arguments larger than v0.1.0's limit
// are canonicalized: key order and white space do not matter.
func TestHashArgsBeyond16MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("large arguments")
	}
	sorted := largeArgs(t, "sorted", 20<<20)
	// The same members in reverse order, indented.
	members := bytes.Split(sorted[1:len(sorted)-1], []byte(","))
	slices.Reverse(members)
	reversed := append(append([]byte("{\n  "), bytes.Join(members, []byte(",\n  "))...), "\n}"...)
	require.Greater(t, len(reversed), v1MaxBytes)
	h := hashArgs(sorted, nil)
	assert.Equal(t, h, hashArgs(reversed, nil))
	assert.Equal(t, canonTestSum(canonPrefixJSON, string(sorted)), h) // already canonical
	assert.NotEqual(t, h, hashArgs(bytes.Replace(sorted, []byte(`"k00000001":1`), []byte(`"k00000001":2`), 1), nil))

	// Beyond canonMaxBytes: raw.
	big := make([]byte, canonMaxBytes+1)
	copy(big, `"`)
	for i := 1; i < len(big)-1; i++ {
		big[i] = 'x'
	}
	big[len(big)-1] = '"'
	assert.Equal(t, v1RawHash(big), hashArgs(big, nil))
}
