package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"
	"github.com/toolguard/toolguard/redisstore/internal/redistest"
	"github.com/toolguard/toolguard/store"
)

// The tests of issue 29 items 1 and 5: the eviction policy and the memory
// are read by the reserve script itself, so what the server holds now is
// what a Reserve sees.

// grantedFor runs calls through a Tracker on s for d and returns how many
// were granted and how many were asked.
func grantedFor(s store.Store, limit int, d time.Duration) (granted, asked int) {
	p := fleetPolicy(s, limit)
	p.StoreTimeout = 250 * time.Millisecond
	tr := toolguard.NewTracker(p)
	for end := time.Now().Add(d); time.Now().Before(end); asked++ {
		if ok, _ := runCall(tr, callN("t", asked)); ok {
			granted++
		}
	}
	return granted, asked
}

// TestEvictionPolicyFixedRecovers pins issue 29 item 1: a Store that once
// saw an evicting policy answered from the remembered error, without
// asking the server again, after the operator set noeviction (1 call
// granted of 31,651 in 45 s). Now the next Reserve after the fix works.
func TestEvictionPolicyFixedRecovers(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "64mb")
	ctx := context.Background()
	s := redisstore.New(newClient(t, srv.URL()))
	admin := newClient(t, srv.URL())
	counters := []store.Counter{{Key: "quota:q", Limit: 1_000_000}}
	for i := 0; i < 5; i++ { // connected, the policy read
		_, err := reserve(ctx, s, store.Reservation{ID: fmt.Sprint("a", i), Counters: counters})
		require.NoError(t, err)
	}
	// The operator's mistake, seen after a reconnect.
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	require.NoError(t, admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err())
	var err error
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		if _, err = reserve(ctx, s, store.Reservation{ID: "b", Counters: counters}); err != nil && strings.Contains(err.Error(), "maxmemory-policy") {
			break
		}
	}
	require.ErrorIs(t, err, redisstore.ErrEvictionPolicy)
	for i := 0; i < 5; i++ {
		_, err = reserve(ctx, s, store.Reservation{ID: "b", Counters: counters})
		require.ErrorIs(t, err, redisstore.ErrEvictionPolicy)
	}

	// The operator's fix.
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	granted, asked := grantedFor(s, 1_000_000, time.Second)
	t.Logf("after CONFIG SET maxmemory-policy noeviction: %d calls granted of %d in 1s", granted, asked)
	assert.Equal(t, asked, granted)
	require.NoError(t, s.Flush(ctx))
}

// TestEvictionPolicyHoldsConcurrentCalls pins issue 29 item 5: calls
// running while the first check of the policy was under way were not
// held back (226 of 320 concurrent reserves granted on an allkeys-lru
// server). Now none is.
func TestEvictionPolicyHoldsConcurrentCalls(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
	s := redisstore.New(newClient(t, srv.URL()))
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 320; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := store.Reservation{ID: strconv.Itoa(i), Counters: []store.Counter{{Key: "quota:q", Limit: 1000}}}
			if g, err := reserve(context.Background(), s, r); err == nil && g.OK {
				granted.Add(1)
			} else if err != nil && !strings.Contains(err.Error(), "maxmemory-policy") {
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	t.Logf("allkeys-lru, 320 concurrent reserves on a new Store: %d granted", granted.Load())
	assert.Zero(t, granted.Load())
}

// TestEvictionPolicyChangedLive pins issue 29 item 5: a live server
// switched to allkeys-lru went unnoticed until the client reconnected
// (4.2 times the limit granted). Now the next Reserve is refused.
func TestEvictionPolicyChangedLive(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	s := redisstore.New(newClient(t, srv.URL()))
	counters := []store.Counter{{Key: "quota:q", Limit: 10}}
	var err error
	for i := 0; i < 5; i++ { // connected, the policy read
		_, err = reserve(ctx, s, store.Reservation{ID: fmt.Sprint("a", i), Counters: counters})
		require.NoError(t, err)
	}

	require.NoError(t, newClient(t, srv.URL()).ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	refused := 0
	for i := 0; i < 100; i++ {
		_, err = reserve(ctx, s, store.Reservation{ID: fmt.Sprint("b", i), Counters: counters})
		if err != nil {
			require.ErrorIs(t, err, redisstore.ErrEvictionPolicy)
			refused++
		}
	}
	t.Logf("policy switched to allkeys-lru on the live server: %d of 100 reserves refused", refused)
	assert.Equal(t, 100, refused)
}

// TestMemoryFullRefusesReservations pins issue 29 item 5: under noeviction
// with the memory full, reservations still succeeded and the memory grew
// past maxmemory. Now a Reserve on a full server fails with ErrMemoryFull
// (the Tracker refuses the call, or counts it locally with FailOpen), and
// the memory stays at maxmemory.
func TestMemoryFullRefusesReservations(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	ctx := context.Background()
	fill := newClient(t, srv.URL())
	val := strings.Repeat("x", 4096)
	for i := 0; ; i++ {
		if err := fill.Set(ctx, fmt.Sprint("fill:", i), val, 0).Err(); err != nil {
			require.Contains(t, err.Error(), "OOM")
			break
		}
	}
	s := redisstore.New(newClient(t, srv.URL()))
	granted := 0
	var last error
	var before int64
	for i := 0; i < 2000; i++ {
		if i == 1 { // the Store's connection is open
			before, _ = memory(t, fill)
		}
		// A new counter each time: each reservation would need new keys.
		r := store.Reservation{ID: strconv.Itoa(i), Counters: []store.Counter{{Key: fmt.Sprint("quota:q", i), Limit: 10}}}
		g, err := reserve(ctx, s, r)
		if err == nil && g.OK {
			granted++
		} else {
			last = err
		}
	}
	used, max := memory(t, fill)
	t.Logf("noeviction, memory full: %d of 2000 reserves granted; used_memory %d -> %d, maxmemory %d", granted, before, used, max)
	assert.Zero(t, granted)
	require.ErrorIs(t, last, redisstore.ErrMemoryFull)
	assert.Less(t, used-before, int64(64<<10), "the memory does not grow")
}

// memory returns the server's used_memory and maxmemory.
func memory(t *testing.T, c *redis.Client) (used, max int64) {
	t.Helper()
	info, err := c.Info(context.Background(), "memory").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			used, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "maxmemory:"); ok {
			max, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return used, max
}
