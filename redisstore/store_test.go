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

	r1, r2 := store.Reservation{ID: "1", Counters: k}, store.Reservation{ID: "2", Counters: k}
	g, err := reserve(ctx, s, r1)
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: true, Counts: []int{1}, Blocked: -1}, g)
	commit(t, s, r1)
	g, err = reserve(ctx, s, r2)
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: true, Counts: []int{2}, Blocked: -1}, g)

	// At the limit: refused, counts as found.
	g, err = reserve(ctx, s, store.Reservation{ID: "3", Counters: k})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: false, Counts: []int{2}, Blocked: 0}, g)

	// A released unit returns.
	release(t, s, r2)
	n, err := s.Count(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	// The layout of the package doc.
	v, err := c.Get(ctx, prefix+"{k}:c").Result()
	require.NoError(t, err)
	assert.Equal(t, "1", v)
	assert.Equal(t, []string{prefix + "{k}:c"}, namespaceKeys(t, c, prefix), "settled reservations leave nothing behind")

	// No counters: granted, nothing stored.
	g, err = reserve(ctx, s, store.Reservation{ID: "4"})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: true, Counts: []int{}, Blocked: -1}, g)
}

func TestAllOrNothing(t *testing.T) {
	s, c, prefix := setup(t)
	ctx := context.Background()
	g, err := reserve(ctx, s, store.Reservation{ID: "1", Counters: []store.Counter{
		{Key: "a", Limit: 5}, {Key: "b", Limit: 1}, {Key: "c", Limit: 0}, {Key: "d", Limit: 0},
	}})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: false, Counts: []int{0, 0, 0, 0}, Blocked: 2}, g)
	assert.Empty(t, namespaceKeys(t, c, prefix), "a refused reservation writes nothing")

	// The first counter at its limit is reported, with every count.
	ab := []store.Counter{{Key: "a", Limit: 5}, {Key: "b", Limit: 1}}
	g, err = reserve(ctx, s, store.Reservation{ID: "2", Counters: ab})
	require.NoError(t, err)
	assert.Equal(t, store.Grant{OK: true, Counts: []int{1, 1}, Blocked: -1}, g)
	g, err = reserve(ctx, s, store.Reservation{ID: "3", Counters: ab})
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
	a, b := store.Reservation{ID: "a", Counters: k}, store.Reservation{ID: "b", Counters: k}
	for _, r := range []store.Reservation{a, b} {
		_, err := reserve(ctx, s, r)
		require.NoError(t, err)
	}
	commit(t, s, a)
	commit(t, s, a)
	release(t, s, a) // a release after the commit does nothing
	assert.Equal(t, 2, count())
	release(t, s, b)
	release(t, s, b)
	commit(t, s, b) // a commit after the release does nothing
	assert.Equal(t, 1, count())
	never := store.Reservation{ID: "never-reserved", Counters: k}
	commit(t, s, never)
	release(t, s, never)
	assert.Equal(t, 1, count())
	// A commit and a release in one batch, the same reservation twice.
	d := store.Reservation{ID: "d", Counters: k}
	_, err := reserve(ctx, s, d)
	require.NoError(t, err)
	require.NoError(t, s.Commit(ctx, []store.Reservation{d, d}))
	require.NoError(t, s.Release(ctx, []store.Reservation{d}))
	require.NoError(t, s.Flush(ctx))
	assert.Equal(t, 2, count())
	v, err := c.Get(ctx, prefix+"{k}:c").Int()
	require.NoError(t, err)
	assert.Equal(t, 2, v)
}

func TestRetriedReserveTakesNothingMore(t *testing.T) {
	s, _, _ := setup(t)
	ctx := context.Background()
	k := []store.Counter{{Key: "k", Limit: 2}}
	r := store.Reservation{ID: "same", Counters: k}
	g1, err := reserve(ctx, s, r)
	require.NoError(t, err)
	g2, err := reserve(ctx, s, r)
	require.NoError(t, err)
	assert.Equal(t, g1, g2)
	n, _ := s.Count(ctx, "k")
	assert.Equal(t, 1, n)
	commit(t, s, r)
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
	var open []store.Reservation
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
			want, err := reserve(ctx, mem, r)
			require.NoError(t, err)
			got, err := reserve(ctx, s, r)
			require.NoError(t, err)
			require.Equal(t, want, got, "step %d: reserve %+v", step, cs)
			if got.OK {
				open = append(open, r)
			}
		default:
			i := rng.IntN(len(open))
			r := open[i]
			if rng.IntN(4) != 0 {
				open = append(open[:i], open[i+1:]...)
			} // else settle it again later: a no-op for both
			if op < 8 {
				require.NoError(t, mem.Commit(ctx, []store.Reservation{r}))
				require.NoError(t, s.Commit(ctx, []store.Reservation{r}))
			} else {
				require.NoError(t, mem.Release(ctx, []store.Reservation{r}))
				require.NoError(t, s.Release(ctx, []store.Reservation{r}))
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
		r := store.Reservation{ID: fmt.Sprintf("id-%d", i), Counters: []store.Counter{{Key: k, Limit: 100}}}
		g, err := reserve(ctx, s, r)
		require.NoError(t, err)
		require.Equal(t, []int{1}, g.Counts, "%q", k)
		commit(t, s, r)
	}
	// A reservation whose id looks like a key touches no other counter.
	_, err := reserve(ctx, s, store.Reservation{ID: "{r:x}:c", Counters: []store.Counter{{Key: "r:x", Limit: 100}}})
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
	assert.Len(t, keys, len(odd)+1, "one committed total per counter, plus the sorted set of the open reservation")
	for _, k := range keys {
		rest := strings.TrimPrefix(k, prefix)
		require.NotEqual(t, k, rest, "%q outside the prefix", k)
		require.True(t, strings.HasPrefix(rest, "{"), "%q", k)
		tag, suffix, ok := strings.Cut(rest[1:], "}")
		require.True(t, ok, "%q", k)
		assert.NotEmpty(t, tag, "%q: an empty tag would hash the whole key", k)
		assert.Contains(t, []string{":c", ":z"}, suffix, "%q: one hash tag, the counter's", k)
		for _, b := range []byte(rest) {
			assert.True(t, b > ' ' && b < 0x7f, "%q holds a byte that is not printable ASCII", k)
		}
	}
	assert.Contains(t, keys, prefix+"{quota:tenant:acme:hourly}:c", "ordinary keys stay readable")
	assert.Contains(t, keys, prefix+"{%7Btag%7D}:c")
	assert.Contains(t, keys, prefix+"{%}:c", "the empty key")
}

func TestOptions(t *testing.T) {
	c := newClient(t, shared.URL(t))
	s := redisstore.New(c, nil, redisstore.WithPrefix("p:"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := store.Reservation{ID: "x", Counters: []store.Counter{{Key: "k", Limit: 1}}}
	_, err := reserve(ctx, s, r)
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, strings.HasPrefix(err.Error(), "redisstore: reserve: "), err.Error())
	require.ErrorIs(t, s.Commit(ctx, []store.Reservation{r}), context.Canceled)
	require.ErrorIs(t, s.Release(ctx, []store.Reservation{r}), context.Canceled)
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
	var stores []*redisstore.Store
	for i := 0; i < 4; i++ {
		st := redisstore.New(newClient(t, url), redisstore.WithPrefix(prefix))
		stores = append(stores, st)
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
				} else if d.Reason != toolguard.ReasonToolLimit || errors.Is(d.Err, store.ErrUnavailable) {
					unexpected.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	assert.Zero(t, unexpected.Load(), "calls refused for another reason than the quota")
	assert.Equal(t, int32(limit), allowed.Load())
	for _, st := range stores {
		require.NoError(t, st.Flush(context.Background()))
	}

	s := redisstore.New(admin, redisstore.WithPrefix(prefix))
	n, err := s.Count(context.Background(), "quota:fleet")
	require.NoError(t, err)
	assert.Equal(t, limit, n)
	committed, err := admin.Get(context.Background(), ckey(prefix, "quota:fleet")).Int()
	require.NoError(t, err)
	assert.Equal(t, limit, committed, "every allowed call committed exactly once")
	assert.Equal(t, []string{ckey(prefix, "quota:fleet")}, namespaceKeys(t, admin, prefix), "no reservation left open")
}

// TestSessionQuotaAcrossReplicas: replicas serving one session share its
// per-tool session quota through the store.
func TestSessionQuotaAcrossReplicas(t *testing.T) {
	s, _, _ := setup(t)
	p := toolguard.Policy{Store: s, SessionID: "s1", AgentQuota: &toolguard.Quota{Tools: map[string]int{"Bash": 3}}}
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
