package mcpsdk_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpsdk"
)

// eventually waits for cond, which a session watcher makes true soon after
// a session ends.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 5*time.Second, time.Millisecond)
}

func TestSessionsAreSeparate(t *testing.T) {
	ts := &tools{}
	sessions := mcpsdk.NewSessions(toolguard.Policy{}, mcpsdk.SessionOptions{})
	srv := newServer(ts, sessions.Middleware())

	a, _ := connect(t, srv)
	b, _ := connect(t, srv)
	same := map[string]any{"path": "/etc/hosts"}
	run(t, a, ts, []step{
		{tool: "read_file", args: same, verdict: "allow"},
		{tool: "read_file", args: same, verdict: "allow"},
		{tool: "read_file", args: same, verdict: "hint", reason: "duplicate"},
	})
	// Session b has its own tracker: the same call runs there.
	run(t, b, ts, []step{
		{tool: "read_file", args: same, verdict: "allow"},
		{tool: "read_file", args: same, verdict: "allow"},
	})
	run(t, a, ts, []step{{tool: "read_file", args: same, verdict: "abort", reason: "duplicate"}})
	assert.Equal(t, 2, sessions.Len())

	// When a session ends, its tracker is forgotten.
	require.NoError(t, a.Close())
	eventually(t, func() bool { return sessions.Len() == 1 })
	require.NoError(t, b.Close())
	eventually(t, func() bool { return sessions.Len() == 0 })
}

func TestSessionsBounded(t *testing.T) {
	srv := newServer(&tools{})
	s := mcpsdk.NewSessions(toolguard.Policy{}, mcpsdk.SessionOptions{MaxSessions: 2})
	var ss [3]*mcp.ServerSession
	for i := range ss {
		_, ss[i] = connect(t, srv)
	}
	a := s.TrackerFor(ss[0])
	s.TrackerFor(ss[1])
	assert.Same(t, a, s.TrackerFor(ss[0])) // 0 is now the most recent
	s.TrackerFor(ss[2])                    // drops 1
	assert.Equal(t, 2, s.Len())
	assert.Same(t, a, s.TrackerFor(ss[0]))
	b := s.TrackerFor(ss[1]) // drops 2; 1 starts afresh
	assert.Empty(t, b.Ledger())
	assert.Equal(t, 2, s.Len())

	s.Forget(ss[0])
	s.Forget(nil)
	assert.Equal(t, 1, s.Len())
	assert.NotSame(t, a, s.TrackerFor(ss[0]))

	// Calls without a session share one tracker.
	assert.Same(t, s.TrackerFor(nil), s.TrackerFor(nil))
	// A session the server did not make is kept, without a watcher.
	stray := &mcp.ServerSession{}
	assert.Same(t, s.TrackerFor(stray), s.TrackerFor(stray))
}

func TestSessionsIdleReset(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	_, ss := connect(t, newServer(&tools{}))
	s := mcpsdk.NewSessions(toolguard.Policy{Now: clock}, mcpsdk.SessionOptions{IdleReset: time.Minute})
	c := toolguard.Call{Tool: "read_file", Args: json.RawMessage(`{"path":"/x"}`)}
	use := func() toolguard.Verdict {
		tr := s.TrackerFor(ss)
		d := tr.ShouldSkip(c)
		if d.Verdict == toolguard.Allow {
			tr.Record(c, toolguard.Outcome{Result: "same"})
		}
		return d.Verdict
	}
	assert.Equal(t, toolguard.Allow, use())
	advance(30 * time.Second)
	assert.Equal(t, toolguard.Allow, use())
	advance(30 * time.Second) // a minute after the first call, 30 s after the last
	assert.Equal(t, toolguard.Hint, use())

	advance(time.Minute) // a pause: a new turn
	assert.Equal(t, toolguard.Allow, use())
	l := s.TrackerFor(ss).Ledger()
	assert.Equal(t, 2, l[len(l)-1].Turn)
}

func TestSessionsConcurrent(t *testing.T) {
	ts := &tools{}
	sessions := mcpsdk.NewSessions(toolguard.Policy{MaxCallsPerTurn: -1, SessionLimit: -1}, mcpsdk.SessionOptions{MaxSessions: 3})
	srv := newServer(ts, sessions.Middleware())

	const clients, calls = 6, 20
	var wg sync.WaitGroup
	errs := make(chan error, clients*calls+clients)
	for w := range clients {
		cs, _ := connect(t, srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				res, err := call(cs, "read_file", map[string]any{"path": fmt.Sprintf("/c%d/%d", w, i)})
				if err != nil {
					errs <- err
				} else if res.IsError {
					errs <- fmt.Errorf("client %d call %d: %s", w, i, text(res))
				}
			}
			if err := cs.Close(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.EqualValues(t, clients*calls, ts.runs.Load())
	eventually(t, func() bool { return sessions.Len() == 0 })
}
