package redisstore_test

import (
	"context"
	"crypto/rand"
	"fmt"
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

// The policies of Redis 7: all but noeviction may drop a counter key.
var evictionPolicies = []string{
	"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
}

// TestEvictionPolicyChecked starts a server with each maxmemory-policy: the
// Store refuses every one but noeviction, or, with AllowEviction, works and
// warns.
func TestEvictionPolicyChecked(t *testing.T) {
	for _, policy := range evictionPolicies {
		t.Run(policy, func(t *testing.T) {
			srv := redistest.Start(t, "--maxmemory", "64mb", "--maxmemory-policy", policy)
			ctx := context.Background()
			r := store.Reservation{ID: "a", Counters: []store.Counter{{Key: "quota:q", Limit: 10}}}

			s := redisstore.New(newClient(t, srv.URL()))
			_, err := reserve(ctx, s, r)
			if policy == "noeviction" {
				require.NoError(t, err)
				commit(t, s, r)
				return
			}
			require.ErrorIs(t, err, redisstore.ErrEvictionPolicy)
			assert.Contains(t, err.Error(), "maxmemory-policy "+policy)

			var warnings []error
			s = redisstore.New(newClient(t, srv.URL()), redisstore.AllowEviction(func(err error) { warnings = append(warnings, err) }))
			_, err = reserve(ctx, s, r)
			require.NoError(t, err)
			commit(t, s, r)
			_, err = reserve(ctx, s, store.Reservation{ID: "b", Counters: r.Counters})
			require.NoError(t, err)
			require.Len(t, warnings, 1, "one warning while the policy stays the same")
			assert.ErrorIs(t, warnings[0], redisstore.ErrEvictionPolicy)
		})
	}
}

// TestQuotaUnderMemoryPressure pins issue 16 item 1: a server at its
// maxmemory, flooded with unrelated 4 KB keys, dropped the counter keys
// under an evicting policy and a SharedQuota of 300 granted 13 times its
// limit. Now no policy lets the fleet spend more than its limit: an
// evicting server is refused, and under noeviction a write that finds the
// memory full fails (the call is refused, fail closed).
func TestQuotaUnderMemoryPressure(t *testing.T) {
	const limit, calls = 300, 3000
	for _, tc := range []struct {
		policy string
		window time.Duration
	}{
		{"noeviction", 0}, {"allkeys-lru", 0}, {"allkeys-random", 0},
		{"volatile-lru", time.Hour}, {"volatile-ttl", time.Hour},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			srv := redistest.Start(t, "--maxmemory", "2mb", "--maxmemory-policy", tc.policy)
			s := redisstore.New(newClient(t, srv.URL()))
			granted := floodedRun(t, srv, s, limit, calls, tc.window)
			_ = s.Flush(context.Background()) // commits may fail for want of memory
			t.Logf("maxmemory 2mb, %s, 4 KB keys flooding: granted %d of limit %d", tc.policy, granted, limit)
			assert.LessOrEqual(t, granted, limit)
		})
	}
}

// floodedRun runs calls through a Tracker with one shared quota while
// another client writes 4 KB keys (with a TTL, so volatile policies have
// them to evict too... and the counters) and returns how many were granted.
func floodedRun(t *testing.T, srv *redistest.Server, s *redisstore.Store, limit, calls int, window time.Duration) int {
	flood := newClient(t, srv.URL())
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		val := make([]byte, 4096)
		_, _ = rand.Read(val)
		for i := 0; !stop.Load(); i++ {
			ttl := time.Duration(0)
			if i%2 == 0 {
				ttl = time.Hour
			}
			flood.Set(context.Background(), fmt.Sprintf("flood:%d", i), val, ttl) // OOM errors under noeviction
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()

	tr := toolguard.NewTracker(toolguard.Policy{
		Store:           s,
		SharedQuotas:    []store.SharedQuota{{Name: "tenant:acme", Limit: limit, Window: window}},
		SessionLimit:    -1,
		Breaker:         &store.Breaker{Cooldown: -1}, // every call asks the server
		MaxCallsPerTurn: -1,
	})
	granted := 0
	for i := 0; i < calls; i++ {
		if ok, _ := runCall(tr, callN("web", i)); ok {
			granted++
		}
	}
	return granted
}

var _ = redis.Nil
