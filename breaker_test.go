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

// switchStore fails while down is set and counts the operations it saw.
type switchStore struct {
	down  atomic.Bool
	ops   atomic.Int32
	inner *store.Memory
}

func (s *switchStore) Reserve(ctx context.Context, rs []store.Reservation) ([]store.Grant, error) {
	s.ops.Add(1)
	if s.down.Load() {
		return nil, errors.New("connection refused")
	}
	return s.inner.Reserve(ctx, rs)
}

func (s *switchStore) Commit(ctx context.Context, rs []store.Reservation) error {
	s.ops.Add(1)
	if s.down.Load() {
		return errors.New("connection refused")
	}
	return s.inner.Commit(ctx, rs)
}

func (s *switchStore) Release(ctx context.Context, rs []store.Reservation) error {
	s.ops.Add(1)
	if s.down.Load() {
		return errors.New("connection refused")
	}
	return s.inner.Release(ctx, rs)
}

func TestBreakerRules(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := &switchStore{inner: store.NewMemory(clock)}
	var states []store.BreakerState
	tr := NewTracker(Policy{
		Store:        mem,
		SharedQuotas: []store.SharedQuota{{Name: "q", Limit: 100}},
		Now:          clock, MaxCallsPerTurn: -1,
		OnEvent: func(e Event) {
			if e.Kind == EventBreaker {
				states = append(states, e.Breaker)
				if e.Breaker == store.BreakerOpen {
					assert.ErrorIs(t, e.Err, store.ErrUnavailable, "the failure that opened it")
				}
			}
		},
	})
	i := 0
	next := func() Decision {
		i++
		c := call("t", fmt.Sprintf(`{"i":%d}`, i))
		d := tr.ShouldSkip(c)
		if d.Verdict == Allow {
			tr.Record(c, Outcome{Result: "r"})
		}
		return d
	}

	require.Equal(t, Allow, next().Verdict)
	assert.Equal(t, int32(2), mem.ops.Load(), "reserve and commit")

	mem.down.Store(true)
	d := next()
	require.ErrorIs(t, d.Err, store.ErrUnavailable)
	assert.NotErrorIs(t, d.Err, store.ErrBreakerOpen, "the failure itself went to the store")
	assert.Equal(t, []store.BreakerState{store.BreakerOpen}, states)
	// Open: no call reaches the store during the cooldown.
	ops := mem.ops.Load()
	for range 10 {
		d = next()
		require.ErrorIs(t, d.Err, store.ErrBreakerOpen)
		require.ErrorIs(t, d.Err, store.ErrUnavailable)
	}
	assert.Equal(t, ops, mem.ops.Load())
	// After the cooldown one probe runs; it fails: open again.
	now = now.Add(time.Second) // the default cooldown
	next()
	assert.Equal(t, ops+1, mem.ops.Load())
	assert.Equal(t, []store.BreakerState{store.BreakerOpen, store.BreakerHalfOpen, store.BreakerOpen}, states)
	next()
	assert.Equal(t, ops+1, mem.ops.Load())
	// The store is back: the next probe succeeds and closes the breaker.
	mem.down.Store(false)
	now = now.Add(time.Second) // the default cooldown
	require.Equal(t, Allow, next().Verdict)
	assert.Equal(t, []store.BreakerState{store.BreakerOpen, store.BreakerHalfOpen, store.BreakerOpen, store.BreakerHalfOpen, store.BreakerClosed}, states)
	require.Equal(t, Allow, next().Verdict)
	assert.Equal(t, 3, mem.inner.Count("quota:q"))
}

func TestBreakerShared(t *testing.T) {
	mem := &switchStore{inner: store.NewMemory(nil)}
	mem.down.Store(true)
	b := &store.Breaker{Cooldown: time.Hour}
	p := Policy{Store: mem, SharedQuotas: []store.SharedQuota{{Name: "q", Limit: 100}}, Breaker: b}
	NewTracker(p).ShouldSkip(call("t", `{}`))
	assert.Equal(t, store.BreakerOpen, b.State())
	d := NewTracker(p).ShouldSkip(call("t", `{}`))
	assert.ErrorIs(t, d.Err, store.ErrBreakerOpen, "another session learns of the outage from the shared breaker")
	assert.Equal(t, int32(1), mem.ops.Load())

	off := p
	off.Breaker = &store.Breaker{Cooldown: -1}
	tr := NewTracker(off)
	tr.ShouldSkip(call("t", `{"a":1}`))
	tr.ShouldSkip(call("t", `{"a":2}`))
	assert.Equal(t, int32(3), mem.ops.Load(), "without a breaker every call asks the store")
}

// TestBreakerOutageCost pins issue 16 item 6: during a store that hangs
// for a second, each call used to wait StoreTimeout (250ms), so 8 parallel
// callers got about 32 calls through in fail-open mode. With the breaker
// the outage costs one timeout per caller in flight, then calls run at once.
func TestBreakerOutageCost(t *testing.T) {
	var reserves atomic.Int32
	mem := hangStore{calls: &reserves}
	tr := NewTracker(Policy{
		Store:        mem,
		SharedQuotas: []store.SharedQuota{{Name: "q", Limit: 1 << 30}},
		FailOpen:     true,

		MaxCallsPerTurn: -1, MaxRepeats: -1, CyclePeriod: -1, Window: -1})
	var through atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(time.Second)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(end); i++ {
				c := call("t", fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))
				if tr.ShouldSkip(c).Verdict == Allow {
					through.Add(1)
					tr.Record(c, Outcome{Result: "r"})
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("1s outage, 8 callers, StoreTimeout 250ms, fail open: %d calls through, %d reached the store", through.Load(), reserves.Load())
	assert.Greater(t, through.Load(), int64(1000))
	// The callers in flight when it failed, then one probe per cooldown.
	assert.LessOrEqual(t, reserves.Load(), int32(8+2))
}

// hangStore answers only when the context ends, like a server that stopped.
type hangStore struct{ calls *atomic.Int32 }

func (s hangStore) Reserve(ctx context.Context, rs []store.Reservation) ([]store.Grant, error) {
	s.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}
func (s hangStore) Commit(ctx context.Context, rs []store.Reservation) error {
	<-ctx.Done()
	return ctx.Err()
}
func (s hangStore) Release(ctx context.Context, rs []store.Reservation) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestBreakerDoesNotHoldCommitsBack: a commit is sent while the breaker is
// open. Held back, its reservation would expire and give its unit back (an
// over-admission).
func TestBreakerDoesNotHoldCommitsBack(t *testing.T) {
	mem := &switchStore{inner: store.NewMemory(nil)}
	var breaker []store.BreakerState
	tr := NewTracker(Policy{
		Store:           mem,
		SharedQuotas:    []store.SharedQuota{{Name: "q", Limit: 100}},
		FailOpen:        true,
		MaxCallsPerTurn: -1,
		OnEvent: func(e Event) {
			if e.Kind == EventBreaker {
				breaker = append(breaker, e.Breaker)
			}
		},
	})
	a := call("t", `{"a":1}`)
	require.Equal(t, Allow, tr.ShouldSkip(a).Verdict)
	mem.down.Store(true)
	require.Equal(t, Allow, tr.ShouldSkip(call("t", `{"b":1}`)).Verdict, "failing open")
	require.Equal(t, []store.BreakerState{store.BreakerOpen}, breaker)
	mem.down.Store(false)
	before := mem.ops.Load()
	tr.Record(a, Outcome{Result: "ok"})
	assert.Equal(t, before+1, mem.ops.Load(), "the open breaker held the commit back")
	assert.Equal(t, 1, mem.inner.Count("quota:q"))
	assert.Equal(t, []store.BreakerState{store.BreakerOpen}, breaker, "a commit does not close the breaker")
}
