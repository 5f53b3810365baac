package mcpproxy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard/internal/mcpnode"
)

// gatewayEnv names the docker-mcp binary (Docker's MCP Gateway) for
// TestDockerMCPGateway; .ci/run builds v0.43.1 from the Go module proxy
// and sets it (docs/integrations.md says how). Without it the test skips,
// except under CI=true, where it fails.
const gatewayEnv = "TOOLGUARD_DOCKER_MCP"

// Docker's MCP Gateway itself, without a Docker engine, in front of a
// remote (streamable HTTP) server on loopback, with toolguard as its before
// interceptor, over HTTP and as a command: a TypeScript client's four
// identical calls get result, result, hint, abort.
//
//	TOOLGUARD_DOCKER_MCP=/path/to/docker-mcp go test -run TestDockerMCPGateway -v ./internal/mcpproxy/
func TestDockerMCPGateway(t *testing.T) {
	gateway := os.Getenv(gatewayEnv)
	if gateway == "" {
		miss := gatewayEnv + " is not set: no docker-mcp to test with (docs/integrations.md, Docker MCP Gateway)"
		if os.Getenv("CI") == "true" {
			t.Fatal(miss)
		}
		t.Skip(miss)
	}
	mcpnode.Require(t)
	self, err := os.Executable()
	require.NoError(t, err)
	server := httpTestServer(t)
	home := t.TempDir()
	catalog := filepath.Join(home, ".docker", "mcp", "catalogs", "toolguard-test.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(catalog), 0o700))
	require.NoError(t, os.WriteFile(catalog, fmt.Appendf(nil, `name: toolguard-test
registry:
  tgtest:
    description: the toolguard test server
    title: toolguard test
    type: remote
    remote:
      url: %q
      transport_type: http
`, server), 0o600))
	// The gateway's container mode runs it without an engine: it skips the
	// engine check, and --static pulls no image. Its own switch lets it
	// reach a loopback server over http.
	env := []string{"HOME=" + home, "DOCKER_MCP_IN_CONTAINER=1", "DOCKER_MCP_ALLOW_INSECURE_REMOTE_URLS=1"}
	read := mcpnode.Call{Name: "read_file", Arguments: map[string]any{"path": "/etc/hosts"}}
	for _, tc := range []struct {
		name string
		spec func(url string) string
	}{
		{"http", func(url string) string { return "before:http:" + url }},
		{"exec", func(url string) string { return "before:exec:" + interceptorEnv + "=1 " + self + " --url " + url }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := startInterceptor(t)
			spec := tc.spec(url)
			out := mcpnode.Run(t, mcpnode.Spec{SDK: "1", Stdio: []string{gateway, "gateway", "run", "--catalog=" + catalog,
				"--servers=tgtest", "--static", "--interceptor", spec}, List: true,
				Calls: []mcpnode.Call{read, read, read, read}}, env...)
			logCalls(t, out)
			got := verdicts(t, out.Calls)
			assert.Equal(t, []string{"allow", "allow", "hint", "abort"}, got)
			assert.Equal(t, "contents of /etc/hosts", out.Calls[0].Text())
			assert.Contains(t, out.Calls[3].Text(), "STOP: toolguard has stopped this tool")
		})
	}
}
