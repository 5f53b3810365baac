package mcpsdk_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpsdk"
	"github.com/toolguard/toolguard/internal/mcpnode"
	"github.com/toolguard/toolguard/store"
)

// serveEnv makes the test binary a stdio MCP server (see TestMain), so
// that a TypeScript client can start it as its child.
const serveEnv = "TOOLGUARD_MCPSDK_SERVE_STDIO"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		srv := newServer(&tools{}, mcpsdk.NewSessions(toolguard.Policy{}, mcpsdk.SessionOptions{}).Middleware())
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// loop is four identical calls: run, run, hint, abort with the default
// policy.
func loop(meta map[string]any) []mcpnode.Call {
	c := mcpnode.Call{Name: "read_file", Arguments: map[string]any{"path": "/etc/hosts"}, Meta: meta}
	return []mcpnode.Call{c, c, c, c}
}

// checkLoop asserts what the client got for loop: two results, a hint and
// an abort as error results that tell the model what to do, no throw. The
// 2.x client validates every result of protocol 2026-07-28 (it throws on a
// missing resultType) and hands its caller the result without resultType.
func checkLoop(t *testing.T, calls []mcpnode.CallOut) {
	t.Helper()
	require.Len(t, calls, 4)
	for i, c := range calls {
		t.Logf("call %d: %s", i+1, c.Summary())
		require.True(t, c.OK, "call %d threw in the client: %s", i+1, c.Error)
	}
	assert.Equal(t, "contents of /etc/hosts", calls[0].Text())
	assert.False(t, calls[1].IsError())
	assert.True(t, calls[2].IsError())
	assert.Equal(t, "hint", calls[2].Verdict())
	assert.Contains(t, calls[2].Text(), "was not executed")
	assert.True(t, calls[3].IsError())
	assert.Equal(t, "abort", calls[3].Verdict())
	assert.Contains(t, calls[3].Text(), "STOP: toolguard has stopped this tool")
	assert.NotContains(t, calls[3].Text(), "toolguard: loop detected")
}

func TestNodeClientsStdio(t *testing.T) {
	mcpnode.Require(t)
	self, err := os.Executable()
	require.NoError(t, err)
	for _, tc := range []struct{ name, sdk, pin string }{
		{"sdk1", "1", ""},
		{"sdk2-2026-07-28", "2", "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mcpnode.Run(t, mcpnode.Spec{SDK: tc.sdk, Pin: tc.pin, Stdio: []string{self}, Calls: loop(nil)}, serveEnv+"=1")
			t.Logf("protocol %s", out.ProtocolVersion)
			checkLoop(t, out.Calls)
			if tc.pin != "" {
				assert.Equal(t, tc.pin, out.ProtocolVersion)
			}
		})
	}
}

// httpServer serves a guarded server over streamable HTTP.
func httpServer(t *testing.T, o mcpsdk.SessionOptions, stateless bool) *httptest.Server {
	return httpServerPolicy(t, toolguard.Policy{}, o, stateless)
}

// httpServerPolicy is httpServer with the Policy p.
func httpServerPolicy(t *testing.T, p toolguard.Policy, o mcpsdk.SessionOptions, stateless bool) *httptest.Server {
	sessions := mcpsdk.NewSessions(p, o)
	srv := newServer(&tools{}, sessions.Middleware())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

func TestNodeClientsHTTP(t *testing.T) {
	mcpnode.Require(t)
	t.Run("sdk1-stateful-session", func(t *testing.T) {
		ts := httpServer(t, mcpsdk.SessionOptions{}, false)
		out := mcpnode.Run(t, mcpnode.Spec{SDK: "1", HTTP: ts.URL, Calls: loop(nil)})
		t.Logf("protocol %s", out.ProtocolVersion)
		checkLoop(t, out.Calls)
	})
	conv := map[string]any{mcpsdk.MetaConversation: "conversation-a"}
	t.Run("sdk2-2026-07-28-stateless-meta-key", func(t *testing.T) {
		ts := httpServer(t, mcpsdk.SessionOptions{Key: mcpsdk.MetaKey(mcpsdk.MetaConversation)}, true)
		out := mcpnode.Run(t, mcpnode.Spec{SDK: "2", Pin: "2026-07-28", HTTP: ts.URL, Calls: loop(conv)})
		t.Logf("protocol %s", out.ProtocolVersion)
		checkLoop(t, out.Calls)
		assert.Equal(t, "2026-07-28", out.ProtocolVersion)
	})
	t.Run("sdk2-2026-07-28-stateless-meta-by-default", func(t *testing.T) {
		ts := httpServer(t, mcpsdk.SessionOptions{}, true)
		out := mcpnode.Run(t, mcpnode.Spec{SDK: "2", Pin: "2026-07-28", HTTP: ts.URL, Calls: loop(conv)})
		checkLoop(t, out.Calls)
	})
	t.Run("sdk2-2026-07-28-stateless-refuse-no-key", func(t *testing.T) {
		ts := httpServer(t, mcpsdk.SessionOptions{Unkeyed: mcpsdk.UnkeyedRefuse}, true)
		out := mcpnode.Run(t, mcpnode.Spec{SDK: "2", Pin: "2026-07-28", HTTP: ts.URL, Calls: loop(nil)[:1]})
		c := out.Calls[0]
		t.Logf("call 1: %s", c.Summary())
		require.True(t, c.OK, "a tool result, not a JSON-RPC error: %s", c.Summary())
		assert.True(t, c.IsError())
		assert.Contains(t, c.Text(), "cannot tell this conversation from others")
	})
	// By default a call with nothing to key it by runs under a Tracker of
	// its own: never refused, never merged with another conversation.
	for _, sdk := range []string{"1", "2"} {
		t.Run("sdk"+sdk+"-stateless-derived-per-request", func(t *testing.T) {
			ts := httpServer(t, mcpsdk.SessionOptions{}, true)
			out := mcpnode.Run(t, mcpnode.Spec{SDK: sdk, Pin: map[string]string{"2": "2026-07-28"}[sdk], HTTP: ts.URL, Calls: loop(nil)})
			for i, c := range out.Calls {
				t.Logf("call %d: %s", i+1, c.Summary())
				assert.True(t, c.OK && !c.IsError() && c.Verdict() == "allow", "call %d runs", i+1)
			}
		})
	}
	// A Tracker per call still enforces the shared quotas, across calls.
	t.Run("sdk2-2026-07-28-stateless-derived-shared-quota", func(t *testing.T) {
		ts := httpServerPolicy(t, toolguard.Policy{SharedQuotas: []store.SharedQuota{{Name: "reads", Limit: 2}}}, mcpsdk.SessionOptions{}, true)
		out := mcpnode.Run(t, mcpnode.Spec{SDK: "2", Pin: "2026-07-28", HTTP: ts.URL, Calls: loop(nil)[:3]})
		var got []string
		for _, c := range out.Calls {
			reason, _ := c.Result.Meta[mcpsdk.MetaReason].(string)
			got = append(got, c.Verdict()+"/"+reason)
		}
		assert.Equal(t, []string{"allow/", "allow/", "hint/tool_limit"}, got)
	})
	// A host that traces its agent runs sends traceparent: one Tracker per
	// trace, so the loop of one run is caught and another run is not
	// touched.
	t.Run("sdk2-2026-07-28-stateless-trace", func(t *testing.T) {
		ts := httpServer(t, mcpsdk.SessionOptions{}, true)
		run1 := map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
		run2 := map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
		out := mcpnode.Run(t, mcpnode.Spec{SDK: "2", Pin: "2026-07-28", HTTP: ts.URL, Calls: loop(run1)})
		checkLoop(t, out.Calls)
		out = mcpnode.Run(t, mcpnode.Spec{SDK: "2", Pin: "2026-07-28", HTTP: ts.URL, Calls: loop(run2)[:2]})
		for i, c := range out.Calls {
			assert.True(t, c.OK && !c.IsError() && c.Verdict() == "allow", "run 2 call %d: %s", i+1, c.Summary())
		}
	})
	t.Run("sdk1-stateless-header-key", func(t *testing.T) {
		ts := httpServer(t, mcpsdk.SessionOptions{Key: mcpsdk.HeaderKey("X-User")}, true)
		out := mcpnode.Run(t, mcpnode.Spec{SDK: "1", HTTP: ts.URL, Headers: map[string]string{"X-User": "ann"}, Calls: loop(nil)})
		checkLoop(t, out.Calls)
	})
}

// Two clients at once on one stateless server, each with its own
// conversation key: neither sees the other's calls.
func TestNodeClientsDoNotShareState(t *testing.T) {
	mcpnode.Require(t)
	ts := httpServer(t, mcpsdk.SessionOptions{Key: mcpsdk.MetaKey(mcpsdk.MetaConversation)}, true)
	var wg sync.WaitGroup
	outs := make([]mcpnode.Output, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			meta := map[string]any{mcpsdk.MetaConversation: fmt.Sprintf("conversation-%d", i)}
			outs[i] = mcpnode.Run(t, mcpnode.Spec{SDK: "2", Pin: "2026-07-28", HTTP: ts.URL, Calls: loop(meta)[:2]})
		}()
	}
	wg.Wait()
	for i, out := range outs {
		for j, c := range out.Calls {
			assert.True(t, c.OK && !c.IsError() && strings.HasPrefix(c.Text(), "contents of"), "client %d call %d: %s", i, j+1, c.Summary())
		}
	}
}
