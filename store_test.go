package toolguard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard/store"
)

func TestSharedQuotaAcrossTrackers(t *testing.T) {
	mem := store.NewMemory(nil)
	p := Policy{Store: mem, SharedQuotas: []store.SharedQuota{{Name: "tenant:acme", Tools: []string{"web_*"}, Limit: 3}}}
	a, b := NewTracker(p), NewTracker(p)
	run(t, a, []step{allow(call("web_fetch", `{"url":"https://x.org/1"}`), "1"), allow(call("web_fetch", `{"url":"https://x.org/2"}`), "2")})
	run(t, b, []step{
		allow(call("web_search", `{"query":"alpha"}`), "1"),
		hint(call("web_search", `{"query":"totally different"}`), ReasonToolLimit),
		allow(call("read_file", `{"path":"a"}`), "ok"), // not a web_* tool
	})
	assert.Equal(t, 3, mem.Count("quota:tenant:acme"))
	d := a.ShouldSkip(call("web_fetch", `{"url":"https://x.org/3"}`))
	assert.Equal(t, Hint, d.Verdict)
	// A fleet-wide quota is named as shared, not as the session's.
	assert.Contains(t, d.Message, "has reached the shared quota 'tenant:acme' (3 calls, 3 made by every session that shares it)")
	assert.NotContains(t, d.Message, "session quota")
}

func TestSessionQuotaAcrossReplicas(t *testing.T) {
	mem := store.NewMemory(nil)
	p := Policy{Store: mem, SessionID: "s1", AgentQuota: &Quota{Tools: map[string]int{"Bash": 3}}}
	r1, r2 := NewTracker(p), NewTracker(p)
	run(t, r1, []step{allow(call("Bash", `{"c":1}`), "1"), allow(call("Bash", `{"c":2}`), "2")})
	run(t, r2, []step{allow(call("Bash", `{"c":3}`), "3"), hint(call("Bash", `{"c":4}`), ReasonToolLimit)})
	// Another session has its own total.
	other := p
	other.SessionID = "s2"
	run(t, NewTracker(other), []step{allow(call("Bash", `{"c":1}`), "1")})
}

func TestStoreConcurrency(t *testing.T) {
	mem := store.NewMemory(nil)
	p := Policy{Store: mem, SharedQuotas: []store.SharedQuota{{Name: "fleet", Limit: 10}}, MaxCallsPerTurn: -1}
	trackers := []*Tracker{NewTracker(p), NewTracker(p), NewTracker(p), NewTracker(p)}
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			tr := trackers[i%len(trackers)]
			c := call("t", fmt.Sprintf(`{"i":%d}`, i))
			if tr.ShouldSkip(c).Verdict == Allow {
				allowed.Add(1)
				tr.Record(c, Outcome{Result: "r"})
			}
		}(i)
	}
	wg.Wait()
	assert.Equal(t, int32(10), allowed.Load())
	assert.Equal(t, 10, mem.Count("quota:fleet"))
}

// brokenStore fails every operation.
type brokenStore struct{ calls atomic.Int32 }

func (s *brokenStore) Reserve(ctx context.Context, rs []store.Reservation) ([]store.Grant, error) {
	s.calls.Add(1)
	return nil, errors.New("connection refused")
}
func (s *brokenStore) Commit(ctx context.Context, rs []store.Reservation) error {
	return errors.New("down")
}
func (s *brokenStore) Release(ctx context.Context, rs []store.Reservation) error {
	return errors.New("down")
}

func TestStoreFaults(t *testing.T) {
	q := []store.SharedQuota{{Name: "fleet", Limit: 2}}
	t.Run("fail closed refuses calls that need the store", func(t *testing.T) {
		var evs []Event
		tr := NewTracker(Policy{Store: &brokenStore{}, SharedQuotas: q, OnEvent: func(e Event) { evs = append(evs, e) }})
		d := tr.ShouldSkip(call("t", `{}`))
		require.Equal(t, Hint, d.Verdict)
		require.ErrorIs(t, d.Err, store.ErrUnavailable)
		assert.Contains(t, d.Err.Error(), "connection refused")
		assert.Contains(t, d.Message, "not executed")
		assert.Equal(t, EventStore, evs[0].Kind)
	})
	t.Run("fail open counts locally and says so", func(t *testing.T) {
		var stores int
		tr := NewTracker(Policy{Store: &brokenStore{},
			SharedQuotas: q,
			FailOpen:     true,
			OnEvent: func(e Event) {
				if e.Kind == EventStore {
					stores++
				}
			}})
		run(t, tr, []step{
			allow(call("t", `{"a":1}`), "r"), allow(call("t", `{"a":2}`), "r"),
			hint(call("t", `{"a":3}`), ReasonToolLimit), // the limit holds locally
		})
		assert.Equal(t, 3, stores)
	})
	t.Run("a slow mem is bounded by StoreTimeout", func(t *testing.T) {
		tr := NewTracker(Policy{Store: slowStore{}, SharedQuotas: q, StoreTimeout: 20 * time.Millisecond})
		start := time.Now()
		d := tr.ShouldSkip(call("t", `{}`))
		require.ErrorIs(t, d.Err, store.ErrUnavailable)
		assert.Less(t, time.Since(start), 2*time.Second)
	})
}

// slowStore answers only when the context ends.
type slowStore struct{}

func (slowStore) Reserve(ctx context.Context, rs []store.Reservation) ([]store.Grant, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (slowStore) Commit(ctx context.Context, rs []store.Reservation) error  { return nil }
func (slowStore) Release(ctx context.Context, rs []store.Reservation) error { return nil }

func TestCounterKeysDoNotCollide(t *testing.T) {
	mem := store.NewMemory(nil)
	// Quota names are keys as written: names that meet are the operator's
	// choice, and Validate reports them.
	p := Policy{SharedQuotas: []store.SharedQuota{{Name: "x", PerTool: true, Limit: 1}, {Name: "x:y", Limit: 1}}}
	require.ErrorContains(t, p.Validate(), `uses its counter "quota:x:y" too`)
	// Session ids are escaped: a tool name holding ':' cannot reach another
	// session's counter.
	s1 := NewTracker(Policy{Store: mem, SessionID: "a:b", AgentQuota: &Quota{Default: 1}})
	s2 := NewTracker(Policy{Store: mem, SessionID: "a", AgentQuota: &Quota{Default: 1}})
	run(t, s1, []step{allow(call("c", `{}`), "r")})
	run(t, s2, []step{allow(call("b:c", `{}`), "r")})
}

// countingStore counts the operations a Tracker asks for (a batch is one
// operation) and the reservations they carry.
type countingStore struct {
	*store.Memory
	reserves, commits, releases atomic.Int32 // operations
	reserved, released          atomic.Int32 // reservations
}

func (s *countingStore) Reserve(ctx context.Context, rs []store.Reservation) ([]store.Grant, error) {
	s.reserves.Add(1)
	s.reserved.Add(int32(len(rs)))
	return s.Memory.Reserve(ctx, rs)
}

func (s *countingStore) Commit(ctx context.Context, rs []store.Reservation) error {
	s.commits.Add(1)
	return s.Memory.Commit(ctx, rs)
}

func (s *countingStore) Release(ctx context.Context, rs []store.Reservation) error {
	s.releases.Add(1)
	s.released.Add(int32(len(rs)))
	return s.Memory.Release(ctx, rs)
}

// ops returns the operations so far: reserves, commits, releases.
func (s *countingStore) ops() [3]int32 {
	return [3]int32{s.reserves.Load(), s.commits.Load(), s.releases.Load()}
}

// TestLocalRefusalMakesNoStoreOperation: the local rules decide first, so
// a call they refuse costs no round trip to the Store; an allowed call
// costs one reserve and one commit.
func TestLocalRefusalMakesNoStoreOperation(t *testing.T) {
	mem := &countingStore{Memory: store.NewMemory(nil)}
	tr := NewTracker(Policy{
		Store: mem, SharedQuotas: []store.SharedQuota{{Name: "fleet", Limit: 100}},
		MaxRepeats: 2,
	})
	c := call("read", `{"path":"a"}`)
	run(t, tr, []step{allow(c, "same"), allow(c, "same")})
	assert.Equal(t, [3]int32{2, 2, 0}, mem.ops())
	run(t, tr, []step{hint(c, ReasonDuplicate)})
	d := tr.ShouldSkip(c)
	require.Equal(t, Abort, d.Verdict)
	assert.Equal(t, [3]int32{2, 2, 0}, mem.ops(), "a refused call reached the store")
	assert.Equal(t, 2, mem.Count("quota:fleet"))
}

// TestRoundReservesOnce: the calls of a round that the local rules allow
// reserve their counters in one Store operation; those refused after the
// reservation (the store's limit, a rule that an earlier call of the
// round fired) release theirs in one operation.
func TestRoundReservesOnce(t *testing.T) {
	mem := &countingStore{Memory: store.NewMemory(nil)}
	var stores []Event
	tr := NewTracker(Policy{
		Store: mem, SharedQuotas: []store.SharedQuota{{Name: "fleet", Limit: 3}},
		Tools: map[string]ToolPolicy{"grep": {Limit: 1}},
		OnEvent: func(e Event) {
			if e.Kind == EventStore {
				stores = append(stores, e)
			}
		},
	})
	calls := []Call{
		call("read", `{"path":"a"}`),
		call("grep", `{"pattern":"x"}`),
		call("grep", `{"pattern":"y"}`), // the per-turn limit, after the first grep
		call("read", `{"path":"b"}`),
		call("read", `{"path":"c"}`), // the fleet's limit
	}
	ds := tr.ShouldSkipRound(calls)
	verdicts := make([]Verdict, len(ds))
	for i, d := range ds {
		verdicts[i] = d.Verdict
	}
	assert.Equal(t, []Verdict{Allow, Allow, Hint, Allow, Hint}, verdicts)
	assert.Equal(t, ReasonToolLimit, ds[2].Reason)
	assert.Contains(t, ds[2].Message, "for this turn")
	assert.Contains(t, ds[4].Message, "shared quota 'fleet'")
	// The third call's unit made the store refuse the fourth: it was
	// returned, and the fourth asked again.
	assert.Equal(t, [3]int32{2, 0, 1}, mem.ops(), "one reserve for the round, one release, one reserve again")
	assert.EqualValues(t, 6, mem.reserved.Load())
	assert.EqualValues(t, 1, mem.released.Load(), "only the third held units it did not use")
	assert.Equal(t, 3, mem.Count("quota:fleet"))
	assert.Empty(t, stores)

	// Tracker.RunRound checks its calls the same way.
	tr.Reset()
	g := func(context.Context, Call) (string, error) { return "ok", nil }
	rs := tr.RunRound(context.Background(), []Call{call("list", `{"a":1}`), call("list", `{"a":2}`)}, g)
	for _, r := range rs {
		assert.Equal(t, Hint, r.Decision.Verdict, "the fleet's quota is used up")
		assert.Equal(t, ReasonToolLimit, r.Decision.Reason)
	}
	assert.Equal(t, [3]int32{3, 0, 1}, mem.ops(), "one reserve for the round")
}

// TestSpentBudgetMakesNoReservation checks that a call the spent turn
// budget refuses does not ask the Store, and that a new turn does.
func TestSpentBudgetMakesNoReservation(t *testing.T) {
	mem := &countingStore{Memory: store.NewMemory(nil)}
	tr := NewTracker(Policy{
		Store:           mem,
		SharedQuotas:    []store.SharedQuota{{Name: "fleet", Tools: []string{"*"}, Limit: 100}},
		MaxCallsPerTurn: 2,
	})
	for i := range 2 {
		c := call("bash", fmt.Sprintf(`{"c":%d}`, i))
		require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
		tr.Record(c, Outcome{Result: "ok"})
	}
	d := tr.ShouldSkip(call("bash", `{"c":9}`))
	assert.Equal(t, Abort, d.Verdict)
	assert.Equal(t, ReasonBudget, d.Reason)
	assert.EqualValues(t, 2, mem.reserves.Load(), "the refused call made a reservation")
	assert.Equal(t, 2, mem.Count("quota:fleet"))

	tr.Reset()
	c := call("bash", `{"c":10}`)
	require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
	tr.Record(c, Outcome{Result: "ok"})
	assert.EqualValues(t, 3, mem.reserves.Load())
	assert.Equal(t, 3, mem.Count("quota:fleet"))
}

// TestResetBetweenBudgetCheckAndDecision races Reset against calls that
// find the budget spent: every allowed call must hold a reservation, so the
// shared count equals the calls allowed.
func TestResetBetweenBudgetCheckAndDecision(t *testing.T) {
	mem := store.NewMemory(nil)
	tr := NewTracker(Policy{
		Store:           mem,
		SharedQuotas:    []store.SharedQuota{{Name: "fleet", Tools: []string{"*"}, Limit: 1 << 20}},
		MaxCallsPerTurn: 1, MaxRepeats: -1,
	})
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				c := call("bash", fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))
				if tr.ShouldSkip(c).Verdict == Allow {
					allowed.Add(1)
					tr.Record(c, Outcome{Result: "ok"})
				}
				if i%3 == 0 {
					tr.Reset()
				}
			}
		}()
	}
	wg.Wait()
	assert.Positive(t, allowed.Load())
	assert.Equal(t, int(allowed.Load()), mem.Count("quota:fleet"))
}

// TestDroppedCallsCommitTheirReservations leaves allowed calls unrecorded
// across more turns than the Tracker remembers: the reservations of the
// calls it forgets are committed (allowed calls count), while those it
// still remembers expire after ReservationTTL as for a crashed replica.
func TestDroppedCallsCommitTheirReservations(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	mem := store.NewMemory(clock)
	tr := NewTracker(Policy{
		Store:          mem,
		ReservationTTL: time.Minute,
		SessionLimit:   -1,
		SharedQuotas:   []store.SharedQuota{{Name: "fleet", Tools: []string{"*"}, Limit: 1 << 20}},
	})
	const turns = maxStale + 44
	for i := range turns {
		d := tr.ShouldSkip(call("bash", fmt.Sprintf(`{"turn":%d}`, i)))
		require.Equal(t, Allow, d.Verdict, "turn %d: %s", i, d.Message)
		tr.Reset() // the call is never recorded
	}
	assert.Equal(t, turns, mem.Count("quota:fleet"), "committed and live reservations")
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	assert.Equal(t, turns-maxStale, mem.Count("quota:fleet"), "the dropped calls' units were committed")

	// A dropped call recorded late is booked without a second unit.
	c := call("bash", `{"turn":0}`)
	tr.Record(c, Outcome{Result: "late"})
	assert.Equal(t, turns-maxStale, mem.Count("quota:fleet"))
}

// TestPendingOverflowCommitsReservations allows more unrecorded calls in
// one turn than the Tracker keeps pending: the oldest are dropped and their
// reservations committed.
func TestPendingOverflowCommitsReservations(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	mem := store.NewMemory(clock)
	tr := NewTracker(Policy{
		Store:           mem,
		ReservationTTL:  time.Minute,
		SessionLimit:    -1,
		SharedQuotas:    []store.SharedQuota{{Name: "fleet", Tools: []string{"*"}, Limit: 1 << 20}},
		MaxCallsPerTurn: -1,
	})
	const calls = maxPending + 10
	for i := range calls {
		d := tr.ShouldSkip(call("bash", fmt.Sprintf(`{"i":%d}`, i)))
		require.Equal(t, Allow, d.Verdict, "call %d: %s", i, d.Message)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	assert.Equal(t, calls-maxPending, mem.Count("quota:fleet"))
	// The dropped calls no longer hold their keys as pending.
	ks := tr.turn.keys.get(testKey("bash", hashArgs([]byte(`{"i":0}`), nil)))
	require.NotNil(t, ks)
	assert.Zero(t, ks.pending)
	ks = tr.turn.keys.get(testKey("bash", hashArgs([]byte(`{"i":10}`), nil)))
	assert.Equal(t, int32(1), ks.pending)
}
