package mcpsdk_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpsdk"
	"github.com/toolguard/toolguard/internal/mcpnode"
)

// A call the go-sdk client gives up on (its context ends; the client
// sends notifications/cancelled) has no result: it is never booked, so
// asking for it again and again is neither a repeat nor a failure chain.
func TestCancelledCallsAreNotBooked(t *testing.T) {
	ts := &tools{}
	tr := toolguard.NewTracker(toolguard.Policy{})
	cs, _ := connect(t, newServer(ts, mcpsdk.Middleware(tr)))
	for i := range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
		cancel()
		require.Error(t, err, "call %d was answered", i+1)
		// The server sees the cancellation after the client returns.
		require.Eventually(t, func() bool { return ts.runs.Load() == int64(i+1) && pending(tr) == 0 },
			5*time.Second, 5*time.Millisecond, "call %d: the tool must run and its call be released", i+1)
	}
	s := tr.Summary()
	assert.Zero(t, s.Calls)
	assert.Zero(t, s.Failed)
	run(t, cs, ts, []step{
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
