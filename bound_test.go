package toolguard

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestMemoryBoundHostile pins the bound docs/concepts.md states for any input
// (issue 16 item 7): hostile call streams through a Tracker with the
// default Policy (and one with an unlimited budget) keep a bounded heap.
// TOOLGUARD_BOUND_CALLS sets the calls per stream (default 200,000, 20,000
// under the race detector; the
// documented figures use 1,228,800, enough for a new search tool in each
// of 4,096 turns).
func TestMemoryBoundHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: long")
	}
	calls := 200_000
	if raceEnabled {
		calls = 20_000 // the race detector is slow and adds its own heap
	}
	if v, err := strconv.Atoi(os.Getenv("TOOLGUARD_BOUND_CALLS")); err == nil {
		calls = v
	}
	name40 := strings.Repeat("x", 40)
	q := strings.Repeat("lorem ipsum dolor sit amet ", 38) // about 1 KiB
	for _, s := range []struct {
		name      string
		unlimited bool
		next      func(i int) (c Call, reset bool)
	}{
		{"benign: one tool, 50 commands, 100 calls a turn", false, func(i int) (Call, bool) {
			return Call{Tool: "bash", Args: json.RawMessage(fmt.Sprintf(`{"cmd":"make %d"}`, i%50))}, i%100 == 99
		}},
		{"a new 40-byte tool name and call id each call", false, func(i int) (Call, bool) {
			id := fmt.Sprintf("%s%d", name40, i)
			return Call{ID: id, Tool: id, Args: json.RawMessage(fmt.Sprintf(`{"a":%d}`, i))}, i%300 == 299
		}},
		{"a new search tool each turn, 300 1 KiB queries", false, func(i int) (Call, bool) {
			return Call{Tool: fmt.Sprintf("search_%d", i/300), Args: json.RawMessage(fmt.Sprintf(`{"query":"%d %s"}`, i, q))}, i%300 == 299
		}},
		{"distinct arguments, never a reset", false, func(i int) (Call, bool) {
			return Call{Tool: "read", Args: json.RawMessage(fmt.Sprintf(`{"p":%d}`, i))}, false
		}},
		{"16 search tools, 1 KiB queries, never a reset, no budget", true, func(i int) (Call, bool) {
			return Call{Tool: fmt.Sprintf("search_%d", i%16), Args: json.RawMessage(fmt.Sprintf(`{"query":"%d %s"}`, i, q))}, false
		}},
		{"distinct arguments, never a reset, no budget", true, func(i int) (Call, bool) {
			return Call{Tool: "read", Args: json.RawMessage(fmt.Sprintf(`{"p":%d}`, i))}, false
		}},
	} {
		base := heapInUse()
		p := Policy{}
		if s.unlimited {
			p.MaxCallsPerTurn = -1
		}
		tr := NewTracker(p)
		for i := 0; i < calls; i++ {
			c, reset := s.next(i)
			if tr.ShouldSkip(c).Verdict == Allow {
				tr.Record(c, Outcome{Result: strconv.Itoa(i)})
			}
			if reset {
				tr.Reset()
			}
		}
		used := float64(heapInUse()-base) / (1 << 20)
		t.Logf("%d calls, %s: %.1f MiB", calls, s.name, used)
		bound := 8.0 // MiB; docs/concepts.md states both
		if s.unlimited {
			bound = 32
		}
		if used > bound {
			t.Errorf("%s: %.1f MiB, above the documented %v MiB", s.name, used, bound)
		}
		runtime.KeepAlive(tr)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
