package toolguard

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard/store"
)

// TestLateRecordLeavesNewTurnAlone pins issue 16 item 2: a late Record
// with a call id must complete its own call of the earlier turn, never an
// id-less call of the new turn with the same key.
func TestLateRecordLeavesNewTurnAlone(t *testing.T) {
	mem := newHeldStore(nil)
	tr := NewTracker(Policy{Store: mem, SharedQuotas: []store.SharedQuota{{Name: "q", Limit: 100}}})
	args := json.RawMessage(`{"path":"x"}`)
	a := Call{ID: "a", Tool: "read", Args: args}
	b := Call{ID: "b", Tool: "read", Args: args}
	c := Call{Tool: "read", Args: args}
	require.Equal(t, Allow, tr.ShouldSkip(a).Verdict)
	require.Equal(t, Allow, tr.ShouldSkip(b).Verdict)
	tr.Reset()
	require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
	tr.Record(b, Outcome{Result: "r"})
	tr.Record(c, Outcome{Result: "r"})
	tr.Record(a, Outcome{Result: "r"})

	l := tr.Ledger()
	require.Len(t, l, 3, "one entry per call")
	for _, e := range l {
		assert.True(t, e.Done && !e.Failed, "entry %d (%s, turn %d)", e.Seq, e.CallID, e.Turn)
	}
	assert.Equal(t, []int{1, 1, 2}, []int{l[0].Turn, l[1].Turn, l[2].Turn})
	tr.mu.Lock()
	pending, stale := len(tr.turn.pending), len(tr.stale)
	tr.mu.Unlock()
	assert.Zero(t, pending)
	assert.Zero(t, stale)
	assert.Equal(t, 1, tr.Summary().Calls, "the new turn made one call")
	// Every reservation was committed: three calls, three units, none held.
	assert.Equal(t, 3, mem.Count("quota:q"))
	held := mem.held()
	assert.Zero(t, held)
}

// TestHugeSizesNeverPanic pins issue 16 item 3: LedgerSize math.MaxInt
// overflowed 2*size in ledger.add and panicked under the lock, so every
// later call blocked. Every size field takes extreme values.
func TestHugeSizesNeverPanic(t *testing.T) {
	for _, v := range []int{math.MaxInt, math.MinInt, math.MaxInt32, -1} {
		for _, p := range []Policy{
			{LedgerSize: v},
			{MaxCallsPerTurn: v},
			{MaxRepeats: v, MaxFailures: v},
			{CyclePeriod: v, CycleRepeats: v},
			{Window: v, WindowLimit: v},
			{SessionLimit: v, HighCostLimit: v, HighCostTools: []string{"t"}},
			{Tools: map[string]ToolPolicy{"t": {Limit: v, MaxRepeats: v}}},
			{AgentQuota: &Quota{Default: v}, PlatformQuota: &Quota{Tools: map[string]int{"t": v}}},
			{SharedQuotas: []store.SharedQuota{{Name: "q", Limit: v, Window: time.Duration(v)}}, ReservationTTL: time.Duration(v), StoreTimeout: time.Duration(v)},
		} {
			name := fmt.Sprintf("%+v", p)
			tr := NewTracker(p)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < 20; i++ {
					c := call("t", fmt.Sprintf(`{"i":%d}`, i%3))
					if tr.ShouldSkip(c).Verdict == Allow {
						tr.Record(c, Outcome{Err: fmt.Errorf("boom")})
					}
				}
				tr.Reset()
				tr.Ledger()
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the tracker hangs", name)
			}
		}
	}
}

// TestValidateReportsWhatIsUsed pins issue 16 item 7: Validate says what
// the Tracker really does with ±Inf ratios and a negative window.
func TestValidateReportsWhatIsUsed(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{NudgeRatio: math.Inf(1)}, "NudgeRatio +Inf is not a number (the nudge is off)"},
		{Policy{NudgeRatio: math.Inf(-1)}, "NudgeRatio -Inf is not a number (the nudge is off)"},
		{Policy{NudgeRatio: math.NaN()}, "NudgeRatio NaN is not a number (0.75 is used)"},
		{Policy{SimilarityThreshold: math.Inf(1)}, "SimilarityThreshold +Inf is not a number (the check is off)"},
		{Policy{SimilarityThreshold: math.NaN()}, "SimilarityThreshold NaN is not a number (0.75 is used)"},
		{Policy{SharedQuotas: []store.SharedQuota{{Name: "q", Limit: 1, Window: -time.Second}}}, `SharedQuotas[0] "q": Window -1s is negative (the total never expires)`},
		{Policy{SharedQuotas: []store.SharedQuota{{Name: "", Limit: 1}}}, `SharedQuotas[0] "": the name is empty (the quota is ignored)`},
		{Policy{SharedQuotas: []store.SharedQuota{{Name: "t", PerTool: true, Limit: 1}, {Name: "t:web", Limit: 1}}}, `SharedQuotas[1] "t:web": SharedQuotas[0] "t" uses its counter "quota:t:web" too`},
		{Policy{SharedQuotas: []store.SharedQuota{{Name: "a:b", PerTool: true, Limit: 1}, {Name: "a", PerTool: true, Limit: 1}}}, `SharedQuotas[1] "a": SharedQuotas[0] "a:b" uses its counter "quota:a:b:{tool}" too`},
		{Policy{SharedQuotas: []store.SharedQuota{{Name: "x", Limit: 1}, {Name: "x", Limit: 2}}}, `SharedQuotas[1] "x": SharedQuotas[0] "x" uses its counter "quota:x" too`},
	} {
		err := tc.p.Validate()
		if assert.Error(t, err, tc.want) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	// What the Tracker does matches: an infinite ratio turns the nudge off.
	tr := NewTracker(Policy{MaxCallsPerTurn: 4, NudgeRatio: math.Inf(1)})
	for i := 0; i < 3; i++ {
		c := call("t", fmt.Sprintf(`{"i":%d}`, i))
		tr.ShouldSkip(c)
		assert.Equal(t, PhaseNormal, tr.Record(c, Outcome{Result: "r"}))
	}
}

// TestQuotaKeysAreNamesAsWritten pins issue 16 item 8 in the core: a
// quota's counter key is "quota:" and its name as the user wrote it, so
// the documented key and Count find it.
func TestQuotaKeysAreNamesAsWritten(t *testing.T) {
	assert.Equal(t, "quota:tenant:acme:hourly", store.SharedQuota{Name: "tenant:acme:hourly"}.Key("web"))
	assert.Equal(t, "quota:tenant:acme:web_fetch", store.SharedQuota{Name: "tenant:acme", PerTool: true}.Key("web_fetch"))
	mem := store.NewMemory(nil)
	tr := NewTracker(Policy{Store: mem, SharedQuotas: []store.SharedQuota{{Name: "tenant:acme:hourly", Limit: 5}}})
	run(t, tr, []step{allow(call("web", `{"u":1}`), "r")})
	assert.Equal(t, 1, mem.Count("quota:tenant:acme:hourly"))
	// Session ids are escaped: session "a" cannot spend session "a:b"'s quota
	// through a tool named "b:web".
	assert.NotEqual(t, sessionKey("a:b", "web"), sessionKey("a", "b:web"))
	assert.True(t, strings.HasPrefix(sessionKey("a:b", "web"), "session:a%3Ab:"))
}

// TestKeyCapEvictionIsBounded pins issue 16 item 4: when a turn holds
// maxKeys keys that were all seen twice, new distinct keys make it forget
// settled ones and the turn's keys stay bounded. (BenchmarkKeyCap times
// such a call: amortized, a bounded number of steps, not a scan of every
// key.)
func TestKeyCapEvictionIsBounded(t *testing.T) {
	cfg := newConfig(Policy{})
	var ts turnState
	ts.reset(&cfg)
	key := func(i int) callKey { return testKey("t", Hash{byte(i), byte(i >> 8), byte(i >> 16)}) }
	for i := 0; i < maxKeys; i++ {
		ks := ts.addKey(key(i))
		ks.count = 1
		ks.count, ks.used = 2, true // seen a second time
	}
	const n = 10000
	for i := maxKeys; i < maxKeys+n; i++ {
		ts.addKey(key(i)).count = 1
	}
	require.LessOrEqual(t, ts.keys.len(), maxKeys)
	require.Greater(t, ts.keys.len(), 0)
	assert.NotNil(t, ts.keys.get(key(maxKeys+n-1)), "the newest key is kept")
}

// BenchmarkKeyCap is a call that adds a new distinct key to a turn at its
// key cap whose kept keys were all seen twice (issue 16 item 4).
func BenchmarkKeyCap(b *testing.B) {
	tr := NewTracker(Policy{MaxCallsPerTurn: -1, Window: -1, CyclePeriod: -1, Tools: map[string]ToolPolicy{"read": {ReadOnly: true}}})
	calls := make([]Call, maxKeys)
	for i := range calls {
		calls[i] = call("read", fmt.Sprintf(`{"path":"f%d"}`, i))
	}
	for range 2 {
		for _, c := range calls {
			tr.ShouldSkip(c)
			tr.Record(c, Outcome{Result: "x"})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := call("read", fmt.Sprintf(`{"path":"new%d"}`, i))
		tr.ShouldSkip(c)
		tr.Record(c, Outcome{Result: "x"})
	}
}

var _ = context.Background
