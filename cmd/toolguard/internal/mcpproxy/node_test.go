package mcpproxy

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard/internal/mcpnode"
)

// proxied returns the command line that starts the proxy (this test
// binary, see TestMain) in front of server.
func proxied(t *testing.T, server ...string) []string {
	self, err := os.Executable()
	require.NoError(t, err)
	return append([]string{self, "--"}, server...)
}

// verdicts returns the verdict of each call, which must all have come
// back as results (not thrown in the client).
func verdicts(t *testing.T, calls []mcpnode.CallOut) []string {
	t.Helper()
	var got []string
	for i, c := range calls {
		require.True(t, c.OK, "call %d threw in the client: %s", i+1, c.Error)
		got = append(got, c.Verdict())
	}
	return got
}

func logCalls(t *testing.T, out mcpnode.Output) {
	t.Helper()
	t.Logf("protocol %s", out.ProtocolVersion)
	for i, c := range out.Calls {
		t.Logf("call %d: %s", i+1, c.Summary())
	}
}

func TestNodeClientsThroughProxy(t *testing.T) {
	mcpnode.Require(t)
	read := mcpnode.Call{Name: "read_file", Arguments: map[string]any{"path": "/etc/hosts"}}
	for _, tc := range []struct{ name, sdk, pin string }{
		{"sdk1", "1", ""},
		{"sdk2-2026-07-28", "2", "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mcpnode.Run(t, mcpnode.Spec{SDK: tc.sdk, Pin: tc.pin, Stdio: proxied(t, serverBin), List: true,
				Calls: []mcpnode.Call{read, read, read, read}}, proxyEnv+"=1")
			logCalls(t, out)
			if tc.pin != "" {
				assert.Equal(t, tc.pin, out.ProtocolVersion)
			}
			got := verdicts(t, out.Calls)
			assert.Equal(t, []string{"allow", "allow", "hint", "abort"}, got)
			assert.Equal(t, "contents of /etc/hosts", out.Calls[0].Text())
			assert.True(t, out.Calls[3].IsError())
			assert.Contains(t, out.Calls[3].Text(), "STOP: toolguard has stopped this tool")
		})
	}
}

// A real third-party server from npm behind the proxy: the reference
// "everything" server, whose echo tool a stuck model calls again and again.
func TestNodeEverythingServerThroughProxy(t *testing.T) {
	mcpnode.Require(t)
	everything := filepath.Join(mcpnode.Dir(), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	echo := mcpnode.Call{Name: "echo", Arguments: map[string]any{"message": "are we there yet?"}}
	out := mcpnode.Run(t, mcpnode.Spec{SDK: "1", Stdio: proxied(t, "node", everything, "stdio"), List: true,
		Calls: []mcpnode.Call{echo, echo, echo, echo}}, proxyEnv+"=1")
	logCalls(t, out)
	var readOnly bool
	for _, tool := range out.Tools {
		if tool.Name == "echo" {
			readOnly, _ = tool.Annotations["readOnlyHint"].(bool)
		}
	}
	assert.True(t, readOnly, "the everything server marks echo read-only")
	got := verdicts(t, out.Calls)
	assert.Equal(t, []string{"allow", "allow", "hint", "abort"}, got)
	assert.Contains(t, out.Calls[0].Text(), "are we there yet?")
}

// Two clients at once, each with the proxy its host starts for it: each
// has its own Tracker.
func TestNodeTwoClientsThroughProxies(t *testing.T) {
	mcpnode.Require(t)
	read := mcpnode.Call{Name: "read_file", Arguments: map[string]any{"path": "/etc/hosts"}}
	var wg sync.WaitGroup
	outs := make([]mcpnode.Output, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = mcpnode.Run(t, mcpnode.Spec{SDK: "2", Pin: "2026-07-28", Stdio: proxied(t, serverBin),
				Calls: []mcpnode.Call{read, read}}, proxyEnv+"=1")
		}()
	}
	wg.Wait()
	for i, out := range outs {
		for j, c := range out.Calls {
			assert.True(t, c.OK && c.Verdict() == "allow", "client %d call %d: %s", i, j+1, c.Summary())
		}
	}
}

// A server that crashes during a call: the client gets an error for it,
// not a hang.
func TestNodeCrashThroughProxy(t *testing.T) {
	mcpnode.Require(t)
	out := mcpnode.Run(t, mcpnode.Spec{SDK: "1", Stdio: proxied(t, serverBin), TimeoutMs: 20000,
		Calls: []mcpnode.Call{{Name: "crash"}}}, proxyEnv+"=1")
	logCalls(t, out)
	require.Len(t, out.Calls, 1)
	assert.False(t, out.Calls[0].OK)
	assert.Contains(t, out.Calls[0].Error, "the MCP server ended before answering tools/call")
}

// The TypeScript clients through the proxy to a remote server: stdio to
// the proxy, streamable HTTP from the proxy to the go-sdk server (which
// serves 2026-07-28 statelessly only).
func TestNodeClientsThroughProxyToRemote(t *testing.T) {
	mcpnode.Require(t)
	read := mcpnode.Call{Name: "read_file", Arguments: map[string]any{"path": "/etc/hosts"}}
	for _, tc := range []struct {
		name, sdk, pin string
		env            []string
	}{
		{"sdk1", "1", "", nil},
		{"sdk2-2026-07-28-stateless", "2", "2026-07-28", []string{"HTTP_STATELESS=1"}},
		{"sdk2-json", "2", "", []string{"HTTP_JSON=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := httpTestServer(t, tc.env...)
			self, err := os.Executable()
			require.NoError(t, err)
			out := mcpnode.Run(t, mcpnode.Spec{SDK: tc.sdk, Pin: tc.pin, Stdio: []string{self, "--url", u}, List: true,
				Calls: []mcpnode.Call{read, read, read, read}}, proxyEnv+"=1")
			logCalls(t, out)
			got := verdicts(t, out.Calls)
			assert.Equal(t, []string{"allow", "allow", "hint", "abort"}, got)
		})
	}
}

// A call the TypeScript client gives up on (its timeout passes, and it
// sends notifications/cancelled) has no result: however often the model
// asks for it again, each one is sent to the server, never refused as a
// repeat or a failure chain, and the calls after it count as if it never
// was.
func TestNodeCancelledCallsThroughProxy(t *testing.T) {
	mcpnode.Require(t)
	hang := mcpnode.Call{Name: "hang", TimeoutMs: 300}
	read := mcpnode.Call{Name: "read_file", Arguments: map[string]any{"path": "/etc/hosts"}}
	for _, tc := range []struct{ name, sdk, pin string }{
		{"sdk1", "1", ""},
		{"sdk2-2026-07-28", "2", "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mcpnode.Run(t, mcpnode.Spec{SDK: tc.sdk, Pin: tc.pin, Stdio: proxied(t, serverBin),
				Calls: []mcpnode.Call{hang, hang, hang, hang, hang, read, hang, read, read}}, proxyEnv+"=1")
			logCalls(t, out)
			require.Len(t, out.Calls, 9)
			for _, i := range []int{0, 1, 2, 3, 4, 6} {
				c := out.Calls[i]
				assert.False(t, c.OK, "call %d was answered: %s", i+1, c.Summary())
				assert.Contains(t, strings.ToLower(c.Error), "timed out", "call %d", i+1)
			}
			var got []string
			for _, i := range []int{5, 7, 8} {
				got = append(got, out.Calls[i].Verdict())
			}
			assert.Equal(t, []string{"allow", "allow", "hint"}, got)
		})
	}
}
