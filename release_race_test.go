package toolguard

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard/store"
)

// gatedStore is a heldStore whose Reserve, once armed, waits for the test
// after reserving: the test runs what races the call there.
type gatedStore struct {
	*heldStore
	entered, proceed chan struct{}
}

func (s *gatedStore) Reserve(ctx context.Context, rs []store.Reservation) ([]store.Grant, error) {
	gs, err := s.heldStore.Reserve(ctx, rs)
	if s.entered != nil {
		s.entered <- struct{}{}
		<-s.proceed
	}
	return gs, err
}

// TestReleaseDuringReserve pins issue 29 item 3: Sessions.Release while a
// ShouldSkip waited for the Store let the call through on the released
// Tracker, never committed (its Record books nothing): its unit came back
// after the TTL, and the fleet ran more calls than its quota (1,472 of
// 40,168 allowed calls over-admitted in the hammer). Now the call is
// refused as on a released Tracker and its reservation is released at
// once. The same for a round.
func TestReleaseDuringReserve(t *testing.T) {
	for _, round := range []bool{false, true} {
		t.Run(fmt.Sprint("round=", round), func(t *testing.T) {
			st := &gatedStore{heldStore: newHeldStore(nil), entered: make(chan struct{}), proceed: make(chan struct{})}
			ss := NewSessions(Policy{Store: st, SharedQuotas: []store.SharedQuota{{Name: "q", Limit: 10}}})
			tr := ss.NewTracker()
			ds := make(chan []Decision, 1)
			go func() {
				calls := []Call{{ID: "a", Tool: "web", Args: []byte(`{"q":1}`)}}
				if round {
					calls = append(calls, Call{ID: "b", Tool: "web", Args: []byte(`{"q":2}`)})
					ds <- tr.ShouldSkipRound(calls)
				} else {
					ds <- []Decision{tr.ShouldSkip(calls[0])}
				}
			}()
			<-st.entered
			ss.Release(tr)
			close(st.proceed)
			for _, d := range <-ds {
				assert.Equal(t, Abort, d.Verdict)
				assert.ErrorIs(t, d.Err, ErrInvalidCall)
			}
			assert.Zero(t, st.held(), "no reservation left to expire")
			assert.Zero(t, st.Count("quota:q"))
		})
	}
}

// TestReleaseBeforeLock: a call that passed the "released" test before
// Release took the lock is refused as well, and books nothing.
func TestReleaseBeforeLock(t *testing.T) {
	var armed atomic.Bool
	past := make(chan struct{}, 1)
	ss := NewSessions(Policy{Now: func() time.Time {
		if armed.Load() { // the call read the clock: it is past the test
			select {
			case past <- struct{}{}:
			default:
			}
		}
		return time.Now()
	}})
	tr := ss.NewTracker()
	require.Equal(t, Allow, tr.ShouldSkip(Call{ID: "a", Tool: "read", Args: []byte(`{}`)}).Verdict)
	tr.mu.Lock()
	armed.Store(true)
	done := make(chan Decision)
	go func() { done <- tr.ShouldSkip(Call{ID: "b", Tool: "read", Args: []byte(`{"x":1}`)}) }()
	<-past
	tr.released.Store(true) // as Release does, under the lock
	tr.mu.Unlock()
	d := <-done
	assert.Equal(t, Abort, d.Verdict)
	assert.ErrorIs(t, d.Err, ErrInvalidCall)
	assert.Len(t, tr.ledger.entries, 1, "nothing booked after the release")
}
