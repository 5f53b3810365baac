package hook

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func servePost(t testing.TB, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestServeClaudeHTTP: Claude Code's type "http" hooks post the payload and
// read the answer from the body; a restarted server goes on from the
// session log.
func TestServeClaudeHTTP(t *testing.T) {
	env := testEnv(t)
	h, err := NewHandler(env, "")
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	url := srv.URL + "/hook/claude"
	for i := 1; i <= 2; i++ {
		require.Empty(t, servePost(t, url, claudePre("H", fmt.Sprint("c", i), "make")))
		require.Empty(t, servePost(t, url, claudePost("H", fmt.Sprint("c", i), "make", "same")))
	}
	srv.Close()

	// A new server (a restart) reads the session from its log.
	h2, err := NewHandler(env, "")
	require.NoError(t, err)
	srv2 := httptest.NewServer(h2)
	defer srv2.Close()
	out := servePost(t, srv2.URL+"/hook/claude", claudePre("H", "c3", "make"))
	require.Equal(t, "deny", jsonField(out, "hookSpecificOutput.permissionDecision"), out)

	resp, err := http.Get(srv2.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = http.Post(srv2.URL+"/hook/nobody", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	// A bad payload lets the call run: an empty 200.
	require.Empty(t, servePost(t, srv2.URL+"/hook/claude", "not json"))
}

// TestServeParallel: the hooks of parallel calls posted at once, with
// hook processes appending to the same session log in between.
func TestServeParallel(t *testing.T) {
	env := testEnv(t)
	h, err := NewHandler(env, "")
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprint("p", i)
			cmd := fmt.Sprint("cat f", i%4)
			if servePost(t, srv.URL+"/hook/claude", claudePre("Q", id, cmd)) == "" {
				servePost(t, srv.URL+"/hook/claude", claudePost("Q", id, cmd, "x"))
			}
		}(i)
	}
	// A hook process of the same session meanwhile.
	invoke(t, env, claudePre("Q", "proc", "ls"), "--agent", "claude")
	wg.Wait()
	e := h.engines["claude"]
	recs := readLog(t, filepath.Join(e.sessionDir("Q"), "log"))
	pres := 0
	for _, r := range recs {
		if r.K == "pre" {
			pres++
		}
	}
	require.Equal(t, 17, pres)
	logDecisions(t, e, "Q")
}

// TestRebuildFromTranscript: a session the guard has not seen (installed
// mid-session, or a server started late) starts from its transcript.
func TestRebuildFromTranscript(t *testing.T) {
	env := testEnv(t)
	dir := t.TempDir()
	transcript := filepath.Join(dir, "s.jsonl")
	var lines []string
	for i := 1; i <= 2; i++ {
		id := fmt.Sprint("toolu_", i)
		lines = append(lines,
			js(map[string]any{"type": "user", "sessionId": "T", "uuid": fmt.Sprint("p", i), "message": map[string]any{"role": "user", "content": "run the tests"}}),
			js(map[string]any{"type": "assistant", "sessionId": "T", "uuid": fmt.Sprint("a", i), "message": map[string]any{"id": fmt.Sprint("m", i), "role": "assistant",
				"content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "make test"}}}}}),
			js(map[string]any{"type": "user", "sessionId": "T", "uuid": fmt.Sprint("r", i), "message": map[string]any{"role": "user",
				"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "FAIL: TestX"}}}}))
	}
	// Both calls were in one turn: drop the second prompt.
	lines = append(lines[:3], lines[4:]...)
	// The call being checked is in the transcript already, without result.
	lines = append(lines, js(map[string]any{"type": "assistant", "sessionId": "T", "uuid": "a3", "message": map[string]any{"id": "m3", "role": "assistant",
		"content": []any{map[string]any{"type": "tool_use", "id": "toolu_3", "name": "Bash", "input": map[string]any{"command": "make test"}}}}}))
	require.NoError(t, os.WriteFile(transcript, []byte(strings.Join(lines, "\n")+"\n"), 0o600))

	payload := js(map[string]any{"session_id": "T", "transcript_path": transcript, "hook_event_name": "PreToolUse",
		"tool_name": "Bash", "tool_input": map[string]any{"command": "make test"}, "tool_use_id": "toolu_3"})
	_, out, errOut := invoke(t, env, payload, "--agent", "claude")
	require.Empty(t, errOut)
	require.Equal(t, "deny", jsonField(out, "hookSpecificOutput.permissionDecision"), out)
	e := NewEngine(claudeAgent, cliPolicy(claudeAgent, nil), stateDir(env), nil)
	recs := readLog(t, filepath.Join(e.sessionDir("T"), "log"))
	require.Len(t, recs, 5) // two calls from the transcript, each checked and recorded; this one
}

// TestServeGateway: Docker MCP Gateway's before and after interceptors.
func TestServeGateway(t *testing.T) {
	env := testEnv(t)
	h, err := NewHandler(env, "")
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	before := js(map[string]any{"method": "tools/call", "params": map[string]any{"name": "search_issues", "arguments": map[string]any{"repo": "a/b", "state": "open"}}})
	after := js(map[string]any{"content": []any{map[string]any{"type": "text", "text": "3 issues"}}})
	for i := 1; i <= 2; i++ {
		require.Empty(t, servePost(t, srv.URL+"/hook/gateway?event=before", before), "call %d", i)
		require.Empty(t, servePost(t, srv.URL+"/hook/gateway?event=after", after))
	}
	out := servePost(t, srv.URL+"/hook/gateway?event=before", before)
	require.Equal(t, true, jsonField(out, "isError"), out)
	require.Contains(t, out, "identical parameters")

	// The same through the exec interceptor, a process per call, and an
	// hour later: a new turn.
	get := env.Now
	env.Now = func() time.Time { return get().Add(2 * time.Hour) }
	_, out, _ = invoke(t, env, before, "--agent", "gateway", "--event", "before")
	require.Empty(t, out)

	var buf bytes.Buffer
	e := *env
	e.Stdout = &buf
	require.Equal(t, ExitOK, Main([]string{"install", "--agent", "gateway"}, e))
	require.Contains(t, buf.String(), "before:http:")
}
