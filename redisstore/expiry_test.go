package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/store"
)

// These tests use real time: the scripts read the server's clock.

func TestWindowedTotalExpires(t *testing.T) {
	s, c, prefix := setup(t)
	ctx := context.Background()
	const window = 300 * time.Millisecond
	k := []store.Counter{{Key: "w", Limit: 2, Window: window}}
	start := time.Now()
	for _, id := range []string{"1", "2"} {
		r := store.Reservation{ID: id, Counters: k}
		g, err := reserve(ctx, s, r)
		require.NoError(t, err)
		require.True(t, g.OK)
		commit(t, s, r)
	}
	g, err := reserve(ctx, s, store.Reservation{ID: "3", Counters: k})
	require.NoError(t, err)
	require.False(t, g.OK, "the window is full")
	pttl := c.PTTL(ctx, ckey(prefix, "w")).Val()
	assert.True(t, pttl > 0 && pttl <= window, "the total expires with its window: %v", pttl)

	time.Sleep(window + 50*time.Millisecond - time.Since(start))
	n, err := s.Count(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a new window starts from zero")
	g, err = reserve(ctx, s, store.Reservation{ID: "4", Counters: k})
	require.NoError(t, err)
	assert.Equal(t, []int{1}, g.Counts)
	assert.Greater(t, c.PTTL(ctx, ckey(prefix, "w")).Val(), 200*time.Millisecond, "the new window starts with its first unit")
}

// TestWindowEndsWhileReserved: a unit reserved in one window and committed
// after it ended counts in the next window, as with store.Memory.
func TestWindowEndsWhileReserved(t *testing.T) {
	s, _, _ := setup(t)
	ctx := context.Background()
	k := []store.Counter{{Key: "w", Limit: 5, Window: 200 * time.Millisecond}}
	r1, r2 := store.Reservation{ID: "1", Counters: k, TTL: time.Minute}, store.Reservation{ID: "2", Counters: k, TTL: time.Minute}
	_, err := s.Reserve(ctx, []store.Reservation{r1, r2})
	require.NoError(t, err)
	commit(t, s, r1)
	time.Sleep(250 * time.Millisecond)
	n, _ := s.Count(ctx, "w")
	assert.Equal(t, 1, n, "the committed unit went with its window; the held one stays")
	commit(t, s, r2)
	n, _ = s.Count(ctx, "w")
	assert.Equal(t, 1, n)
}

func TestUnsettledReservationExpires(t *testing.T) {
	s, c, prefix := setup(t)
	ctx := context.Background()
	const ttl = 200 * time.Millisecond
	k := []store.Counter{{Key: "k", Limit: 1}}
	lost := store.Reservation{ID: "lost", Counters: k, TTL: ttl}
	g, err := reserve(ctx, s, lost)
	require.NoError(t, err)
	require.True(t, g.OK)
	g, err = reserve(ctx, s, store.Reservation{ID: "2", Counters: k, TTL: ttl})
	require.NoError(t, err)
	require.False(t, g.OK, "the unit is held")

	time.Sleep(ttl + 50*time.Millisecond)
	n, err := s.Count(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 0, n, "an unsettled reservation returns its unit after its TTL")
	r3 := store.Reservation{ID: "3", Counters: k, TTL: time.Minute}
	g, err = reserve(ctx, s, r3)
	require.NoError(t, err)
	require.True(t, g.OK)
	commit(t, s, lost) // a late commit of an expired reservation does nothing
	commit(t, s, r3)
	n, _ = s.Count(ctx, "k")
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{ckey(prefix, "k")}, namespaceKeys(t, c, prefix))
}

// TestCrashedReplica: a Tracker that reserved and died before Record
// holds its unit for ReservationTTL, then the other replicas get it back.
func TestCrashedReplica(t *testing.T) {
	s, _, _ := setup(t)
	p := fleetPolicy(s, 1)
	p.ReservationTTL = 200 * time.Millisecond
	crashed, alive := toolguard.NewTracker(p), toolguard.NewTracker(p)
	require.Equal(t, toolguard.Allow, crashed.ShouldSkip(callN("t", 1)).Verdict) // and never recorded
	ok, d := runCall(alive, callN("t", 2))
	require.False(t, ok)
	assert.Equal(t, toolguard.ReasonToolLimit, d.Reason)
	time.Sleep(250 * time.Millisecond)
	ok, _ = runCall(alive, callN("t", 3))
	assert.True(t, ok)
}
