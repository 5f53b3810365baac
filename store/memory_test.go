package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reserve takes one reservation.
func reserve(t *testing.T, mem *Memory, r Reservation) Grant {
	t.Helper()
	gs, err := mem.Reserve(context.Background(), []Reservation{r})
	require.NoError(t, err)
	require.Len(t, gs, 1)
	return gs[0]
}

func TestMemoryWindowAndTTL(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := NewMemory(clock)
	ctx := context.Background()
	c := []Counter{{Key: "k", Limit: 2, Window: time.Hour}}
	r1 := Reservation{ID: "1", Counters: c}
	require.True(t, reserve(t, mem, r1).OK)
	require.NoError(t, mem.Commit(ctx, []Reservation{r1}))
	require.True(t, reserve(t, mem, Reservation{ID: "2", Counters: c, TTL: time.Minute}).OK)
	g := reserve(t, mem, Reservation{ID: "3", Counters: c})
	require.False(t, g.OK)
	assert.Equal(t, 0, g.Blocked)
	assert.Equal(t, []int{2}, g.Counts)
	// Reservation 2 is never settled: after its TTL its unit returns.
	now = now.Add(2 * time.Minute)
	r4 := Reservation{ID: "4", Counters: c}
	require.True(t, reserve(t, mem, r4).OK)
	require.NoError(t, mem.Release(ctx, []Reservation{r4}))
	assert.Equal(t, 1, mem.Count("k"))
	// The window ends: the total starts over.
	now = now.Add(time.Hour)
	assert.Equal(t, 0, mem.Count("k"))
	// All or nothing.
	g = reserve(t, mem, Reservation{ID: "5", Counters: []Counter{{Key: "a", Limit: 5}, {Key: "b", Limit: 0}}})
	require.False(t, g.OK)
	assert.Equal(t, 1, g.Blocked)
	assert.Equal(t, 0, mem.Count("a"))
}

func TestMemoryRetriedReservation(t *testing.T) {
	mem := NewMemory(nil)
	r := Reservation{ID: "same", Counters: []Counter{{Key: "k", Limit: 5}}}
	reserve(t, mem, r)
	require.True(t, reserve(t, mem, r).OK)
	assert.Equal(t, 1, mem.Count("k"))
	require.NoError(t, mem.Release(context.Background(), []Reservation{r}))
	assert.Equal(t, 0, mem.Count("k"))
}

// TestMemoryBatch: the reservations of one Reserve are taken in order,
// each all or nothing, each seeing the units of those before it.
func TestMemoryBatch(t *testing.T) {
	mem := NewMemory(nil)
	ctx := context.Background()
	shared := Counter{Key: "shared", Limit: 2}
	rs := []Reservation{
		{ID: "a", Counters: []Counter{shared, {Key: "a", Limit: 1}}},
		{ID: "b", Counters: []Counter{{Key: "b", Limit: 1}, shared}},
		{ID: "c", Counters: []Counter{{Key: "c", Limit: 1}, shared}},
	}
	gs, err := mem.Reserve(ctx, rs)
	require.NoError(t, err)
	require.Len(t, gs, 3)
	assert.Equal(t, Grant{OK: true, Blocked: -1, Counts: []int{1, 1}}, gs[0])
	assert.Equal(t, Grant{OK: true, Blocked: -1, Counts: []int{1, 2}}, gs[1])
	assert.Equal(t, Grant{OK: false, Blocked: 1, Counts: []int{0, 2}}, gs[2])
	assert.Equal(t, 0, mem.Count("c"), "a refused reservation takes nothing")

	require.NoError(t, mem.Commit(ctx, rs[:1]))
	require.NoError(t, mem.Release(ctx, rs[1:])) // c was never held: skipped
	assert.Equal(t, 1, mem.Count("shared"))
	assert.Equal(t, 1, mem.Count("a"))
	assert.Equal(t, 0, mem.Count("b"))

	_, err = mem.Reserve(canceled(), rs)
	require.ErrorIs(t, err, context.Canceled)
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
