package mcpproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatewayPayload is what Docker's MCP Gateway sends a before interceptor:
// its go-sdk request as Go encodes it (captured from docker-mcp with a
// before:exec interceptor that saved its input).
func gatewayPayload(tool string, args map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"Session": map[string]any{}, "Params": map[string]any{"name": tool, "arguments": args}, "Extra": nil})
	return b
}

// A JSON-RPC shaped body is read too; another method is let through.
func TestInterceptorJSONRPCShape(t *testing.T) {
	url, _ := startInterceptor(t, "--preset", "turn-tracker")
	post := func(body string) string {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	call := `{"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a"}}}`
	assert.Empty(t, post(call))
	assert.Contains(t, post(call), `"dev.toolguard/verdict":"hint"`)
	assert.Empty(t, post(`{"method":"tools/list","params":{"name":"read_file"}}`))
}

// startInterceptor runs "interceptor serve" on a free loopback port.
func startInterceptor(t *testing.T, args ...string) (url string, stderr *syncBuffer) {
	t.Helper()
	ready := make(chan string, 1)
	sigs := make(chan os.Signal, 1)
	done := make(chan int, 1)
	stderr = &syncBuffer{}
	go func() {
		done <- InterceptorMain(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), Env{
			Stdout: io.Discard, Stderr: stderr, Signals: sigs, Ready: func(u string) { ready <- u }, PolicyFile: policyFile})
	}()
	select {
	case url = <-ready:
	case code := <-done:
		t.Fatalf("interceptor serve exited %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("interceptor serve did not start")
	}
	t.Cleanup(func() {
		sigs <- os.Interrupt
		<-done
	})
	return url, stderr
}

// The gateway's before:http contract: an empty answer lets the call run,
// a CallToolResult replaces it.
func TestInterceptorHTTP(t *testing.T) {
	url, stderr := startInterceptor(t)
	var got []string
	for range 4 {
		resp, err := http.Post(url, "application/json", bytes.NewReader(gatewayPayload("search_issues", map[string]any{"q": "bug"})))
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		if len(bytes.TrimSpace(body)) == 0 {
			got = append(got, "run")
			continue
		}
		var res struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
			Meta    map[string]any          `json:"_meta"`
		}
		require.NoError(t, json.Unmarshal(body, &res), "%s", body)
		assert.True(t, res.IsError)
		got = append(got, res.Meta["dev.toolguard/verdict"].(string))
	}
	assert.Equal(t, []string{"run", "run", "hint", "abort"}, got)
	assert.Contains(t, stderr.String(), "gen_ai.tool.name=search_issues")
}

// The before:exec side forwards to the serving interceptor; with the guard
// down the call runs.
func TestInterceptorExec(t *testing.T) {
	url, _ := startInterceptor(t, "--preset", "turn-tracker")
	run := func(target string) (string, int) {
		var out, errOut strings.Builder
		code := InterceptorMain([]string{"--url", target}, Env{
			Stdin: bytes.NewReader(gatewayPayload("read_file", map[string]any{"path": "a"})), Stdout: &out, Stderr: &errOut})
		return out.String(), code
	}
	out, code := run(url)
	assert.Equal(t, ExitOK, code)
	assert.Empty(t, out, "the first call runs")
	out, _ = run(url)
	assert.Contains(t, out, `"dev.toolguard/verdict":"hint"`, "turn-tracker blocks the second identical call")
	out, code = run("http://127.0.0.1:1/before")
	assert.Equal(t, ExitOK, code)
	assert.Empty(t, out, "the guard is down: the call runs")
}
