package clitest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard"
)

func TestMain(m *testing.M) {
	if os.Getenv(MCPServerEnv) == "1" {
		if err := ServeMCP(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "clitest MCP server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	CleanupToolguard()
	writeMatrix()
	os.Exit(code)
}

// hooked are the agents guarded by `toolguard hook install`; mcphost is
// guarded by `toolguard mcp-proxy` in front of its MCP server.
var hooked = []*Agent{Claude, Codex, Gemini, Copilot, Opencode, Cline}

var all = append(append([]*Agent(nil), hooked...), Mcphost)

// withoutCline is every agent but Cline, which cannot resume a session
// headless (TestNewTurn).
var withoutCline = []*Agent{Claude, Codex, Gemini, Copilot, Opencode, Mcphost}

// userSettings writes the user's own settings into a scratch home before
// the guard is installed, with a hook (or plugin) of the user's that notes
// each run in $CLITEST_USER_HOOK_LOG; userHookRuns says whether the CLI
// runs it in the scenarios (Codex skips an untrusted hook, Cline has no
// event for it that a --yolo run fires).
var userSettings = map[string]func(e *Env, hook string){
	"claude": func(e *Env, hook string) {
		e.WriteFile(filepath.Join(e.Home, ".claude", "settings.json"), map[string]any{
			"env":         map[string]any{"CLITEST_USER_SETTING": "kept"},
			"permissions": map[string]any{"allow": []any{"Bash(echo:*)"}},
			"hooks": map[string]any{"PreToolUse": []any{map[string]any{
				"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": hook}},
			}}},
		})
	},
	"codex": func(e *Env, hook string) {
		e.WriteFile(filepath.Join(e.Home, ".codex", "hooks.json"), map[string]any{
			"hooks": map[string]any{"SessionStart": []any{map[string]any{
				"hooks": []any{map[string]any{"type": "command", "command": hook, "timeout": 10}},
			}}},
		})
	},
	"gemini": func(e *Env, hook string) {
		path := filepath.Join(e.Home, ".gemini", "settings.json")
		var settings map[string]any
		e.ReadJSON(path, &settings)
		settings["hooks"] = map[string]any{"AfterTool": []any{map[string]any{
			"matcher": "run_shell_command",
			"hooks":   []any{map[string]any{"name": "mine", "type": "command", "command": hook, "timeout": 10000}},
		}}}
		e.WriteFile(path, settings)
	},
	"copilot": func(e *Env, hook string) {
		e.WriteFile(filepath.Join(e.Home, ".copilot", "hooks", "mine.json"), map[string]any{
			"version": 1,
			"hooks":   map[string]any{"postToolUse": []any{map[string]any{"type": "command", "bash": hook, "timeoutSec": 10}}},
		})
	},
	"opencode": func(e *Env, hook string) {
		src, err := os.ReadFile(filepath.Join(filepath.Dir(hook), "user-plugin.js"))
		if err != nil {
			e.T.Fatal(err)
		}
		e.WriteFile(filepath.Join(e.XDG("config"), "opencode", "plugin", "mine.js"), src)
	},
	"cline": func(e *Env, hook string) {
		path := filepath.Join(e.Home, ".cline", "hooks", "TaskComplete")
		e.WriteFile(path, "#!/bin/sh\nexec "+hook+"\n")
		if err := os.Chmod(path, 0o755); err != nil {
			e.T.Fatal(err)
		}
	},
}

var userHookRuns = map[string]bool{"claude": true, "gemini": true, "copilot": true, "opencode": true}

// guarded makes a scratch environment for a with the user's own settings,
// installs the guard (checking install, reinstall and uninstall), and
// uninstalls it when the test ends.
func guarded(t *testing.T, a *Agent) *Env {
	e := NewEnv(t, a)
	if a == Mcphost {
		out := e.toolguard(Toolguard(t), "hook", "install", "--agent", "mcphost")
		if !strings.Contains(out, "mcp-proxy") {
			t.Errorf("hook install --agent mcphost does not point to mcp-proxy:\n%s", out)
		}
		return e
	}
	hook, err := filepath.Abs("testdata/user-hook.sh")
	if err != nil {
		t.Fatal(err)
	}
	e.Vars["CLITEST_USER_HOOK_LOG"] = filepath.Join(e.Root, "user-hook.log")
	userSettings[a.Name](e, hook)
	e.Install()
	t.Cleanup(func() {
		if t.Failed() {
			e.LogOutcomes()
			e.logHook()
		}
		if errs := e.ReadFile(filepath.Join(e.XDG("state"), "toolguard", "errors.log")); errs != "" {
			t.Errorf("the hook failed (and let the calls through):\n%s", errs)
		}
		if userHookRuns[a.Name] && e.ReadFile(e.Vars["CLITEST_USER_HOOK_LOG"]) == "" {
			t.Errorf("the user's own hook did not run with the guard installed")
		}
		e.Uninstall()
	})
	return e
}

// logHook logs `toolguard hook status` and the decisions of each session
// the guard kept (`hook log --all`), for a failed test.
func (e *Env) logHook() {
	out, _ := e.Command(Toolguard(e.T), "hook", "status")
	e.T.Logf("toolguard hook status:\n%s", out)
	ents, _ := os.ReadDir(filepath.Join(e.XDG("state"), "toolguard", "sessions"))
	for _, d := range ents {
		_, id, _ := strings.Cut(d.Name(), "-")
		out, _ := e.Command(Toolguard(e.T), "hook", "log", "--all", id)
		e.T.Logf("toolguard hook log --all %s:\n%s", id, out)
	}
}

// eachAgent runs scenario on each of agents, side by side, each in a
// guarded environment of its own (and beside the other scenarios).
func eachAgent(t *testing.T, agents []*Agent, scenario func(t *testing.T, a *Agent, e *Env)) {
	RequireRun(t)
	t.Parallel()
	for _, a := range agents {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			scenario(t, a, guarded(t, a))
		})
	}
}

// The scenarios. Each command appends a line to the counter file, so what
// ran is counted apart from what the CLI or the hook reports.

func echoHi(e *Env) string { return "echo hi | tee -a " + e.Counter }

// TestRepeat: the model runs `echo hi` four times with nothing changed.
// The third is refused and the model reads the hint as its result; the
// fourth never runs either.
func TestRepeat(t *testing.T) {
	eachAgent(t, all, func(t *testing.T, a *Agent, e *Env) {
		cmd := echoHi(e)
		e.Server.SetScript([]Step{
			{Calls: []Call{a.Shell(cmd)}},
			{Calls: []Call{a.Shell(cmd)}},
			{Calls: []Call{a.Shell(cmd)}},
			{Calls: []Call{a.Shell(cmd)}},
			a.Final("done"),
		})
		o := e.Run("Say hi.", false)
		r := newRow(e, "repeat", o)
		wantRan(t, e, 2)
		wantRead(t, e, 0, 0, false)
		wantRead(t, e, 1, 0, false)
		wantRead(t, e, 2, 0, true)
		if text, ok := e.Server.ResultOf(3, 0); ok && !strings.Contains(text, toolguard.HintMarker) {
			t.Errorf("call 4: the model read %q", text)
		}
		r.done(t)
	})
}

// TestWork: edit, test, edit, test, edit, test. The test command and its
// output are the same each time, but an edit came between: all run.
func TestWork(t *testing.T) {
	eachAgent(t, all, func(t *testing.T, a *Agent, e *Env) {
		edit := func(v string) Call {
			return a.Shell("printf '" + v + "\\n' > a.txt && echo edit >> " + e.Counter)
		}
		check := a.Shell("test -s a.txt && echo PASS && echo test >> " + e.Counter)
		e.Server.SetScript([]Step{
			{Calls: []Call{edit("v1")}}, {Calls: []Call{check}},
			{Calls: []Call{edit("v2")}}, {Calls: []Call{check}},
			{Calls: []Call{edit("v3")}}, {Calls: []Call{check}},
			a.Final("done"),
		})
		o := e.Run("Make the change and test it.", false)
		r := newRow(e, "work", o)
		wantRan(t, e, 6)
		for s := range 6 {
			wantRead(t, e, s, 0, false)
		}
		r.done(t)
	})
}

// TestParallel: three identical calls in one response (Claude Code runs
// their hooks concurrently): two run and one is refused, whichever the
// guard sees last; then three different calls in one response, which all
// run.
func TestParallel(t *testing.T) {
	eachAgent(t, all, func(t *testing.T, a *Agent, e *Env) {
		same := a.Shell(echoHi(e))
		var different []Call
		for _, p := range []string{"p1", "p2", "p3"} {
			different = append(different, a.Shell("echo "+p+" | tee -a "+e.Counter))
		}
		e.Server.SetScript([]Step{{Calls: []Call{same, same, same}}, {Calls: different}, a.Final("done")})
		o := e.Run("Run the checks.", false)
		r := newRow(e, "parallel", o)
		wantRan(t, e, 5)
		refused := 0
		for i := range 3 {
			if text, ok := e.Server.ResultOf(0, i); !ok {
				t.Errorf("step 0 call %d: the model never read a result", i)
			} else if strings.Contains(text, toolguard.HintMarker) {
				refused++
			}
		}
		if refused != 1 {
			t.Errorf("%d of three identical parallel calls refused, want 1; the model read:\n%s", refused, joinResults(e.Server.Results()))
		}
		for i := range 3 {
			wantRead(t, e, 1, i, false)
		}
		r.done(t)
	})
}

// TestNewTurn: `echo hi` three times (the third refused), then a new user
// prompt in the same session: the call runs again. Cline is left out: it
// resumes a session only in its interactive terminal UI (3.0.65: `--id`
// with a prompt says "interactive mode requires a TTY"), so each headless
// run is a new task, a new session for the guard.
func TestNewTurn(t *testing.T) {
	eachAgent(t, withoutCline, func(t *testing.T, a *Agent, e *Env) {
		call := a.Shell(echoHi(e))
		e.Server.SetScript([]Step{
			{Calls: []Call{call}}, {Calls: []Call{call}}, {Calls: []Call{call}}, a.Final("done"),
			{Calls: []Call{call}}, a.Final("done again"),
		})
		o := e.Run("Say hi.", false)
		wantRan(t, e, 2)
		wantRead(t, e, 2, 0, true)
		o2 := e.Run("Say hi once more.", true)
		r := newRow(e, "new turn", o2)
		r.exit = fmt.Sprintf("%d, then %d", o.Exit, o2.Exit)
		wantRan(t, e, 3)
		wantRead(t, e, 4, 0, false)
		r.done(t)
	})
}

// TestFailingRetry: a command that fails, retried with tweaked flags. The
// fourth attempt is refused (three equivalent failures).
func TestFailingRetry(t *testing.T) {
	eachAgent(t, all, func(t *testing.T, a *Agent, e *Env) {
		var steps []Step
		for _, flags := range []string{"-x", "-x -q", "-q", "--lf -q"} {
			steps = append(steps, Step{Calls: []Call{a.Shell("echo f >> " + e.Counter + "; pytset " + flags)}})
		}
		e.Server.SetScript(append(steps, a.Final("done")))
		o := e.Run("Run the tests.", false)
		r := newRow(e, "failing retry", o)
		wantRan(t, e, 3)
		for s := range 4 {
			wantRead(t, e, s, 0, s == 3)
		}
		r.done(t)
	})
}

// wantRan checks how many commands really ran.
func wantRan(t *testing.T, e *Env, n int) {
	t.Helper()
	if got := len(e.Ran()); got != n {
		t.Errorf("%d commands ran, want %d; the model read:\n%s", got, n, joinResults(e.Server.Results()))
	}
}

// wantRead checks what the model read for call index of step: a refusal
// with the hint (refused) or the command's own result.
func wantRead(t *testing.T, e *Env, step, index int, refused bool) {
	t.Helper()
	text, ok := e.Server.ResultOf(step, index)
	if !ok {
		t.Errorf("step %d call %d: the model never read a result; it read:\n%s", step, index, joinResults(e.Server.Results()))
		return
	}
	if got := strings.Contains(text, toolguard.HintMarker); got != refused {
		t.Errorf("step %d call %d: refused %v, want %v: the model read %q", step, index, got, refused, text)
	}
}

// The agent matrix: agent × scenario → what the model read, what ran,
// what the user saw. CLITEST_MATRIX=FILE writes it as a Markdown table.

type row struct {
	agent, scenario string
	read            string // per call, in order: ran / REFUSED / -
	ran             int
	exit            string
	saw             string
	elapsed         string
	e               *Env
}

var (
	matrixMu sync.Mutex
	matrix   []*row
)

func newRow(e *Env, scenario string, o Outcome) *row {
	r := &row{agent: e.Agent.Name, scenario: scenario, exit: fmt.Sprint(o.Exit), saw: saw(o), e: e,
		elapsed: o.Elapsed.Round(100 * 1e6).String()}
	return r
}

// done completes the row with what the model read and what ran.
func (r *row) done(t *testing.T) {
	var parts []string
	for _, res := range r.e.Server.Results() {
		what := "ran"
		if strings.Contains(res.Text, toolguard.HintMarker) {
			what = "REFUSED"
		}
		parts = append(parts, fmt.Sprintf("%d.%d %s", res.Step+1, res.Index+1, what))
	}
	r.read = strings.Join(parts, ", ")
	r.ran = len(r.e.Ran())
	if t.Failed() {
		r.scenario += " (FAILED)"
	}
	t.Logf("matrix: %s | %s | read: %s | ran %d | exit %s | saw: %s", r.agent, r.scenario, r.read, r.ran, r.exit, r.saw)
	matrixMu.Lock()
	matrix = append(matrix, r)
	matrixMu.Unlock()
}

// saw is a line of what the user saw: where the CLI showed the refusal.
func saw(o Outcome) string {
	var where []string
	if strings.Contains(o.Stdout, toolguard.HintMarker) {
		where = append(where, "stdout")
	}
	if strings.Contains(o.Stderr, toolguard.HintMarker) {
		where = append(where, "stderr")
	}
	if len(where) == 0 {
		return "no refusal shown"
	}
	return "refusal on " + strings.Join(where, " and ")
}

func writeMatrix() {
	path := os.Getenv("CLITEST_MATRIX")
	if path == "" || len(matrix) == 0 {
		return
	}
	sort.Slice(matrix, func(i, j int) bool {
		if matrix[i].agent != matrix[j].agent {
			return matrix[i].agent < matrix[j].agent
		}
		return matrix[i].scenario < matrix[j].scenario
	})
	var b strings.Builder
	b.WriteString("| agent | scenario | the model read (step.call) | ran | exit | the user saw | time |\n|---|---|---|---|---|---|---|\n")
	for _, r := range matrix {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s |\n", r.agent, r.scenario, r.read, r.ran, r.exit, r.saw, r.elapsed)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "CLITEST_MATRIX:", err)
	}
}
