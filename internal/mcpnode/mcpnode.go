// Package mcpnode runs the official MCP TypeScript clients (client.mjs in
// this folder, installed from npm by package.json and package-lock.json)
// for the Go tests of the MCP adapters and the proxy.
//
// Install them with `npm ci` in this folder (.ci/run does). Without them
// the tests that need them are skipped, except under CI=true, where they
// fail.
package mcpnode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Dir returns the folder of client.mjs and node_modules.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Require skips t (fails it under CI=true) when node or the npm packages
// are missing.
func Require(t testing.TB) {
	t.Helper()
	miss := ""
	if _, err := exec.LookPath("node"); err != nil {
		miss = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", "client")); err != nil {
		miss = "the MCP npm packages are not installed: run `npm ci` in " + Dir()
	}
	if miss == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(miss)
	}
	t.Skip(miss)
}

// Spec is what one client run does; see client.mjs.
type Spec struct {
	SDK       string            `json:"sdk"`           // "1" or "2"
	Pin       string            `json:"pin,omitempty"` // sdk 2: the protocol revision to pin
	Stdio     []string          `json:"stdio,omitempty"`
	HTTP      string            `json:"http,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	List      bool              `json:"list,omitempty"`
	TimeoutMs int               `json:"timeoutMs,omitempty"`
	Calls     []Call            `json:"calls"`
}

// Call is one tools/call.
type Call struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
	// TimeoutMs overrides Spec.TimeoutMs for this call: when it passes,
	// the client gives up and sends notifications/cancelled.
	TimeoutMs int `json:"timeoutMs,omitempty"`
}

// Output is what the client printed.
type Output struct {
	ProtocolVersion string    `json:"protocolVersion"`
	Tools           []Tool    `json:"tools"`
	Calls           []CallOut `json:"calls"`
	Fatal           string    `json:"fatal"`
}

// Tool is a tool of tools/list.
type Tool struct {
	Name        string         `json:"name"`
	Annotations map[string]any `json:"annotations"`
}

// CallOut is what the client got for one call: a result, or the error it
// threw.
type CallOut struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error"`
	Result struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError    bool           `json:"isError"`
		Meta       map[string]any `json:"_meta"`
		ResultType string         `json:"resultType"`
	} `json:"result"`
}

// Text is the result's text contents, one per line.
func (c CallOut) Text() string {
	var parts []string
	for _, ct := range c.Result.Content {
		if ct.Type == "text" {
			parts = append(parts, ct.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Verdict is the result's dev.toolguard/verdict, or "allow" when it has
// none.
func (c CallOut) Verdict() string {
	if v, ok := c.Result.Meta["dev.toolguard/verdict"].(string); ok {
		return v
	}
	return "allow"
}

// Summary is one line for the matrix: what the client received.
func (c CallOut) Summary() string {
	if !c.OK {
		return "error: " + c.Error
	}
	s := "result isError=" + map[bool]string{true: "true", false: "false"}[c.IsError()] + " verdict=" + c.Verdict()
	if c.Result.ResultType != "" {
		s += " resultType=" + c.Result.ResultType
	}
	return s
}

// IsError reports the result's isError.
func (c CallOut) IsError() bool { return c.Result.IsError }

// Run runs client.mjs with spec, with env added to its environment (and so
// to a stdio server it starts), and returns what it printed.
func Run(t testing.TB, spec Spec, env ...string) Output {
	t.Helper()
	in, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(Dir(), "client.mjs"), string(in))
	cmd.Dir = Dir()
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out Output
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil {
		t.Fatalf("client.mjs: %v (run: %v)\nstdout: %s\nstderr: %s", err, runErr, stdout.String(), stderr.String())
	}
	if out.Fatal != "" || runErr != nil {
		t.Fatalf("client.mjs failed: %s (run: %v)\nstderr: %s", out.Fatal, runErr, stderr.String())
	}
	if testing.Verbose() && stderr.Len() > 0 {
		t.Logf("client.mjs stderr:\n%s", stderr.String())
	}
	return out
}

// Cancelling is five calls of the tool wait that the client gives up on
// after 300 ms (sending notifications/cancelled), then three identical
// read_file calls: a server guard that books nothing of a cancelled call
// answers the reads with a result, a result, a hint.
func Cancelling(wait string) []Call {
	w := Call{Name: wait, TimeoutMs: 300}
	read := Call{Name: "read_file", Arguments: map[string]any{"path": "/etc/hosts"}}
	return []Call{w, w, w, w, w, read, read, read}
}

// CheckCancelling asserts what the client got for Cancelling: a timeout
// for each call it gave up on (none refused as a repeat or a failure
// chain), then allow, allow, hint.
func CheckCancelling(t testing.TB, calls []CallOut) {
	t.Helper()
	if len(calls) != 8 {
		t.Fatalf("got %d calls, want 8", len(calls))
	}
	var got []string
	for i, c := range calls {
		t.Logf("call %d: %s", i+1, c.Summary())
		if i < 5 {
			if c.OK || !strings.Contains(strings.ToLower(c.Error), "timed out") {
				t.Errorf("call %d: want the client's timeout, got %s", i+1, c.Summary())
			}
			continue
		}
		got = append(got, c.Verdict())
	}
	if strings.Join(got, ",") != "allow,allow,hint" {
		t.Errorf("the reads after the cancelled calls: got %v, want [allow allow hint]", got)
	}
}
