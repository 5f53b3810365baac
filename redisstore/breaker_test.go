package redisstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/redisstore"
	"github.com/toolguard/toolguard/redisstore/internal/redistest"

	"github.com/toolguard/toolguard/store"
)

// TestBreakerPerShard pins issue 29 item 7: one breaker covered every
// shard of a cluster, so while one master hung, the calls of a quota on a
// healthy master were refused too (1,998 refused; 49 with the breaker
// off). The Store now keeps a breaker per node, and a Tracker puts none
// of its own in front of it: the healthy shard's calls go on, and the
// hung shard costs one timeout per cooldown, not one per call.
func TestBreakerPerShard(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0, "--cluster-require-full-coverage", "no")
	c := newClusterClient(t, cl.Addrs())
	prefix := clusterPrefix(t, c)
	names := namesOnDistinctMasters(t, c, prefix, 2) // healthy, hung
	s := redisstore.New(c, redisstore.WithPrefix(prefix))
	ss := toolguard.NewSessions(toolguard.Policy{
		Store: s,
		SharedQuotas: []store.SharedQuota{
			{Name: names[0], Tools: []string{"healthy"}, Limit: 1_000_000},
			{Name: names[1], Tools: []string{"hung"}, Limit: 1_000_000},
		},
		SessionLimit:    -1,
		StoreTimeout:    250 * time.Millisecond,
		MaxCallsPerTurn: -1,
	})
	var hung *redistest.Server
	for _, n := range cl.Nodes {
		if n.Addr() == masterOf(t, c, prefix, "quota:"+names[1]) {
			hung = n
		}
	}
	require.NotNil(t, hung)
	tr := ss.NewTracker()
	for i := 0; i < 10; i++ { // connections to both masters open
		for _, tool := range []string{"healthy", "hung"} {
			ok, d := runCall(tr, callN(tool, i))
			require.True(t, ok, "%s: %+v", tool, d)
		}
	}

	hung.Pause(t)
	defer hung.Resume(t)
	var healthyRefused, healthy, slow, hungCalls atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(2 * time.Second)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := ss.NewTracker()
			for i := 0; time.Now().Before(end); i++ {
				tool := "healthy"
				if i%2 == 1 {
					tool = "hung"
				}
				start := time.Now()
				ok, d := runCall(tr, callN(tool, g*1_000_000+i))
				switch {
				case tool == "healthy":
					healthy.Add(1)
					if !ok {
						healthyRefused.Add(1)
					}
				default:
					hungCalls.Add(1)
					require.False(t, ok)
					require.ErrorIs(t, d.Err, store.ErrUnavailable)
					if time.Since(start) >= 200*time.Millisecond {
						slow.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("one master of 3 hung for 2s, 8 sessions: healthy shard %d of %d calls refused; hung shard %d calls, %d of them waited for the timeout",
		healthyRefused.Load(), healthy.Load(), hungCalls.Load(), slow.Load())
	assert.Zero(t, healthyRefused.Load(), "the healthy shard's calls go on")
	assert.LessOrEqual(t, slow.Load(), int64(3*8), "about one timeout per session per cooldown at most")
	hung.Resume(t)
	require.NoError(t, s.Flush(context.Background()))
}

// TestBreakerSharedBySessions pins issue 29 item 7: every Tracker had a
// breaker of its own (the MCP adapters never shared one), so each session
// paid its own timeouts during an outage (200 sessions, 600 timeouts).
// The Store's breaker is shared by every Tracker that uses the Store.
func TestBreakerSharedBySessions(t *testing.T) {
	srv := redistest.Start(t)
	s := redisstore.New(newClient(t, srv.URL()))
	p := fleetPolicy(s, 1_000_000)
	p.StoreTimeout = 200 * time.Millisecond
	var trackers []*toolguard.Tracker
	for i := 0; i < 50; i++ {
		trackers = append(trackers, toolguard.NewTracker(p)) // as the MCP adapters make them
		ok, _ := runCall(trackers[i], callN("t", i))
		require.True(t, ok)
	}
	require.NoError(t, s.Flush(context.Background()))
	srv.Pause(t)
	defer srv.Resume(t)
	slow := 0
	start := time.Now()
	for i, tr := range trackers {
		t0 := time.Now()
		ok, d := runCall(tr, callN("t", 100+i))
		require.False(t, ok)
		require.ErrorIs(t, d.Err, store.ErrUnavailable)
		if time.Since(t0) >= 150*time.Millisecond {
			slow++
		}
	}
	t.Logf("hung server, 50 sessions one call each: %d waited for StoreTimeout, %v in all", slow, time.Since(start).Round(time.Millisecond))
	assert.Equal(t, 1, slow, "one timeout for the process, not one per session")
	srv.Resume(t)
}
