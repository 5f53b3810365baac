package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"
	"github.com/toolguard/toolguard/store"
)

func TestReserveCommitRelease(t *testing.T) {
	s, c, prefix := setup(t)
	ctx := context.Background()
	k := []store.Counter{{Key: "k", Limit: 2}}

	g, err := s.Reserve(ctx, store.Reservation{ID: "1", Counters: k})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: true, Counts: []int{1}, Blocked: -1}, g)
	require.NoError(t, s.Commit(ctx, "1"))
	g, err = s.Reserve(ctx, store.Reservation{ID: "2", Counters: k})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: true, Counts: []int{2}, Blocked: -1}, g)

	// At the limit: refused, counts as found.
	g, err = s.Reserve(ctx, store.Reservation{ID: "3", Counters: k})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: false, Counts: []int{2}, Blocked: 0}, g)

	// A released unit returns.
	require.NoError(t, s.Release(ctx, "2"))
	n, err := s.Count(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	// The layout of the package doc.
	v, err := c.Get(ctx, prefix+"c:k").Result()
	require.NoError(t, err)
	assert.Equal(t, "1", v)
	assert.Equal(t, []string{prefix + "c:k"}, namespaceKeys(t, c, prefix), "settled reservations leave nothing behind")

	// No counters: granted, nothing stored.
	g, err = s.Reserve(ctx, store.Reservation{ID: "4"})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: true, Counts: []int{}, Blocked: -1}, g)
}

func TestAllOrNothing(t *testing.T) {
	s, c, prefix := setup(t)
	ctx := context.Background()
	g, err := s.Reserve(ctx, store.Reservation{ID: "1", Counters: []store.Counter{
		{Key: "a", Limit: 5}, {Key: "b", Limit: 1}, {Key: "c", Limit: 0}, {Key: "d", Limit: 0},
	}})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: false, Counts: []int{0, 0, 0, 0}, Blocked: 2}, g)
	assert.Empty(t, namespaceKeys(t, c, prefix), "a refused reservation writes nothing")

	// The first counter at its limit is reported, with every count.
	ab := []store.Counter{{Key: "a", Limit: 5}, {Key: "b", Limit: 1}}
	g, err = s.Reserve(ctx, store.Reservation{ID: "2", Counters: ab})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: true, Counts: []int{1, 1}, Blocked: -1}, g)
	g, err = s.Reserve(ctx, store.Reservation{ID: "3", Counters: ab})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: false, Counts: []int{1, 1}, Blocked: 1}, g)
	n, err := s.Count(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

func TestSettleIsIdempotent(t *testing.T) {
	s, c, prefix := setup(t)
	ctx := context.Background()
	k := []store.Counter{{Key: "k", Limit: 10}}
	count := func() int {
		n, err := s.Count(ctx, "k")
		require.NoError(t, err)
		return n
	}
	for _, id := range []string{"a", "b"} {
		_, err := s.Reserve(ctx, store.Reservation{ID: id, Counters: k})
		require.NoError(t, err)
	}
	require.NoError(t, s.Commit(ctx, "a"))
	require.NoError(t, s.Commit(ctx, "a"))
	require.NoError(t, s.Release(ctx, "a"), "a release after the commit does nothing")
	assert.Equal(t, 2, count())
	require.NoError(t, s.Release(ctx, "b"))
	require.NoError(t, s.Release(ctx, "b"))
	require.NoError(t, s.Commit(ctx, "b"), "a commit after the release does nothing")
	assert.Equal(t, 1, count())
	require.NoError(t, s.Commit(ctx, "never-reserved"))
	require.NoError(t, s.Release(ctx, "never-reserved"))
	assert.Equal(t, 1, count())
	v, err := c.Get(ctx, prefix+"c:k").Int()
	require.NoError(t, err)
	assert.Equal(t, 1, v)
}

func TestRetriedReserveTakesNothingMore(t *testing.T) {
	s, _, _ := setup(t)
	ctx := context.Background()
	k := []store.Counter{{Key: "k", Limit: 2}}
	r := store.Reservation{ID: "same", Counters: k}
	g1, err := s.Reserve(ctx, r)
	require.NoError(t, err)
	g2, err := s.Reserve(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, g1, g2)
	n, _ := s.Count(ctx, "k")
	assert.Equal(t, 1, n)
	require.NoError(t, s.Commit(ctx, "same"))
	n, _ = s.Count(ctx, "k")
	assert.Equal(t, 1, n)
}

// TestMatchesMemory runs one random sequence of operations through
// store.Memory and the Redis store and compares every answer.
// Windows and TTLs are long, so time does not matter.
func TestMatchesMemory(t *testing.T) {
	s, _, _ := setup(t)
	mem := store.NewMemory(nil)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "b", "c", "d"}
	limits := map[string]int{"a": 3, "b": 5, "c": 8, "d": 1}
	var open []string
	for step := 0; step < 400; step++ {
		switch op := rng.IntN(10); {
		case op < 5 || len(open) == 0:
			var cs []store.Counter
			for _, k := range keys {
				if rng.IntN(2) == 0 {
					w := time.Duration(0)
					if k == "c" {
						w = time.Hour
					}
					cs = append(cs, store.Counter{Key: k, Limit: limits[k], Window: w})
				}
			}
			if rng.IntN(20) == 0 && len(cs) > 0 {
				cs = append(cs, cs[0]) // the same counter twice
			}
			r := store.Reservation{ID: fmt.Sprint(step), Counters: cs, TTL: time.Hour}
			want, err := mem.Reserve(ctx, r)
			require.NoError(t, err)
			got, err := s.Reserve(ctx, r)
			require.NoError(t, err)
			require.Equal(t, want, got, "step %d: reserve %+v", step, cs)
			if got.OK {
				open = append(open, r.ID)
			}
		default:
			i := rng.IntN(len(open))
			id := open[i]
			if rng.IntN(4) != 0 {
				open = append(open[:i], open[i+1:]...)
			} // else settle it again later: a no-op for both
			if op < 8 {
				require.NoError(t, mem.Commit(ctx, id))
				require.NoError(t, s.Commit(ctx, id))
			} else {
				require.NoError(t, mem.Release(ctx, id))
				require.NoError(t, s.Release(ctx, id))
			}
		}
		for _, k := range keys {
			n, err := s.Count(ctx, k)
			require.NoError(t, err)
			require.Equal(t, mem.Count(k), n, "step %d: count of %s", step, k)
		}
	}
}

func TestKeysStayInTheirNamespace(t *testing.T) {
	s, c, prefix := setup(t)
	ctx := context.Background()
	odd := []string{
		"", "plain:key", "{tag}", "a b", "line\nbreak", "100%", "%41", "A", "\x00\xff",
		"r:x", "../r:x", "*", "[a-z]?", "ключ", "c:k", "quota:tenant:acme:hourly",
	}
	for i, k := range odd {
		id := fmt.Sprintf("id-%d", i)
		g, err := s.Reserve(ctx, store.Reservation{ID: id, Counters: []store.Counter{{Key: k, Limit: 100}}})
		require.NoError(t, err)
		require.Equal(t, []int{1}, g.Counts, "%q", k)
		require.NoError(t, s.Commit(ctx, id))
	}
	// A reservation whose id looks like a counter key touches no counter.
	_, err := s.Reserve(ctx, store.Reservation{ID: "x", Counters: []store.Counter{{Key: "r:x", Limit: 100}}})
	require.NoError(t, err)

	for _, k := range odd {
		n, err := s.Count(ctx, k)
		require.NoError(t, err)
		want := 1
		if k == "r:x" {
			want = 2
		}
		assert.Equal(t, want, n, "%q counted alone", k)
	}
	keys := namespaceKeys(t, c, prefix)
	assert.Len(t, keys, len(odd)+2, "one committed total per counter, plus the open reservation and its sorted set")
	for _, k := range keys {
		rest := strings.TrimPrefix(k, prefix)
		require.NotEqual(t, k, rest, "%q outside the prefix", k)
		assert.NotContains(t, rest, "{", "no hash tag can form")
		for _, b := range []byte(rest) {
			assert.True(t, b > ' ' && b < 0x7f, "%q holds a byte that is not printable ASCII", k)
		}
	}
	assert.Contains(t, keys, prefix+"c:quota:tenant:acme:hourly", "ordinary keys stay readable")
	assert.Contains(t, keys, prefix+"c:%7Btag%7D")
}

func TestOptions(t *testing.T) {
	c := newClient(t, shared.URL(t))
	s := redisstore.New(c, nil, redisstore.WithPrefix("p:"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Reserve(ctx, store.Reservation{ID: "x", Counters: []store.Counter{{Key: "k", Limit: 1}}})
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, strings.HasPrefix(err.Error(), "redisstore: reserve: "), err.Error())
	require.ErrorIs(t, s.Commit(ctx, "x"), context.Canceled)
	require.ErrorIs(t, s.Release(ctx, "x"), context.Canceled)
	_, err = s.Count(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
}

// TestTrackersShareOneQuota runs 64 goroutines through four Trackers,
// each with its own client, against one shared quota.
func TestTrackersShareOneQuota(t *testing.T) {
	url := shared.URL(t)
	admin := newClient(t, url)
	prefix := uniquePrefix(t, admin)
	const limit, goroutines, callsEach = 25, 64, 4

	var trackers []*toolguard.Tracker
	for i := 0; i < 4; i++ {
		st := redisstore.New(newClient(t, url), redisstore.WithPrefix(prefix))
		trackers = append(trackers, toolguard.NewTracker(fleetPolicy(st, limit)))
	}
	var allowed, unexpected atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			tr := trackers[g%len(trackers)]
			for i := 0; i < callsEach; i++ {
				ok, d := runCall(tr, callN("web_fetch", g*callsEach+i))
				if ok {
					allowed.Add(1)
				} else if d.Reason != toolguard.ReasonToolLimit || errors.Is(d.Err, toolguard.ErrStoreUnavailable) {
					unexpected.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	assert.Zero(t, unexpected.Load(), "calls refused for another reason than the quota")
	assert.Equal(t, int32(limit), allowed.Load())

	s := redisstore.New(admin, redisstore.WithPrefix(prefix))
	n, err := s.Count(context.Background(), "quota:fleet")
	require.NoError(t, err)
	assert.Equal(t, limit, n)
	committed, err := admin.Get(context.Background(), prefix+"c:quota:fleet").Int()
	require.NoError(t, err)
	assert.Equal(t, limit, committed, "every allowed call committed exactly once")
	assert.Equal(t, []string{prefix + "c:quota:fleet"}, namespaceKeys(t, admin, prefix), "no reservation left open")
}

// TestSessionQuotaAcrossReplicas: replicas serving one session share its
// per-tool session quota through the store.
func TestSessionQuotaAcrossReplicas(t *testing.T) {
	s, _, _ := setup(t)
	p := toolguard.Policy{Quotas: toolguard.Quotas{Store: s, SessionID: "s1", AgentQuota: &toolguard.Quota{Tools: map[string]int{"Bash": 3}}}}
	r1, r2 := toolguard.NewTracker(p), toolguard.NewTracker(p)
	for i, tr := range []*toolguard.Tracker{r1, r2, r1} {
		ok, _ := runCall(tr, callN("Bash", i))
		require.True(t, ok, "call %d", i)
	}
	ok, d := runCall(r2, callN("Bash", 9))
	require.False(t, ok)
	assert.Equal(t, toolguard.ReasonToolLimit, d.Reason)
	other := p
	other.SessionID = "s2"
	ok, _ = runCall(toolguard.NewTracker(other), callN("Bash", 1))
	assert.True(t, ok, "another session has its own total")
}
