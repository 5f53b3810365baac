package mcpgo_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpgo"
)

func TestSessionsAreSeparate(t *testing.T) {
	ts := &tools{}
	sessions := mcpgo.NewSessions(toolguard.Policy{}, mcpgo.SessionOptions{})
	hooks := &server.Hooks{}
	sessions.ForgetOnUnregister(hooks)
	srv := newServer(ts, server.WithHooks(hooks), server.WithToolHandlerMiddleware(sessions.Middleware()))

	a := connect(t, srv)
	b := connect(t, srv)
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

	// Closing a client unregisters its session, which forgets its tracker.
	require.NoError(t, a.Close())
	assert.Equal(t, 1, sessions.Len())
	require.NoError(t, b.Close())
	assert.Equal(t, 0, sessions.Len())
}

func TestSessionsBounded(t *testing.T) {
	s := mcpgo.NewSessions(toolguard.Policy{}, mcpgo.SessionOptions{MaxSessions: 2})
	a := s.TrackerFor("a")
	s.TrackerFor("b")
	assert.Same(t, a, s.TrackerFor("a")) // a is now the most recent
	s.TrackerFor("c")                    // drops b
	assert.Equal(t, 2, s.Len())
	assert.Same(t, a, s.TrackerFor("a"))
	b := s.TrackerFor("b") // drops c, b starts afresh
	assert.Empty(t, b.Ledger())
	assert.Equal(t, 2, s.Len())

	s.Forget("a")
	s.Forget("nobody")
	assert.Equal(t, 1, s.Len())
	assert.NotSame(t, a, s.TrackerFor("a"))

	// Many sessions never pass the bound.
	for i := range 100 {
		s.TrackerFor(fmt.Sprint(i))
	}
	assert.Equal(t, 2, s.Len())
}

func TestSessionsIdleReset(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	s := mcpgo.NewSessions(toolguard.Policy{Now: clock}, mcpgo.SessionOptions{IdleReset: time.Minute})
	c := toolguard.Call{Tool: "read_file", Args: json.RawMessage(`{"path":"/x"}`)}
	use := func() toolguard.Verdict {
		tr := s.TrackerFor("s1")
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
	l := s.TrackerFor("s1").Ledger()
	assert.Equal(t, 2, l[len(l)-1].Turn)
}

func TestSessionsWithoutLimit(t *testing.T) {
	s := mcpgo.NewSessions(toolguard.Policy{}, mcpgo.SessionOptions{MaxSessions: -1})
	for i := range 3000 {
		s.TrackerFor(fmt.Sprint(i))
	}
	assert.Equal(t, 3000, s.Len())
	s.ForgetOnUnregister(nil) // no panic
}

func TestSessionsConcurrent(t *testing.T) {
	ts := &tools{}
	sessions := mcpgo.NewSessions(toolguard.Policy{MaxCallsPerTurn: -1, SessionLimit: -1}, mcpgo.SessionOptions{MaxSessions: 3})
	hooks := &server.Hooks{}
	sessions.ForgetOnUnregister(hooks)
	srv := newServer(ts, server.WithHooks(hooks), server.WithToolHandlerMiddleware(sessions.Middleware()))

	const clients, calls = 6, 20
	var wg sync.WaitGroup
	errs := make(chan error, clients*calls)
	for w := range clients {
		c := connect(t, srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				res, err := call(c, "read_file", map[string]any{"path": fmt.Sprintf("/c%d/%d", w, i)})
				if err != nil {
					errs <- err
				} else if res.IsError {
					errs <- fmt.Errorf("client %d call %d: %s", w, i, text(res))
				}
			}
			if err := c.Close(); err != nil {
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
	assert.Equal(t, 0, sessions.Len())
}
