package sessions

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/store"
)

// downStore is a Store whose server is down: every operation fails, and
// it counts the Reserves that reached it.
type downStore struct{ reserves atomic.Int32 }

var errDown = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (s *downStore) Reserve(context.Context, []store.Reservation) ([]store.Grant, error) {
	s.reserves.Add(1)
	return nil, errDown
}
func (s *downStore) Commit(context.Context, []store.Reservation) error  { return errDown }
func (s *downStore) Release(context.Context, []store.Reservation) error { return errDown }

// TestTrackersShareABreaker pins issue 29 item 7: the MCP adapters made
// every conversation's Tracker with a breaker of its own, so an outage
// cost one timeout per conversation (200 sessions paid 600 timeouts).
// The trackers of a Map share one: the first failure opens it for all.
func TestTrackersShareABreaker(t *testing.T) {
	st := &downStore{}
	m := New[string](toolguard.Policy{Store: st, SharedQuotas: []store.SharedQuota{{Name: "fleet", Limit: 10}}}, 0, 0)
	for _, k := range []string{"a", "b", "c", "d"} {
		tr, _ := m.Get(k)
		d := tr.ShouldSkip(toolguard.Call{ID: k, Tool: "t", Args: []byte(`{}`)})
		assert.ErrorIs(t, d.Err, store.ErrUnavailable)
	}
	assert.EqualValues(t, 1, st.reserves.Load(), "one store failure for the process, not one per conversation")
}
