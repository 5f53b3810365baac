package mcpproxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/quotafile"
)

// proxyEnv makes the test binary run Main (see TestMain), so that a
// TypeScript client can start the proxy as its stdio server.
const proxyEnv = "TOOLGUARD_MCPPROXY_MAIN"

// interceptorEnv makes the test binary run InterceptorMain, so that
// Docker's MCP Gateway can run it as its before:exec interceptor.
const interceptorEnv = "TOOLGUARD_MCPPROXY_INTERCEPTOR"

// serverBin is the test server of testdata/server, built by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	if os.Getenv(proxyEnv) == "1" {
		os.Exit(Main(os.Args[1:], Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	if os.Getenv(interceptorEnv) == "1" {
		os.Exit(InterceptorMain(os.Args[1:], Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	dir, err := os.MkdirTemp("", "mcpproxy-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "server")
	build := exec.Command("go", "build", "-o", serverBin, ".")
	build.Dir = filepath.Join("testdata", "server")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building testdata/server: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// session is a JSON-RPC client talking to Main over pipes.
type session struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Reader
	stderr *syncBuffer
	done   chan int
	nextID int
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs Main with args in front of the test server.
func start(t *testing.T, env []string, args ...string) *session {
	t.Helper()
	return startEnv(t, env, Env{}, args...)
}

// startEnv is start with the Now and PolicyFile of e.
func startEnv(t *testing.T, env []string, e Env, args ...string) *session {
	t.Helper()
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: bufio.NewReader(outR), stderr: &syncBuffer{}, done: make(chan int, 1)}
	go func() {
		e.Stdin, e.Stdout = inR, outW
		if e.Stderr == nil {
			e.Stderr = s.stderr
		}
		if !slices.Contains(args, "--url") {
			args = append(args, "--", serverBin)
		}
		code := Main(args, e)
		outW.Close()
		inR.Close()
		s.done <- code
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			t.Error("the proxy did not end")
		}
	})
	return s
}

func (s *session) send(raw string) {
	s.t.Helper()
	_, err := io.WriteString(s.in, raw+"\n")
	require.NoError(s.t, err)
}

// reply reads the next message from the proxy.
func (s *session) reply() map[string]any {
	s.t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		line, err := s.out.ReadString('\n')
		ch <- res{line, err}
	}()
	select {
	case r := <-ch:
		require.NoError(s.t, r.err, "stderr: %s", s.stderr.String())
		var m map[string]any
		require.NoError(s.t, json.Unmarshal([]byte(r.line), &m), r.line)
		return m
	case <-time.After(15 * time.Second):
		s.t.Fatalf("no reply; stderr: %s", s.stderr.String())
		return nil
	}
}

// request sends a request and returns its response.
func (s *session) request(method string, params any) map[string]any {
	s.t.Helper()
	s.nextID++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.nextID, "method": method, "params": params})
	require.NoError(s.t, err)
	s.send(string(b))
	m := s.reply()
	require.EqualValues(s.t, s.nextID, m["id"], "%v", m)
	return m
}

func (s *session) initialize() {
	s.t.Helper()
	m := s.request("initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"},
	})
	require.NotNil(s.t, m["result"], "%v", m)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func (s *session) call(tool string, args map[string]any) map[string]any {
	s.t.Helper()
	return s.request("tools/call", map[string]any{"name": tool, "arguments": args})
}

// verdict is the dev.toolguard/verdict of a tools/call response, "allow"
// for a result without one, "error" for a JSON-RPC error.
func verdict(m map[string]any) string {
	if m["error"] != nil {
		return "error"
	}
	res, _ := m["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	if v, ok := meta["dev.toolguard/verdict"].(string); ok {
		return v
	}
	return "allow"
}

func resultText(m map[string]any) string {
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	var parts []string
	for _, c := range content {
		if cm, ok := c.(map[string]any); ok {
			if s, ok := cm["text"].(string); ok {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n")
}

func TestProxyGuardsALoop(t *testing.T) {
	s := start(t, nil)
	s.initialize()
	list := s.request("tools/list", map[string]any{})
	require.NotNil(t, list["result"])
	args := map[string]any{"path": "/etc/hosts"}
	var got []string
	for range 4 {
		got = append(got, verdict(s.call("read_file", args)))
	}
	assert.Equal(t, []string{"allow", "allow", "hint", "abort"}, got)
	abort := s.call("read_file", args)
	assert.Contains(t, resultText(abort), "STOP: toolguard has stopped this tool")
	assert.NotContains(t, resultText(abort), "toolguard: loop detected")
	// The learned readOnlyHint: a write in between is progress, a read is
	// not, so the loop on read_file goes on being refused after a read.
	assert.Equal(t, "allow", verdict(s.call("write_note", map[string]any{"text": "x"})))
}

func TestProxyBudgetGuidance(t *testing.T) {
	s := start(t, nil, "--preset", "turn-budget")
	s.initialize()
	var texts []string
	for i := range 32 {
		m := s.call("write_note", map[string]any{"text": fmt.Sprint(i)})
		texts = append(texts, verdict(m)+": "+resultText(m))
	}
	joined := strings.Join(texts, "\n")
	assert.Contains(t, joined, "Start wrapping up", joined)
	assert.Contains(t, joined, "abort: ", joined)
}

func TestProxyPolicyFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "quota.yaml")
	require.NoError(t, os.WriteFile(file, []byte("tool_quota:\n  write_note: 2\n"), 0o600))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	var stderr syncBuffer
	go func() {
		done <- Main([]string{"--policy", file, "--", serverBin}, Env{Stdin: inR, Stdout: outW, Stderr: &stderr,
			PolicyFile: func(_ *toolguard.Policy, path string) (toolguard.Policy, error) { return quotafile.Load(path) }})
		outW.Close()
	}()
	s := &session{t: t, in: inW, out: bufio.NewReader(outR), stderr: &stderr, done: done}
	s.initialize()
	var got []string
	for i := range 3 {
		got = append(got, verdict(s.call("write_note", map[string]any{"text": fmt.Sprint(i)})))
	}
	assert.Equal(t, []string{"allow", "allow", "hint"}, got)
	inW.Close()
	assert.Equal(t, ExitOK, <-done)
}

func TestProxyBadInput(t *testing.T) {
	s := start(t, nil, "--max-message", "4096")
	s.initialize()

	s.send(`{"jsonrpc":"2.0","id":77,"method":"tools/call","params":`)
	m := s.reply()
	assert.EqualValues(t, -32700, m["error"].(map[string]any)["code"])

	s.send(`{"jsonrpc":"2.0","id":78,"method":"tools/call","params":{"name":"echo_size","arguments":{"blob":"` + strings.Repeat("x", 10000) + `"}}}`)
	m = s.reply()
	assert.EqualValues(t, -32600, m["error"].(map[string]any)["code"])
	assert.Contains(t, m["error"].(map[string]any)["message"], "larger than 4096 bytes")

	// A call without a name goes to the server, which answers it.
	m = s.request("tools/call", map[string]any{"arguments": map[string]any{}})
	assert.NotNil(t, m["error"], "%v", m)

	// The proxy still serves.
	assert.Equal(t, "got 3 bytes", resultText(s.call("echo_size", map[string]any{"blob": "abc"})))
}

func TestProxyServerCrash(t *testing.T) {
	s := start(t, nil)
	s.initialize()
	m := s.call("crash", map[string]any{})
	require.NotNil(t, m["error"], "%v", m)
	assert.Contains(t, m["error"].(map[string]any)["message"], "the MCP server ended before answering tools/call")
	select {
	case code := <-s.done:
		s.done <- code
		assert.Equal(t, ExitServer, code)
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy did not exit after the server crashed")
	}
	assert.Contains(t, s.stderr.String(), "exit status 3")
}

func TestProxyHungServer(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	s := start(t, []string{"HANG_IGNORES_CANCEL=1", "HANG_AFTER_EOF=1"}, "--grace", "300ms")
	s.initialize()
	s.send(`{"jsonrpc":"2.0","id":"h1","method":"tools/call","params":{"name":"hang","arguments":{}}}`)
	// The client gives up and goes: the proxy ends the server within
	// --grace and exits cleanly, answering the hung call.
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"h1"}}`)
	s.in.Close()
	select {
	case code := <-s.done:
		s.done <- code
		assert.Equal(t, ExitOK, code)
	case <-time.After(10 * time.Second):
		t.Fatalf("the proxy did not exit; stderr: %s", s.stderr.String())
	}
	assert.Contains(t, s.stderr.String(), "did not exit within 300ms")
	assert.Empty(t, processesOf(serverBin), "the server process is gone")
	// Nothing of the proxy stays running.
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= goroutines+1 }, 5*time.Second, 50*time.Millisecond,
		"goroutines: %d before, %d after", goroutines, runtime.NumGoroutine())
}

func TestProxyUsage(t *testing.T) {
	var out, errOut strings.Builder
	assert.Equal(t, ExitBadInput, Main(nil, Env{Stdout: &out, Stderr: &errOut}))
	assert.Contains(t, errOut.String(), "no server command")
	errOut.Reset()
	assert.Equal(t, ExitBadInput, Main([]string{"--preset", "nope", "--", "true"}, Env{Stdout: &out, Stderr: &errOut}))
	assert.Contains(t, errOut.String(), "--preset")
	assert.Equal(t, ExitOK, Main([]string{"-h"}, Env{Stdout: &out, Stderr: &errOut}))
	assert.Contains(t, out.String(), "usage: toolguard mcp-proxy")
	errOut.Reset()
	assert.Equal(t, ExitServer, Main([]string{"--", "/nonexistent/mcp-server"}, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}))
	assert.Contains(t, errOut.String(), "cannot start the MCP server")
}

// processesOf lists the pids of running processes whose executable is
// path (Linux /proc; nil elsewhere).
func processesOf(path string) []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && exe == path {
			stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if !strings.Contains(string(stat), ") Z ") { // not a zombie
				pids = append(pids, e.Name())
			}
		}
	}
	return pids
}
