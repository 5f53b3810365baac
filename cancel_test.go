package toolguard

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard/store"
)

// cancelled checks c, expects it allowed and records it as cancelled.
func cancelled(t *testing.T, tr *Tracker, c Call) {
	t.Helper()
	d := tr.ShouldSkip(c)
	require.Equal(t, Allow, d.Verdict, "%s %s: %s", c.Tool, c.Args, d.Message)
	tr.Record(c, Outcome{Cancelled: true, Result: "partial", Err: assert.AnError})
}

// A cancelled call has no result: it is no repeat, no failure, no
// progress, and the next identical calls count as if it never was.
func TestCancelledCallIsNotBooked(t *testing.T) {
	a := call("fetch", `{"url":"https://example.org/slow"}`)
	tr := NewTracker(Policy{})
	for range 6 { // past MaxRepeats and MaxFailures both
		cancelled(t, tr, a)
	}
	run(t, tr, []step{allow(a, "same"), allow(a, "same"), hint(a, ReasonDuplicate)})
	d := tr.ShouldSkip(a)
	assert.Equal(t, Abort, d.Verdict)

	s := tr.Summary()
	assert.Equal(t, 2, s.Calls, "cancelled calls are not executed calls")
	assert.Zero(t, s.Failed)
	var pending, ok int
	for _, e := range tr.Ledger() {
		switch e.Status() {
		case "pending":
			pending++
		case "ok":
			ok++
		}
	}
	assert.Equal(t, 6, pending, "a cancelled call's entry stays pending")
	assert.Equal(t, 2, ok)
}

// A cancelled call between two identical calls does not make the third a
// fourth, and its text never becomes "the earlier result".
func TestCancelledCallBetweenRepeats(t *testing.T) {
	a := call("read", `{"path":"a"}`)
	tr := NewTracker(Policy{})
	run(t, tr, []step{allow(a, "x")})
	cancelled(t, tr, a)
	run(t, tr, []step{allow(a, "x"), hint(a, ReasonDuplicate)})
}

// The budget unit, the per-turn limit and the session quota a cancelled
// call held are given back.
func TestCancelledCallGivesBackItsUnits(t *testing.T) {
	t.Run("calls", func(t *testing.T) {
		tr := NewTracker(Policy{MaxCallsPerTurn: 2})
		cancelled(t, tr, call("a", `{}`))
		cancelled(t, tr, call("b", `{}`))
		run(t, tr, []step{allow(call("c", `{}`), "1"), {call: call("d", `{}`), result: "2", want: Allow, wantPhase: ph(PhaseWindDown)}})
		assert.Equal(t, Abort, tr.ShouldSkip(call("e", `{}`)).Verdict)
	})
	t.Run("rounds", func(t *testing.T) {
		tr := NewTracker(Policy{MaxCallsPerTurn: 1, CountRounds: true})
		calls := []Call{call("a", `{}`), call("b", `{}`)}
		for _, d := range tr.ShouldSkipRound(calls) {
			require.Equal(t, Allow, d.Verdict)
		}
		tr.Record(calls[0], Outcome{Cancelled: true})
		tr.Record(calls[1], Outcome{Cancelled: true})
		// The round never used its unit: the next round may.
		d := tr.ShouldSkip(call("c", `{}`))
		require.Equal(t, Allow, d.Verdict, d.Message)
		assert.Equal(t, PhaseWindDown, tr.Record(call("c", `{}`), Outcome{Result: "ok"}))
	})
	t.Run("a round with a recorded call keeps its unit", func(t *testing.T) {
		tr := NewTracker(Policy{MaxCallsPerTurn: 2, CountRounds: true})
		calls := []Call{call("a", `{}`), call("b", `{}`)}
		tr.ShouldSkipRound(calls)
		tr.Record(calls[0], Outcome{Result: "ok"})
		tr.Record(calls[1], Outcome{Cancelled: true})
		run(t, tr, []step{{call: call("c", `{}`), result: "ok", want: Allow, wantPhase: ph(PhaseWindDown)}})
	})
	t.Run("per-turn limit", func(t *testing.T) {
		tr := NewTracker(Policy{Tools: map[string]ToolPolicy{"t": {Limit: 1}}})
		cancelled(t, tr, call("t", `{"i":1}`))
		run(t, tr, []step{allow(call("t", `{"i":2}`), "ok"), hint(call("t", `{"i":3}`), ReasonToolLimit)})
	})
	t.Run("session quota", func(t *testing.T) {
		tr := NewTracker(Policy{AgentQuota: &Quota{Tools: map[string]int{"t": 1}}})
		cancelled(t, tr, call("t", `{"i":1}`))
		tr.Reset()
		run(t, tr, []step{allow(call("t", `{"i":2}`), "ok"), hint(call("t", `{"i":3}`), ReasonToolLimit)})
	})
	t.Run("store reservation released", func(t *testing.T) {
		mem := store.NewMemory(nil)
		tr := NewTracker(Policy{Store: mem, SharedQuotas: []store.SharedQuota{{Name: "fleet", Limit: 1}}})
		cancelled(t, tr, call("t", `{"i":1}`))
		assert.Equal(t, 0, mem.Count("quota:fleet"))
		run(t, tr, []step{allow(call("t", `{"i":2}`), "ok"), hint(call("t", `{"i":3}`), ReasonToolLimit)})
		assert.Equal(t, 1, mem.Count("quota:fleet"))
	})
}

// A search cancelled leaves no trace in the rolling window of similar
// searches.
func TestCancelledSearchLeavesTheWindow(t *testing.T) {
	p := Policy{Window: 3, WindowLimit: 2, SimilarityThreshold: 0.5}
	q := func(s string) Call { return call("web_search", `{"query":"`+s+`"}`) }
	tr := NewTracker(p)
	cancelled(t, tr, q("golang context cancel"))
	cancelled(t, tr, q("golang context cancellation"))
	d := tr.ShouldSkip(q("golang cancel context"))
	assert.Equal(t, Allow, d.Verdict, d.Message)

	// The same searches answered with nothing new fire.
	tr = NewTracker(p)
	run(t, tr, []step{allow(q("golang context cancel"), "none"), allow(q("golang context cancellation"), "none")})
	assert.NotEqual(t, Allow, tr.ShouldSkip(q("golang cancel context")).Verdict)
}

// A cancellation that arrives after Reset, for a call of the old turn,
// changes nothing of the new turn and gives back the session count; one
// for a call never checked is ignored.
func TestLateAndUnknownCancellations(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: 1, AgentQuota: &Quota{Tools: map[string]int{"t": 1}}})
	c := call("t", `{"i":1}`)
	require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
	tr.Reset()
	assert.Equal(t, PhaseNormal, tr.Record(c, Outcome{Cancelled: true}))
	run(t, tr, []step{{call: call("t", `{"i":2}`), result: "ok", want: Allow, wantPhase: ph(PhaseWindDown)}})

	tr = NewTracker(Policy{MaxCallsPerTurn: 1})
	assert.Equal(t, PhaseNormal, tr.Record(call("never", `{}`), Outcome{Cancelled: true}))
	assert.Empty(t, tr.Ledger())
	run(t, tr, []step{{call: call("t", `{}`), result: "ok", want: Allow, wantPhase: ph(PhaseWindDown)}})
}

// A cancelled call with an id releases that call, not another with the
// same arguments.
func TestCancelledCallByID(t *testing.T) {
	tr := NewTracker(Policy{})
	a1 := Call{ID: "1", Tool: "read", Args: []byte(`{"p":1}`)}
	a2 := Call{ID: "2", Tool: "read", Args: []byte(`{"p":1}`)}
	require.Equal(t, Allow, tr.ShouldSkip(a1).Verdict)
	require.Equal(t, Allow, tr.ShouldSkip(a2).Verdict)
	tr.Record(a2, Outcome{Cancelled: true})
	tr.Record(a1, Outcome{Result: "x"})
	l := tr.Ledger()
	require.Len(t, l, 2)
	assert.Equal(t, "ok", l[0].Status())
	assert.Equal(t, "pending", l[1].Status())
}

// Run books nothing of a call whose context its caller cancelled while it
// ran, and books a call that ran past its deadline as the failure it is.
func TestRunCancelledContext(t *testing.T) {
	tr := NewTracker(Policy{MaxRepeats: 1})
	c := call("slow", `{"n":1}`)
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		r := tr.Run(ctx, c, func(context.Context, Call) (string, error) {
			cancel()
			return "", context.Canceled
		})
		require.Equal(t, Allow, r.Decision.Verdict, "call %d", i+1)
	}
	for _, e := range tr.Ledger() {
		assert.Equal(t, "pending", e.Status())
	}

	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	timeout := func(ctx context.Context, _ Call) (string, error) { return "", ctx.Err() }
	tr = NewTracker(Policy{})
	require.Equal(t, Allow, tr.Run(ctx, c, timeout).Decision.Verdict)
	l := tr.Ledger()
	require.Len(t, l, 1)
	assert.Equal(t, "failed", l[0].Status())
}
