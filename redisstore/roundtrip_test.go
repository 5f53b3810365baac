package redisstore_test

import (
	"context"
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

// tripCounter is a go-redis hook that counts round trips (a command, or
// a pipeline of commands) and the commands sent.
type tripCounter struct{ trips, cmds atomic.Int64 }

func (h *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trips.Add(1)
		h.cmds.Add(1)
		return next(ctx, cmd)
	}
}

func (h *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips.Add(1)
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestRoundTripsPerCall counts what an allowed call costs on the critical
// path: one round trip (the reserve script), its commit sent in the
// background; a call a local rule refuses costs none; a round of 8
// parallel calls reserves in one round trip.
func TestRoundTripsPerCall(t *testing.T) {
	c := newClient(t, shared.URL(t))
	prefix := uniquePrefix(t, c)
	var h tripCounter
	c.AddHook(&h)
	s := redisstore.New(c, redisstore.WithPrefix(prefix))
	p := fleetPolicy(s, 1000)
	p.Breaker = &store.Breaker{Cooldown: -1}
	p.StoreTimeout = 30 * time.Second // counts round trips, not time: no timeout on a loaded machine
	tr := toolguard.NewTracker(p)
	ok, _ := runCall(tr, callN("t", -1)) // the eviction-policy check (INFO) and the script's first load
	require.True(t, ok)
	require.NoError(t, s.Flush(context.Background()))

	h.trips.Store(0)
	const calls = 100
	var critical int64
	for i := 0; i < calls; i++ {
		before := h.trips.Load()
		d := tr.ShouldSkip(callN("t", i))
		require.Equal(t, toolguard.Allow, d.Verdict)
		critical += h.trips.Load() - before
		tr.Record(callN("t", i), toolguard.Outcome{Result: "ok"})
		require.NoError(t, s.Flush(context.Background())) // no commit in flight during the next decision
	}
	t.Logf("%d allowed calls, one at a time: %d round trips before the decisions (%.2f per call), %d in all",
		calls, critical, float64(critical)/calls, h.trips.Load())
	assert.Equal(t, int64(calls), critical, "one round trip per allowed call before its decision")
	assert.Equal(t, int64(2*calls), h.trips.Load(), "and its commit")

	// Calls in parallel: the commits go in batches. Each goroutine
	// decides its 10 calls, then all record at once, so the commits queue
	// while the sender waits for the server whatever the machine's load.
	h.trips.Store(0)
	h.cmds.Store(0)
	var decided, wg sync.WaitGroup
	start := make(chan struct{})
	for g := 0; g < 64; g++ {
		wg.Add(1)
		decided.Add(1)
		go func(g int) {
			defer wg.Done()
			var allowed []toolguard.Call
			for i := 0; i < 10; i++ {
				c := callN("t", 10_000+g*10+i)
				if tr.ShouldSkip(c).Verdict == toolguard.Allow {
					allowed = append(allowed, c)
				}
			}
			decided.Done()
			<-start
			for _, c := range allowed {
				tr.Record(c, toolguard.Outcome{Result: "ok"})
			}
		}(g)
	}
	decided.Wait()
	close(start)
	wg.Wait()
	require.NoError(t, s.Flush(context.Background()))
	t.Logf("640 allowed calls from 64 goroutines: %d round trips (%.2f per call), %d commands",
		h.trips.Load(), float64(h.trips.Load())/640, h.cmds.Load())
	assert.Less(t, h.trips.Load(), int64(2*640), "commits batched")

	// A call that a loop rule refuses asks the store nothing.
	h.trips.Store(0)
	same := toolguard.Call{ID: "r", Tool: "t", Args: []byte(`{"same":1}`)}
	refused := 0
	for i := 0; i < 10; i++ {
		if ok, _ := runCall(tr, same); !ok {
			refused++
		}
	}
	require.NoError(t, s.Flush(context.Background()))
	require.Positive(t, refused)
	assert.Equal(t, int64(2*(10-refused)), h.trips.Load(), "only the allowed repeats reach the store (reserve + commit)")

	// A round of 8 calls: one Reserve, one round trip.
	h.trips.Store(0)
	h.cmds.Store(0)
	round := make([]toolguard.Call, 8)
	for i := range round {
		round[i] = callN("t", 1000+i)
	}
	ds := tr.ShouldSkipRound(round)
	for i, d := range ds {
		require.Equal(t, toolguard.Allow, d.Verdict, "call %d", i)
	}
	assert.Equal(t, int64(1), h.trips.Load(), "one round trip for the round")
	assert.Equal(t, int64(1), h.cmds.Load(), "one script")
	for _, c := range round {
		tr.Record(c, toolguard.Outcome{Result: "ok"})
	}
	require.NoError(t, s.Flush(context.Background()))
}

// TestQueueBound: with the server hung, Commit waits for room in a full
// queue no longer than its context, then fails; nothing grows without
// bound, and the queue drains once the server is back.
func TestQueueBound(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.URL())
	s := redisstore.New(c, redisstore.WithQueueLimit(4))
	ctx := context.Background()
	rs := reservations(16)
	gs, err := s.Reserve(ctx, rs)
	require.NoError(t, err)
	require.True(t, gs[15].OK)

	srv.Pause(t)
	// The sender takes what is queued and waits for the hung server; the
	// queue fills behind it.
	var err2 error
	for i := 0; i < 16 && err2 == nil; i++ {
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err2 = s.Commit(tctx, rs[i:i+1])
		cancel()
	}
	require.ErrorIs(t, err2, context.DeadlineExceeded, "the queue is full")
	assert.Contains(t, err2.Error(), "the queue is full (4 operations)")
	srv.Resume(t)
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_ = s.Flush(fctx) // the hung send may have failed once; it is sent again
	n, err := s.Count(ctx, "quota:fleet")
	require.NoError(t, err)
	assert.Equal(t, 16, n, "committed or still reserved: every unit counts")
}

func reservations(n int) []store.Reservation {
	rs := make([]store.Reservation, n)
	for i := range rs {
		rs[i] = store.Reservation{ID: fmt.Sprint(i), Counters: []store.Counter{{Key: "quota:fleet", Limit: 100}}}
	}
	return rs
}
