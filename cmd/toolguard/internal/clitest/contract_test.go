package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard"
)

// Crush and Cursor cannot run here (Crush's npm package downloads its
// binary at install time, the Go module proxy refuses it; Cursor has no
// headless CLI on npm). Their contracts are tested from their documented
// payloads: `toolguard hook install` writes their settings into a scratch
// home, and the command it wrote is run the way the agent runs a hook — by
// the shell, the event's JSON on standard input — and its answer is read
// the way the agent reads it.

// contract is a scratch home with the guard installed for one agent.
type contract struct {
	t     *testing.T
	root  string
	home  string
	env   []string
	hooks map[string][]string // event -> the commands installed for it
}

func newContract(t *testing.T, agent string, userFile string, user any) *contract {
	t.Helper()
	c := &contract{t: t, root: t.TempDir()}
	c.home = filepath.Join(c.root, "home")
	c.env = []string{
		"HOME=" + c.home,
		"PATH=" + os.Getenv("PATH"),
		"XDG_CONFIG_HOME=" + filepath.Join(c.root, "config"),
		"XDG_STATE_HOME=" + filepath.Join(c.root, "state"),
	}
	path := filepath.Join(c.root, userFile)
	b, err := json.MarshalIndent(user, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := c.run(Toolguard(t), nil, "hook", "install", "--agent", agent)
	if err != nil {
		t.Fatalf("hook install --agent %s: %v\n%s", agent, err, out)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if msg := kept(b, after); msg != "" {
		t.Errorf("hook install lost the user's settings: %s\n%s", msg, after)
	}
	var settings struct {
		Hooks map[string]json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(after, &settings); err != nil {
		t.Fatal(err)
	}
	c.hooks = map[string][]string{}
	for ev, raw := range settings.Hooks {
		var list []struct {
			Command string `json:"command"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatalf("hooks.%s: %v", ev, err)
		}
		for _, h := range list {
			if strings.Contains(h.Command, Marker) { // the user's own hooks are not under test
				c.hooks[ev] = append(c.hooks[ev], h.Command)
			}
		}
	}
	t.Cleanup(func() {
		out, err := c.run(Toolguard(t), nil, "hook", "uninstall", "--agent", agent)
		if err != nil {
			t.Errorf("hook uninstall: %v\n%s", err, out)
		}
		now, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(now, b) {
			t.Errorf("hook uninstall did not restore %s (%v):\n%s", path, err, now)
		}
		if logs, _ := os.ReadFile(filepath.Join(c.root, "state", "toolguard", "errors.log")); len(logs) > 0 {
			t.Errorf("the hook failed:\n%s", logs)
		}
	})
	return c
}

func (c *contract) run(name string, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.root
	cmd.Env = c.env
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// hookAnswer is what a hook process answered.
type hookAnswer struct {
	exit   int
	stdout map[string]any // nil when it printed nothing
}

// fire runs the guard's commands installed for event with payload, as the agent
// does (/bin/sh -c, the payload on standard input), and returns the
// answer of the one that answered.
func (c *contract) fire(event string, payload map[string]any) hookAnswer {
	c.t.Helper()
	cmds := c.hooks[event]
	if len(cmds) == 0 {
		c.t.Fatalf("no hook installed for %s (installed: %v)", event, c.hooks)
	}
	in, _ := json.Marshal(payload)
	var ans hookAnswer
	for _, command := range cmds {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
		cmd.Dir = c.root
		cmd.Env = c.env
		cmd.Stdin = bytes.NewReader(in)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			ans.exit = exit.ExitCode()
		case err != nil:
			c.t.Fatalf("%s: %v", command, err)
		}
		if s := bytes.TrimSpace(stdout.Bytes()); len(s) > 0 {
			if err := json.Unmarshal(s, &ans.stdout); err != nil {
				c.t.Fatalf("%s printed no JSON object: %q (stderr %q)", event, s, stderr.String())
			}
		}
	}
	return ans
}

// TestContractCrush: Crush's PreToolUse hook (the only one it has; payload
// {event, session_id, cwd, tool_name, tool_input}, no result ever). The
// third identical call is denied with {"decision":"deny","reason":R},
// which Crush shows the model as "Tool call blocked by hook. Reason: R";
// the next repeat also halts the turn ("halt": true). Another session is
// not affected.
func TestContractCrush(t *testing.T) {
	t.Parallel()
	c := newContract(t, "crush", "config/crush/crush.json", map[string]any{
		"$schema": "https://charm.land/crush.json",
		"options": map[string]any{"debug": false},
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{
			"matcher": "^edit$", "command": "echo mine", "timeout": 5,
		}}},
	})
	call := func(session, command string) hookAnswer {
		return c.fire("PreToolUse", map[string]any{
			"event": "PreToolUse", "session_id": session, "cwd": c.root,
			"tool_name": "bash", "tool_input": map[string]any{"command": command},
		})
	}
	for i := 1; i <= 2; i++ {
		if a := call("s1", "go test ./..."); a.exit != 0 || a.stdout["decision"] == "deny" {
			t.Errorf("call %d: %+v, want it allowed", i, a)
		}
	}
	a := call("s1", "go test ./...")
	reason, _ := a.stdout["reason"].(string)
	if a.exit != 0 || a.stdout["decision"] != "deny" || !strings.Contains(reason, toolguard.HintMarker) {
		t.Errorf("call 3: %+v, want a deny with the hint", a)
	}
	if a.stdout["halt"] == true {
		t.Errorf("call 3 halts the turn: the model would not read the hint")
	}
	a = call("s1", "go test ./...")
	if a.stdout["decision"] != "deny" || a.stdout["halt"] != true {
		t.Errorf("call 4: %+v, want a deny that halts the turn", a)
	}
	if a := call("s2", "go test ./..."); a.stdout["decision"] == "deny" {
		t.Errorf("another session's first call: %+v, want it allowed", a)
	}
	if a := call("s1", "go vet ./..."); a.stdout["decision"] == "deny" {
		t.Errorf("a different command: %+v, want it allowed", a)
	}
}

// TestContractCursor: Cursor's hooks (~/.cursor/hooks.json, version 1),
// from its documented payloads: every event has hook_event_name,
// conversation_id, generation_id and workspace_roots;
// beforeShellExecution adds command and cwd, afterShellExecution output
// and duration; beforeSubmitPrompt has the prompt. A deny is
// {"permission":"deny", "agent_message": R (what the agent reads),
// "user_message": …}.
func TestContractCursor(t *testing.T) {
	t.Parallel()
	c := newContract(t, "cursor", "home/.cursor/hooks.json", map[string]any{
		"version": 1,
		"hooks": map[string]any{"afterFileEdit": []any{map[string]any{
			"command": "./hooks/format.sh",
		}}},
	})
	base := func(event string) map[string]any {
		return map[string]any{
			"hook_event_name": event, "conversation_id": "conv-1", "generation_id": "gen-1",
			"workspace_roots": []string{c.root}, "cursor_version": "1.7.0",
		}
	}
	shell := func(command, output string) hookAnswer {
		p := base("beforeShellExecution")
		p["command"], p["cwd"] = command, c.root
		a := c.fire("beforeShellExecution", p)
		if a.stdout["permission"] == "deny" {
			return a
		}
		p = base("afterShellExecution")
		p["command"], p["cwd"], p["output"], p["duration"] = command, c.root, output, 120
		c.fire("afterShellExecution", p)
		return a
	}
	denied := func(a hookAnswer) bool {
		msg, _ := a.stdout["agent_message"].(string)
		return a.exit == 0 && a.stdout["permission"] == "deny" && strings.Contains(msg, toolguard.HintMarker)
	}
	for i := 1; i <= 2; i++ {
		if a := shell("npm test", "1 passing"); denied(a) || a.stdout["permission"] == "deny" {
			t.Errorf("run %d: %+v, want it allowed", i, a)
		}
	}
	if a := shell("npm test", "1 passing"); !denied(a) {
		t.Errorf("run 3: %+v, want a deny whose agent_message holds the hint", a)
	}
	p := base("beforeSubmitPrompt")
	p["prompt"] = "try again"
	c.fire("beforeSubmitPrompt", p)
	if a := shell("npm test", "1 passing"); a.stdout["permission"] == "deny" {
		t.Errorf("after a new prompt: %+v, want it allowed (a new turn)", a)
	}
	// An MCP tool: tool_input is a JSON string in Cursor's payload.
	mcp := func() hookAnswer {
		p := base("beforeMCPExecution")
		p["tool_name"], p["tool_input"] = "query", `{"sql":"select 1"}`
		a := c.fire("beforeMCPExecution", p)
		if a.stdout["permission"] != "deny" {
			p = base("afterMCPExecution")
			p["tool_name"], p["tool_input"], p["result_json"], p["duration"] = "query", `{"sql":"select 1"}`, `{"rows":[[1]]}`, 30
			c.fire("afterMCPExecution", p)
		}
		return a
	}
	mcp()
	mcp()
	if a := mcp(); !denied(a) {
		t.Errorf("MCP call 3: %+v, want a deny whose agent_message holds the hint", a)
	}
}
