package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An Agent is one CLI as the tests drive it: how its model calls the
// shell, how its model ends a turn, how it is configured for the scripted
// model server and how it is run.
type Agent struct {
	Name string // as in `toolguard hook install --agent NAME`
	// Shell is the call that runs cmd with the CLI's shell tool.
	Shell func(cmd string) Call
	// Final is the model's last step: its answer.
	Final func(text string) Step
	// Configure writes the CLI's own configuration (the provider, trust)
	// into e's home and project, and sets e's variables.
	Configure func(e *Env)
	// Args is the command line (after the binary) that runs prompt;
	// resume continues the session of the previous run.
	Args func(e *Env, prompt string, resume bool) []string
}

// Env is a scratch environment for one agent: a home of its own (with the
// user's own settings in it), a project folder, and the file every shell
// command of a scenario appends to, so what ran is counted apart from
// what the CLI reports.
type Env struct {
	T       testing.TB
	Agent   *Agent
	Bin     string // the CLI's executable
	Root    string
	Home    string
	Project string
	Counter string // the file the scenario's commands append a line to
	Server  *Server
	Vars    map[string]string // the run's environment, over a minimal base
	// ExtraArgs are added to the CLI's command line.
	ExtraArgs []string
	runs      int
	outcomes  []Outcome
	// what Install changed, and the files before it (Uninstall checks)
	installed []string
	original  snapshot
}

// NewEnv makes a scratch environment for a and configures a's CLI there;
// its model server has no script yet (Server.SetScript).
func NewEnv(t testing.TB, a *Agent) *Env {
	t.Helper()
	bin := Require(t, a.Name)
	root := t.TempDir()
	e := &Env{
		T: t, Agent: a, Bin: bin, Root: root,
		Home:    filepath.Join(root, "home"),
		Project: filepath.Join(root, "project"),
		Counter: filepath.Join(root, "project", ".ran"),
		Server:  NewServer(t, nil, a.Final("(the script has ended)")),
	}
	for _, d := range []string{e.Home, e.Project, filepath.Join(root, "tmp"),
		e.XDG("config"), e.XDG("state"), e.XDG("cache"), e.XDG("data")} {
		e.MkdirAll(d)
	}
	e.Vars = map[string]string{
		"HOME":            e.Home,
		"PATH":            os.Getenv("PATH"),
		"TMPDIR":          filepath.Join(root, "tmp"),
		"XDG_CONFIG_HOME": e.XDG("config"),
		"XDG_STATE_HOME":  e.XDG("state"),
		"XDG_CACHE_HOME":  e.XDG("cache"),
		"XDG_DATA_HOME":   e.XDG("data"),
		"LANG":            "C.UTF-8",
		"TERM":            "dumb",
		"NO_COLOR":        "1",
	}
	a.Configure(e)
	return e
}

// XDG is the scratch XDG base folder of kind (config, state, cache, data).
func (e *Env) XDG(kind string) string { return filepath.Join(e.Root, "xdg", kind) }

// MkdirAll makes dir or fails the test.
func (e *Env) MkdirAll(dir string) {
	e.T.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.T.Fatal(err)
	}
}

// WriteFile writes data (a string, bytes, or a value written as JSON) to
// path, making its folder.
func (e *Env) WriteFile(path string, data any) {
	e.T.Helper()
	var b []byte
	switch d := data.(type) {
	case string:
		b = []byte(d)
	case []byte:
		b = d
	default:
		var err error
		if b, err = json.MarshalIndent(d, "", "  "); err != nil {
			e.T.Fatal(err)
		}
		b = append(b, '\n')
	}
	e.MkdirAll(filepath.Dir(path))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		e.T.Fatal(err)
	}
}

// ReadFile returns path's contents, "" if it does not exist.
func (e *Env) ReadFile(path string) string {
	e.T.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		e.T.Fatal(err)
	}
	return string(b)
}

// ReadJSON decodes the JSON file path into v.
func (e *Env) ReadJSON(path string, v any) {
	e.T.Helper()
	if err := json.Unmarshal([]byte(e.ReadFile(path)), v); err != nil {
		e.T.Fatalf("%s: %v", path, err)
	}
}

// Ran returns the lines the scenario's commands appended to the counter:
// what really ran.
func (e *Env) Ran() []string {
	e.T.Helper()
	s := strings.TrimSpace(e.ReadFile(e.Counter))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Outcome is what one CLI run did.
type Outcome struct {
	Exit    int // -1: killed at the time limit
	Stdout  string
	Stderr  string
	Elapsed time.Duration
}

// RunTimeout bounds one CLI run.
const RunTimeout = 300 * time.Second

// Run runs the CLI on prompt in the project folder; resume continues the
// previous run's session. The process group is killed at RunTimeout (Cline
// ignores SIGTERM while busy).
func (e *Env) Run(prompt string, resume bool) Outcome {
	e.T.Helper()
	e.runs++
	args := e.Agent.Args(e, prompt, resume)
	args = append(args[:len(args):len(args)], e.ExtraArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), RunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Bin, args...)
	cmd.Dir = e.Project
	cmd.Env = e.environ()
	cmd.Stdin = nil // /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	o := Outcome{Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		o.Exit = -1
	case errors.As(err, &exit):
		o.Exit = exit.ExitCode()
	case err != nil:
		e.T.Fatalf("%s: %v", e.Agent.Name, err)
	}
	// A CLI may leave helpers behind (a daemon, a shell): end the group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	e.T.Logf("%s run %d: exit %d in %s", e.Agent.Name, e.runs, o.Exit, o.Elapsed.Round(time.Millisecond))
	e.outcomes = append(e.outcomes, o)
	if o.Exit == -1 {
		e.T.Errorf("%s did not finish within %s\nstdout:\n%s\nstderr:\n%s", e.Agent.Name, RunTimeout, tail(o.Stdout), tail(o.Stderr))
	}
	return o
}

// LogOutcomes logs what each run printed, for a failed test.
func (e *Env) LogOutcomes() {
	for i, o := range e.outcomes {
		e.T.Logf("%s run %d: exit %d\nstdout:\n%s\nstderr:\n%s", e.Agent.Name, i+1, o.Exit, tail(o.Stdout), tail(o.Stderr))
	}
	if u := e.Server.Unknown(); len(u) > 0 {
		e.T.Logf("requests the model server did not know: %v", u)
	}
}

// environ is the run's environment: Vars only, so nothing of the
// developer's own configuration (API keys, homes) leaks in.
func (e *Env) environ() []string {
	keys := make([]string, 0, len(e.Vars))
	for k := range e.Vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+e.Vars[k])
	}
	return env
}

// Command runs another program (toolguard) with the run's environment.
func (e *Env) Command(name string, args ...string) (string, error) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.Project
	cmd.Env = e.environ()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// tail is the end of a long output, for failure messages.
func tail(s string) string {
	const max = 4000
	if len(s) > max {
		return "…" + s[len(s)-max:]
	}
	return s
}
