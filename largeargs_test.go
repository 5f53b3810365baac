package toolguard

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
)

// largeArgs returns a tool-call argument of about size bytes of the named
// shape: "keys" (one flat object with many keys in no order), "nested" (an
// array of objects with unsorted keys, see canonBenchDoc), "files" (the
// same as BenchmarkLargeArgs), "sorted" (one flat object in canonical
// form) or "string" (a write_file call: one large string with escapes).
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
	tr := NewTracker(Policy{MaxCallsPerTurn: -1, Quotas: Quotas{SessionLimit: -1}, MaxRepeats: -1})
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

func TestLargeArgsMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation figures of large arguments")
	}
	for _, size := range []int{1 << 20, 16_000_000, 40_000_000} {
		for _, shape := range []string{"keys", "nested", "files", "sorted", "string"} {
			args := largeArgs(t, shape, size)
			for _, tool := range []string{"write", "web_search"} {
				if tool == "web_search" && shape != "string" {
					continue
				}
				if tool == "web_search" {
					args = bytes.Replace(args, []byte(`"content"`), []byte(`"query"`), 1)
				}
				n, a := argsAllocs(tool, args)
				t.Logf("%-10s %-9s %9d bytes: %11d bytes (%.2f×) in %d allocations per call", tool, shape, len(args), n, float64(n)/float64(len(args)), a)
			}
		}
	}
}
