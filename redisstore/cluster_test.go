package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"
	"github.com/toolguard/toolguard/store"
)

// newClusterClient connects to a cluster the way docs/distributed.md
// recommends.
func newClusterClient(tb testing.TB, addrs []string) *redis.ClusterClient {
	tb.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 addrs,
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
	})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// clusterPrefix returns a key prefix no other test uses, and removes the
// prefix's keys from every master when the test ends.
func clusterPrefix(tb testing.TB, c *redis.ClusterClient) string {
	tb.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "tgtest:" + hex.EncodeToString(b[:]) + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			keys, _ := n.Keys(ctx, prefix+"*").Result()
			for _, k := range keys {
				n.Del(ctx, k)
			}
			return nil
		})
	})
	return prefix
}

// clusterKeys returns the keys under prefix on every master.
func clusterKeys(t *testing.T, c *redis.ClusterClient, prefix string) []string {
	t.Helper()
	var mu sync.Mutex
	var all []string
	require.NoError(t, c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, prefix+"*").Result()
		mu.Lock()
		all = append(all, keys...)
		mu.Unlock()
		return err
	}))
	return all
}

// masterOf returns the address of the master holding counter key's keys.
func masterOf(t *testing.T, c *redis.ClusterClient, prefix, key string) string {
	t.Helper()
	m, err := c.MasterForKey(context.Background(), ckey(prefix, key))
	require.NoError(t, err)
	return m.Options().Addr
}

// namesOnDistinctMasters returns n quota names whose counters
// ("quota:{name}") live on n different masters.
func namesOnDistinctMasters(t *testing.T, c *redis.ClusterClient, prefix string, n int) []string {
	t.Helper()
	seen := map[string]bool{}
	var names []string
	for i := 0; len(names) < n; i++ {
		require.Less(t, i, 1000, "the cluster has fewer than %d masters", n)
		name := "q" + strconv.Itoa(i)
		if m := masterOf(t, c, prefix, "quota:"+name); !seen[m] {
			seen[m] = true
			names = append(names, name)
		}
	}
	return names
}

func TestSlotOfMatchesServer(t *testing.T) {
	addrs := sharedCluster.Addrs(t)
	c := newClusterClient(t, addrs)
	ctx := context.Background()
	keys := []string{
		"", "foo", "bar", "123456789", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap",
		"foo{bar}{zap}", "{", "}", "{}", "a{b", "toolguard:{quota:tenant:acme:hourly}:c",
		"{toolguard}:{quota:x}:z", "p{q:{quota:x}:c", "ключ",
	}
	for i := 0; i < 200; i++ {
		keys = append(keys, fmt.Sprintf("toolguard:{quota:t%d}:c", i))
	}
	for _, k := range keys {
		want, err := c.ClusterKeySlot(ctx, k).Result()
		require.NoError(t, err)
		require.Equal(t, int(want), redisstore.SlotOf(k), "%q", k)
	}
}

// TestClusterSpreadsCounters: each counter's keys share one slot, and
// counters spread over the masters; a prefix with a hash tag pins them
// to one slot.
func TestClusterSpreadsCounters(t *testing.T) {
	c := newClusterClient(t, sharedCluster.Addrs(t))
	prefix := clusterPrefix(t, c)
	ctx := context.Background()
	s := redisstore.New(c, redisstore.WithPrefix(prefix))
	masters := map[string]bool{}
	for i := 0; i < 30; i++ {
		r := store.Reservation{ID: strconv.Itoa(i), Counters: []store.Counter{{Key: fmt.Sprintf("quota:t%d", i), Limit: 5}}}
		_, err := reserve(ctx, s, r)
		require.NoError(t, err)
		commit(t, s, r)
		k := fmt.Sprintf("quota:t%d", i)
		assert.Equal(t, redisstore.SlotOf(ckey(prefix, k)), redisstore.SlotOf(zkey(prefix, k)))
		masters[masterOf(t, c, prefix, k)] = true
	}
	assert.Len(t, masters, 3, "30 counters on 3 masters")

	tagged := "{" + prefix + "}:"
	st := redisstore.New(c, redisstore.WithPrefix(tagged))
	t.Cleanup(func() {
		for i := 0; i < 30; i++ {
			c.Del(ctx, ckey(tagged, fmt.Sprintf("quota:t%d", i)))
		}
	})
	slots := map[int]bool{}
	var rs []store.Reservation
	for i := 0; i < 30; i++ {
		k := fmt.Sprintf("quota:t%d", i)
		rs = append(rs, store.Reservation{ID: strconv.Itoa(i), Counters: []store.Counter{{Key: k, Limit: 5}}})
		slots[redisstore.SlotOf(ckey(tagged, k))] = true
	}
	gs, err := st.Reserve(ctx, rs)
	require.NoError(t, err)
	for _, g := range gs {
		assert.True(t, g.OK)
	}
	commit(t, st, rs...)
	assert.Len(t, slots, 1, "a prefix with a hash tag: one slot")
	n, err := st.Count(ctx, "quota:t7")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// TestClusterCrossSlot: one call's counters on different masters are
// all or nothing: a part granted on one master for a reservation refused
// on another is released, so the totals stay exact.
func TestClusterCrossSlot(t *testing.T) {
	c := newClusterClient(t, sharedCluster.Addrs(t))
	prefix := clusterPrefix(t, c)
	ctx := context.Background()
	s := redisstore.New(c, redisstore.WithPrefix(prefix))
	names := namesOnDistinctMasters(t, c, prefix, 3)
	a, b, d := "quota:"+names[0], "quota:"+names[1], "quota:"+names[2]
	counters := []store.Counter{{Key: a, Limit: 10}, {Key: b, Limit: 3}, {Key: d, Limit: 10}}

	var granted []store.Reservation
	for i := 0; i < 6; i++ {
		r := store.Reservation{ID: strconv.Itoa(i), Counters: counters}
		g, err := reserve(ctx, s, r)
		require.NoError(t, err)
		if i < 3 {
			require.Equal(t, store.Grant{OK: true, Counts: []int{i + 1, i + 1, i + 1}, Blocked: -1}, g)
			granted = append(granted, r)
			continue
		}
		// Refused by b; a's and d's parts were taken and are given back:
		// the counts are as found.
		require.Equal(t, store.Grant{OK: false, Counts: []int{3, 3, 3}, Blocked: 1}, g, "reservation %d", i)
		require.NoError(t, s.Flush(ctx)) // the release of its parts is sent
	}
	require.NoError(t, s.Flush(ctx))
	for _, k := range []string{a, b, d} {
		n, err := s.Count(ctx, k)
		require.NoError(t, err)
		assert.Equal(t, 3, n, "%s: the refused reservations hold nothing", k)
	}
	commit(t, s, granted...)
	for _, k := range []string{a, b, d} {
		v, err := c.Get(ctx, ckey(prefix, k)).Int()
		require.NoError(t, err)
		assert.Equal(t, 3, v, k)
	}
	assert.Len(t, clusterKeys(t, c, prefix), 3, "three committed totals, no reservation left")

	// In one batch: a reservation refused by b, then one of a alone,
	// which sees the refused one's unit of a until it is released: never
	// more than the limit.
	r1 := store.Reservation{ID: "x1", Counters: counters}
	r2 := store.Reservation{ID: "x2", Counters: []store.Counter{{Key: a, Limit: 4}}}
	gs, err := s.Reserve(ctx, []store.Reservation{r1, r2})
	require.NoError(t, err)
	assert.False(t, gs[0].OK)
	assert.Equal(t, 1, gs[0].Blocked)
	assert.False(t, gs[1].OK, "a holds 3 committed + the refused call's part until it is released")
	require.NoError(t, s.Flush(ctx))
	g, err := reserve(ctx, s, r2)
	require.NoError(t, err)
	assert.True(t, g.OK, "released: a has room again")
	assert.Equal(t, []int{4}, g.Counts)
}

// TestClusterExact: 64 goroutines in four Trackers (each with its own
// cluster client) against two shared quotas on different masters: the
// allowed calls are exactly the limit.
func TestClusterExact(t *testing.T) {
	addrs := sharedCluster.Addrs(t)
	admin := newClusterClient(t, addrs)
	prefix := clusterPrefix(t, admin)
	names := namesOnDistinctMasters(t, admin, prefix, 2)
	const limit, goroutines, callsEach = 1000, 64, 20

	p := func(s store.Store) toolguard.Policy {
		return toolguard.Policy{
			Store: s,
			SharedQuotas: []store.SharedQuota{
				{Name: names[0], Limit: limit},
				{Name: names[1], Limit: 1 << 30, Window: time.Hour},
			},
			SessionLimit:    -1,
			StoreTimeout:    2 * time.Second,
			MaxCallsPerTurn: -1,
		}
	}
	var stores []*redisstore.Store
	var trackers []*toolguard.Tracker
	for i := 0; i < 4; i++ {
		st := redisstore.New(newClusterClient(t, addrs), redisstore.WithPrefix(prefix))
		stores = append(stores, st)
		trackers = append(trackers, toolguard.NewTracker(p(st)))
	}
	var allowed, unexpected atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < callsEach; i++ {
				ok, d := runCall(trackers[g%4], callN("web_fetch", g*callsEach+i))
				if ok {
					allowed.Add(1)
				} else if d.Reason != toolguard.ReasonToolLimit || errors.Is(d.Err, store.ErrUnavailable) {
					unexpected.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	for _, st := range stores {
		require.NoError(t, st.Flush(context.Background()))
	}
	t.Logf("cluster, limit %d, %d goroutines, %d calls: %d allowed", limit, goroutines, goroutines*callsEach, allowed.Load())
	assert.Zero(t, unexpected.Load())
	assert.Equal(t, int32(limit), allowed.Load())
	for i, want := range []int{limit, limit} {
		v, err := admin.Get(context.Background(), ckey(prefix, "quota:"+names[i])).Int()
		require.NoError(t, err)
		assert.Equal(t, want, v, "every allowed call committed once on %s", names[i])
	}
	assert.Len(t, clusterKeys(t, admin, prefix), 2, "no reservation left open")
}
