package clitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// standIn installs testdata's stand-in hook, which denies its third call,
// the way each CLI reads hooks.
var standIn = map[string]func(e *Env, script string){
	"claude": func(e *Env, script string) {
		e.WriteFile(filepath.Join(e.Home, ".claude", "settings.json"), map[string]any{
			"hooks": map[string]any{"PreToolUse": []any{map[string]any{
				"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": script}},
			}}},
		})
	},
	"codex": func(e *Env, script string) {
		e.WriteFile(filepath.Join(e.Home, ".codex", "hooks.json"), map[string]any{
			"hooks": map[string]any{"PreToolUse": []any{map[string]any{
				"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": script, "timeout": 30}},
			}}},
		})
		e.ExtraArgs = []string{"--dangerously-bypass-hook-trust"}
	},
	"gemini": func(e *Env, script string) {
		path := filepath.Join(e.Home, ".gemini", "settings.json")
		var settings map[string]any
		e.ReadJSON(path, &settings)
		settings["hooks"] = map[string]any{"BeforeTool": []any{map[string]any{
			"matcher": "*", "hooks": []any{map[string]any{"name": "stand-in", "type": "command", "command": script, "timeout": 60000}},
		}}}
		e.WriteFile(path, settings)
	},
	"copilot": func(e *Env, script string) {
		e.Vars["CLITEST_HOOK_FORMAT"] = "copilot"
		e.WriteFile(filepath.Join(e.Home, ".copilot", "hooks", "stand-in.json"), map[string]any{
			"version": 1, "hooks": map[string]any{"preToolUse": []any{map[string]any{"type": "command", "bash": script, "timeoutSec": 30}}},
		})
	},
	"opencode": func(e *Env, script string) {
		src, err := os.ReadFile(strings.TrimSuffix(script, ".sh") + ".js")
		if err != nil {
			e.T.Fatal(err)
		}
		e.WriteFile(filepath.Join(e.XDG("config"), "opencode", "plugin", "deny-third.js"), src)
	},
	"cline": func(e *Env, script string) {
		e.Vars["CLITEST_HOOK_FORMAT"] = "cline"
		hooks := filepath.Join(e.Home, ".cline", "hooks")
		e.MkdirAll(hooks)
		// Cline ignores a symbolic link here: a script of its own.
		e.WriteFile(filepath.Join(hooks, "PreToolUse"), "#!/bin/sh\nexec "+script+"\n")
		if err := os.Chmod(filepath.Join(hooks, "PreToolUse"), 0o755); err != nil {
			e.T.Fatal(err)
		}
	},
}

// TestHarnessStandIn proves the harness itself, apart from toolguard, with
// a stand-in hook (testdata/deny-third.*) that denies its third call: the
// model server receives the deny reason as that call's result, and the
// counter file shows the denied command never ran. Every CLI passed it
// while the harness was built; CI runs it on Claude Code, the quickest.
// STANDIN=all runs it on every CLI.
func TestHarnessStandIn(t *testing.T) {
	RequireRun(t)
	t.Parallel()
	agents := []*Agent{Claude}
	if os.Getenv("STANDIN") == "all" {
		agents = hooked
	}
	for _, a := range agents {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			e := NewEnv(t, a)
			cmd := "echo hi | tee -a " + e.Counter
			e.Server.SetScript([]Step{
				{Calls: []Call{a.Shell(cmd)}},
				{Calls: []Call{a.Shell(cmd)}},
				{Calls: []Call{a.Shell(cmd)}},
				{Calls: []Call{a.Shell(cmd)}},
				a.Final("done"),
			})
			script, err := filepath.Abs("testdata/deny-third.sh")
			if err != nil {
				t.Fatal(err)
			}
			e.Vars["CLITEST_HOOK_COUNT"] = filepath.Join(e.Root, "hook-count")
			standIn[a.Name](e, script)
			o := e.Run("say hi four times", false)
			res := e.Server.Results()
			t.Logf("results:\n%s", joinResults(res))
			if o.Exit != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nunknown requests: %v", o.Exit, tail(o.Stdout), tail(o.Stderr), e.Server.Unknown())
			}
			if len(res) < 4 {
				t.Fatalf("the model read %d results, want 4:\n%s\nstdout:\n%s\nstderr:\n%s", len(res), joinResults(res), tail(o.Stdout), tail(o.Stderr))
			}
			for i, r := range res[:4] {
				denied := strings.Contains(r.Text, "stand-in hook: call 3 denied")
				if denied != (i == 2) {
					t.Errorf("result %d: %q", i, r.Text)
				}
			}
			if ran := e.Ran(); len(ran) != 3 {
				t.Errorf("ran %d times, want 3 (calls 1, 2 and 4)", len(ran))
			}
		})
	}
}
