package mcpproxy

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpTestServer starts the test server on streamable HTTP on loopback
// and returns its URL.
func httpTestServer(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(serverBin)
	cmd.Env = append(cmd.Environ(), append(env, "HTTP_ADDR=127.0.0.1:0")...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSpace(line)
}

// The proxy in front of a remote server: stdio to the client, streamable
// HTTP to the server (event streams, JSON bodies, stateless), guarded alike.
func TestRemoteServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"sse-session", nil},
		{"json-session", []string{"HTTP_JSON=1"}},
		{"stateless", []string{"HTTP_STATELESS=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := httpTestServer(t, tc.env...)
			s := start(t, nil, "--url", u)
			s.initialize()
			list := s.request("tools/list", map[string]any{})
			require.NotNil(t, list["result"], "%v", list)
			args := map[string]any{"path": "/etc/hosts"}
			var got []string
			for range 4 {
				got = append(got, verdict(s.call("read_file", args)))
			}
			assert.Equal(t, []string{"allow", "allow", "hint", "abort"}, got)
			assert.Equal(t, "got 3 bytes", resultText(s.call("echo_size", map[string]any{"blob": "abc"})))
			require.Equal(t, ExitOK, s.stop())
		})
	}
}

// A server that cannot be reached: each request gets an error, the proxy
// stays up.
func TestRemoteServerDown(t *testing.T) {
	s := start(t, nil, "--url", "http://127.0.0.1:1/mcp", "--grace", "100ms")
	m := s.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	require.NotNil(t, m["error"], "%v", m)
	assert.Contains(t, m["error"].(map[string]any)["message"], "the MCP server at http://127.0.0.1:1/mcp")
	var out, errOut strings.Builder
	assert.Equal(t, ExitBadInput, Main([]string{"--url", "ftp://x"}, Env{Stdout: &out, Stderr: &errOut}))
	assert.Equal(t, ExitBadInput, Main([]string{"--url", "http://x", "--", "y"}, Env{Stdout: &out, Stderr: &errOut}))
}
