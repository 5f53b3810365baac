package mcpgo_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpgo"
	"github.com/toolguard/toolguard/internal/mcpnode"
)

// A call the mcp-go client gives up on (its context is cancelled) has no result:
// it is never booked, so asking for it again and again is neither a repeat
// nor a failure chain.
func TestCancelledCallsAreNotBooked(t *testing.T) {
	ts := &tools{}
	tr := toolguard.NewTracker(toolguard.Policy{})
	c := connect(t, newServer(ts, server.WithToolHandlerMiddleware(mcpgo.Middleware(tr))))
	for i := range 6 {
		// In process, the client's context is the handler's: the user
		// stops the call.
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(100*time.Millisecond, cancel)
		req := mcp.CallToolRequest{}
		req.Params.Name = "wait"
		_, err := c.CallTool(ctx, req)
		stop.Stop()
		cancel()
		require.Error(t, err, "call %d was answered", i+1)
		require.Eventually(t, func() bool { return ts.runs.Load() == int64(i+1) && pending(tr) == 0 },
			5*time.Second, 5*time.Millisecond, "call %d: the tool must run and its call be released", i+1)
	}
	s := tr.Summary()
	assert.Zero(t, s.Calls)
	assert.Zero(t, s.Failed)
	run(t, c, ts, []step{
		{tool: "read_file", args: map[string]any{"path": "a"}, verdict: "allow"},
		{tool: "read_file", args: map[string]any{"path": "a"}, verdict: "allow"},
		{tool: "read_file", args: map[string]any{"path": "a"}, verdict: "hint", reason: "duplicate"},
	})
}

// pending counts the calls of the wait tool that tr holds as allowed in
// the session: a cancelled call is released and gives its count back.
func pending(tr *toolguard.Tracker) int {
	n := 0
	for _, ts := range tr.SessionSummary().Tools {
		if ts.Tool == "wait" {
			n += ts.SessionCalls
		}
	}
	return n
}

// The TypeScript clients give up on a call when its timeout passes and
// send notifications/cancelled: the calls after it count as if it never
// was.
func TestNodeCancelledCalls(t *testing.T) {
	mcpnode.Require(t)
	self, err := os.Executable()
	require.NoError(t, err)
	for _, tc := range []struct{ name, sdk, pin string }{
		{"sdk1", "1", ""},
		{"sdk2-2026-07-28", "2", "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mcpnode.Run(t, mcpnode.Spec{SDK: tc.sdk, Pin: tc.pin, Stdio: []string{self}, Calls: mcpnode.Cancelling("wait")}, serveEnv+"=1")
			mcpnode.CheckCancelling(t, out.Calls)
		})
	}
}
