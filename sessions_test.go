package toolguard

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard/store"
)

// replay runs the calls of an episode through tr and returns its
// decisions.
func replay(tr *Tracker, ep []traceCall) []Decision {
	ds := make([]Decision, 0, len(ep))
	for _, c := range ep {
		d := tr.ShouldSkip(c.call)
		if d.Verdict == Allow {
			tr.Record(c.call, outcomeOf(c))
		}
		ds = append(ds, d)
	}
	return ds
}

// TestSessionsMatchNewTracker replays every trace episode through a Tracker
// of NewTracker(p) and through one of a shared Sessions, whose buffers are
// recycled from the episode before: the decisions, ledgers and summaries
// are the same.
func TestSessionsMatchNewTracker(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	p := Policy{Now: func() time.Time { return at }}
	ss := NewSessions(p)
	for i, ep := range loadTraceStream(t) {
		want, got := NewTracker(p), ss.NewTracker()
		// A turn boundary in the middle, so that turns are kept apart.
		half := len(ep) / 2
		wantDs := append(replay(want, ep[:half]), func() []Decision { want.Reset(); return replay(want, ep[half:]) }()...)
		gotDs := append(replay(got, ep[:half]), func() []Decision { got.Reset(); return replay(got, ep[half:]) }()...)
		require.Equal(t, wantDs, gotDs, "episode %d", i)
		require.Equal(t, want.Ledger(), got.Ledger(), "episode %d", i)
		require.Equal(t, want.SessionSummary(), got.SessionSummary(), "episode %d", i)
		ss.Release(got)
	}
}

// TestSessionsShareToolPolicies checks that the Trackers of a Sessions
// resolve a tool's policy once between them.
func TestSessionsShareToolPolicies(t *testing.T) {
	ss := NewSessions(Policy{Tools: map[string]ToolPolicy{"deploy": {Limit: 1}}})
	a, b := ss.NewTracker(), ss.NewTracker()
	for _, tr := range []*Tracker{a, b} {
		require.Equal(t, Allow, tr.ShouldSkip(call("deploy", `{"v":1}`)).Verdict)
		tr.Record(call("deploy", `{"v":1}`), Outcome{Result: "ok"})
		assert.Equal(t, ReasonToolLimit, tr.ShouldSkip(call("deploy", `{"v":2}`)).Reason, "each session counts its own calls")
	}
	assert.Same(t, a.tool("deploy").rule, b.tool("deploy").rule)
	ss.cfg.rules.mu.Lock()
	assert.Len(t, ss.cfg.rules.rules, 1)
	ss.cfg.rules.mu.Unlock()
}

// TestSessionsRelease checks what a released Tracker does, and that the
// next session starts empty although it reuses the released buffers.
func TestSessionsRelease(t *testing.T) {
	ss := NewSessions(Policy{})
	tr := ss.NewTracker()
	for i := 0; i < 5; i++ {
		c := call("read", fmt.Sprintf(`{"path":"f%d"}`, i))
		require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
		tr.Record(c, Outcome{Result: "x"})
	}
	running := call("bash", `{"cmd":"make"}`)
	require.Equal(t, Allow, tr.ShouldSkip(running).Verdict)
	ss.Release(tr)

	d := tr.ShouldSkip(call("read", `{"path":"f0"}`))
	assert.Equal(t, Abort, d.Verdict)
	assert.Equal(t, ReasonInvalidCall, d.Reason)
	assert.True(t, errors.Is(d.Err, ErrInvalidCall), "%v", d.Err)
	assert.Contains(t, d.Err.Error(), "released")
	assert.Equal(t, PhaseExhausted, tr.Record(running, Outcome{Result: "done"}))
	assert.Empty(t, tr.Ledger())
	assert.Empty(t, tr.Summary().Tools)
	ss.Release(tr) // twice: nothing happens
	NewSessions(Policy{}).Release(ss.NewTracker())

	next := ss.NewTracker()
	assert.Empty(t, next.Ledger())
	for i := 0; i < 2; i++ {
		c := call("read", `{"path":"f0"}`)
		require.Equal(t, Allow, next.ShouldSkip(c).Verdict, "call %d: nothing of the released session is left", i)
		next.Record(c, Outcome{Result: "x"})
	}
	assert.Equal(t, ReasonDuplicate, next.ShouldSkip(call("read", `{"path":"f0"}`)).Reason)
	l := next.Ledger()
	require.Len(t, l, 3)
	assert.Equal(t, uint64(1), l[0].Seq)
	assert.Equal(t, 1, l[0].Turn)
}

// TestSessionsReleaseSettlesReservations checks that a call allowed and
// never recorded keeps counting against a shared quota after Release, as
// after Reset, and that the Trackers of a Sessions without a Store share
// one in-process store for their SharedQuotas.
func TestSessionsReleaseSettlesReservations(t *testing.T) {
	ss := NewSessions(Policy{SharedQuotas: []store.SharedQuota{{Name: "web", Limit: 2}}})
	a := ss.NewTracker()
	require.Equal(t, Allow, a.ShouldSkip(call("web", `{"u":1}`)).Verdict)
	ss.Release(a) // the call was allowed and never recorded
	b := ss.NewTracker()
	c := call("web", `{"u":2}`)
	require.Equal(t, Allow, b.ShouldSkip(c).Verdict)
	b.Record(c, Outcome{Result: "ok"})
	d := b.ShouldSkip(call("web", `{"u":3}`))
	assert.True(t, d.Skip(), "two calls of the quota's two were made")
	assert.Equal(t, ReasonToolLimit, d.Reason)
}

// TestSessionsConcurrent opens, runs and releases sessions of one Sessions
// from many goroutines, and uses a Tracker while another goroutine
// releases it: under -race, nothing in toolguard races.
func TestSessionsConcurrent(t *testing.T) {
	ss := NewSessions(Policy{})
	episodes := loadTraceStream(t)
	if len(episodes) > 64 {
		episodes = episodes[:64]
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ep := range episodes {
				tr := ss.NewTracker()
				replay(tr, ep)
				ss.Release(tr)
			}
		}()
	}
	// A misuse: calls go on while the session is released.
	tr := ss.NewTracker()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			c := call("read", fmt.Sprintf(`{"path":"f%d"}`, i%7))
			if tr.ShouldSkip(c).Verdict == Allow {
				tr.Record(c, Outcome{Result: "x"})
			}
			tr.Ledger()
			tr.Summary()
		}
	}()
	time.Sleep(time.Millisecond)
	ss.Release(tr)
	wg.Wait()
	assert.Equal(t, Abort, tr.ShouldSkip(call("read", `{}`)).Verdict)
}

// TestLedgerTimesAndTurns checks the compact ledger: At is what the clock
// returned (its location kept), Duration runs from the check to the
// Record, and Seq and Turn survive the trimming of old entries.
func TestLedgerTimesAndTurns(t *testing.T) {
	loc := time.FixedZone("X", 5*3600)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, loc)
	var times []time.Time
	tr := NewTracker(Policy{LedgerSize: 3, Now: func() time.Time {
		now = now.Add(1500 * time.Millisecond)
		return now
	}})
	for turn := 1; turn <= 4; turn++ {
		for i := 0; i < turn; i++ {
			c := call("read", fmt.Sprintf(`{"turn":%d,"i":%d}`, turn, i))
			require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
			times = append(times, now)
			tr.Record(c, Outcome{Result: "x"})
		}
		tr.Reset()
	}
	l := tr.Ledger()
	require.Len(t, l, 3)
	for i, e := range l {
		seq := uint64(len(times) - 3 + i + 1)
		assert.Equal(t, seq, e.Seq)
		assert.Equal(t, 4, e.Turn)
		assert.True(t, times[seq-1].Equal(e.At), "%v != %v", times[seq-1], e.At)
		assert.Equal(t, loc, e.At.Location())
		assert.Equal(t, 1500*time.Millisecond, e.Duration)
		assert.True(t, e.Done && !e.Failed)
	}
}
