package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryWindowAndTTL(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := NewMemory(clock)
	ctx := context.Background()
	c := []Counter{{Key: "k", Limit: 2, Window: time.Hour}}
	g, err := mem.Reserve(ctx, Reservation{ID: "1", Counters: c})
	require.NoError(t, err)
	require.True(t, g.OK)
	require.NoError(t, mem.Commit(ctx, "1"))
	g, _ = mem.Reserve(ctx, Reservation{ID: "2", Counters: c, TTL: time.Minute})
	require.True(t, g.OK)
	g, _ = mem.Reserve(ctx, Reservation{ID: "3", Counters: c})
	require.False(t, g.OK)
	assert.Equal(t, 0, g.Blocked)
	assert.Equal(t, []int{2}, g.Counts)
	// Reservation 2 is never settled: after its TTL its unit returns.
	now = now.Add(2 * time.Minute)
	g, _ = mem.Reserve(ctx, Reservation{ID: "4", Counters: c})
	require.True(t, g.OK)
	require.NoError(t, mem.Release(ctx, "4"))
	assert.Equal(t, 1, mem.Count("k"))
	// The window ends: the total starts over.
	now = now.Add(time.Hour)
	assert.Equal(t, 0, mem.Count("k"))
	// All or nothing.
	g, _ = mem.Reserve(ctx, Reservation{ID: "5", Counters: []Counter{{Key: "a", Limit: 5}, {Key: "b", Limit: 0}}})
	require.False(t, g.OK)
	assert.Equal(t, 1, g.Blocked)
	assert.Equal(t, 0, mem.Count("a"))
}

func TestMemoryRetriedReservation(t *testing.T) {
	mem := NewMemory(nil)
	ctx := context.Background()
	r := Reservation{ID: "same", Counters: []Counter{{Key: "k", Limit: 5}}}
	_, _ = mem.Reserve(ctx, r)
	g, _ := mem.Reserve(ctx, r)
	require.True(t, g.OK)
	assert.Equal(t, 1, mem.Count("k"))
	require.NoError(t, mem.Release(ctx, "same"))
	assert.Equal(t, 0, mem.Count("k"))
}
