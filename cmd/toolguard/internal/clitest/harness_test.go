package clitest

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHarnessStandIn proves the harness itself with Claude Code and a
// stand-in hook (testdata/deny-third.sh) that denies its third call: the
// model server receives the deny reason as that call's result, and the
// counter file shows the denied command never ran.
func TestHarnessStandIn(t *testing.T) {
	t.Parallel()
	a := Claude
	e := NewEnv(t, a)
	cmd := "echo hi | tee -a " + e.Counter
	e.Server.SetScript([]Step{
		{Calls: []Call{a.Shell(cmd)}},
		{Calls: []Call{a.Shell(cmd)}},
		{Calls: []Call{a.Shell(cmd)}},
		{Calls: []Call{a.Shell(cmd)}},
		a.Final("done"),
	})
	hook, err := filepath.Abs("testdata/deny-third.sh")
	if err != nil {
		t.Fatal(err)
	}
	e.Vars["CLITEST_HOOK_COUNT"] = filepath.Join(e.Root, "hook-count")
	e.WriteFile(filepath.Join(e.Home, ".claude", "settings.json"), map[string]any{
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{
			"matcher": "Bash",
			"hooks":   []any{map[string]any{"type": "command", "command": hook}},
		}}},
	})
	o := e.Run("say hi four times", false)
	if o.Exit != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nunknown requests: %v", o.Exit, tail(o.Stdout), tail(o.Stderr), e.Server.Unknown())
	}
	res := e.Server.Results()
	if len(res) != 4 {
		t.Fatalf("the model read %d results, want 4:\n%s", len(res), joinResults(res))
	}
	for i, r := range res {
		denied := strings.Contains(r.Text, "stand-in hook: call 3 denied")
		if denied != (i == 2) {
			t.Errorf("result %d: %q", i, r.Text)
		}
	}
	if ran := e.Ran(); len(ran) != 3 {
		t.Errorf("ran %d times, want 3 (calls 1, 2 and 4)", len(ran))
	}
}
