// Package hook is the "toolguard hook" and "toolguard serve" commands: live
// loop protection for agent CLIs (Claude Code, Codex, Gemini CLI, Copilot
// CLI, opencode, Cline, Crush, Cursor) through their tool-call hooks.
//
// `toolguard hook run --agent NAME` is the command the agent runs for each
// hook event, with the event's JSON payload on standard input; it answers
// in that agent's contract (agents.go). The state of a session between
// invocations is its event log (engine.go), which holds stand-ins of the
// calls, never raw arguments or results (digest.go). `hook install` writes
// the agent's settings (install.go); `toolguard serve` keeps the sessions
// in memory for agents that can post to it (serve.go).
//
// The hook never gets in the way of work when it fails: an internal error
// lets the call run (and is logged), whatever the agent does with a
// crashed hook (Copilot refuses the call on exit 1, so the hook never exits
// non-zero from "run").
package hook

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/toolguard/toolguard"
)

// Exit statuses of Main for the commands other than "run", which always
// exits 0.
const (
	ExitOK       = 0
	ExitFailed   = 1 // install, uninstall, log: the operation failed
	ExitBadInput = 2 // bad flags
)

// Env is what Main reads and writes besides its arguments.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// PolicyFile reads a --policy file over a base policy (the shared
	// applyPolicyFile of cmd/toolguard). nil means --policy is refused.
	PolicyFile func(base *toolguard.Policy, path string) (toolguard.Policy, error)
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Executable is the toolguard binary's absolute path, written into the
	// agents' settings; "" means os.Executable.
	Executable string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (env *Env) getenv(k string) string {
	if env.Getenv == nil {
		return os.Getenv(k)
	}
	return env.Getenv(k)
}

func (env *Env) executable() (string, error) {
	if env.Executable != "" {
		return env.Executable, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Abs(p)
}

const usage = `usage: toolguard hook COMMAND [flags]

  run --agent NAME [--event E] [--policy FILE]
        decide one hook event: the payload on standard input, the answer in
        the agent's contract (the command the agent runs; written by install)
  install --agent NAME [--scope user|project] [--dry-run] [--policy FILE]
        add the guard to the agent's hook settings (keeps your other hooks;
        a backup is written beside each file changed)
  uninstall --agent NAME [--scope user|project] [--dry-run]
        remove what install added
  status
        what is installed where, and the sessions the guard keeps
  log SESSION
        the decisions of a session (no arguments or results are kept)

Agents: %s.
Environment: TOOLGUARD_HOOK=off switches the guard off; TOOLGUARD_EXEMPT=A,B
lets the tools A and B repeat; XDG_STATE_HOME places the state
($XDG_STATE_HOME/toolguard, default ~/.local/state/toolguard).
See docs/hooks.md.
`

// Main runs "toolguard hook ARGS" and returns the exit status.
func Main(args []string, env Env) int {
	if len(args) == 0 {
		fmt.Fprintf(env.Stderr, usage, strings.Join(agentNames(), ", "))
		return ExitBadInput
	}
	switch args[0] {
	case "run":
		return runMain(args[1:], env)
	case "install":
		return installMain(args[1:], env, false)
	case "uninstall":
		return installMain(args[1:], env, true)
	case "status":
		return statusMain(args[1:], env)
	case "log":
		return logMain(args[1:], env)
	case "help", "-h", "-help", "--help":
		fmt.Fprintf(env.Stdout, usage, strings.Join(agentNames(), ", "))
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "toolguard hook: unknown command %q\n\n", args[0])
	fmt.Fprintf(env.Stderr, usage, strings.Join(agentNames(), ", "))
	return ExitBadInput
}

// stateDir is the guard's folder in the user's state directory.
func stateDir(env *Env) string {
	if d := env.getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "toolguard")
	}
	home := env.getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".local", "state", "toolguard")
}

// maxPayload bounds a hook payload read from standard input.
const maxPayload = 64 << 20

// runMain is "hook run". It exits 0 whatever happens: an answer, or, on an
// internal error, no answer, which every agent reads as "run the call".
func runMain(args []string, env Env) (code int) {
	fset := flag.NewFlagSet("toolguard hook run", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	name := fset.String("agent", "", "")
	event := fset.String("event", "", "")
	policyFile := fset.String("policy", "", "")
	if err := fset.Parse(args); err != nil {
		fmt.Fprintf(env.Stderr, "toolguard hook run: %v\n", err)
		return ExitOK
	}
	defer func() {
		if r := recover(); r != nil {
			logFailure(&env, *name, fmt.Errorf("internal error: %v", r))
			code = ExitOK
		}
	}()
	// A hook process lives for one event and allocates a few MiB replaying
	// a long session: collecting garbage would only cost time. The memory
	// limit turns the collector back on should a session be huge.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(256 << 20))
	out, err := decide(&env, *name, *event, *policyFile)
	if err != nil {
		logFailure(&env, *name, err)
		return ExitOK
	}
	if len(out.Stdout) > 0 {
		_, _ = env.Stdout.Write(out.Stdout)
	}
	if out.Stderr != "" {
		fmt.Fprintln(env.Stderr, out.Stderr)
	}
	return out.Code
}

// decide reads the payload and returns the agent's answer.
func decide(env *Env, name, event, policyFile string) (Output, error) {
	a, err := lookupAgent(name)
	if err != nil {
		return Output{}, err
	}
	data, err := io.ReadAll(io.LimitReader(env.Stdin, maxPayload+1))
	if err != nil {
		return Output{}, fmt.Errorf("reading the payload: %w", err)
	}
	if len(data) > maxPayload {
		return Output{}, fmt.Errorf("the payload is over %d bytes", maxPayload)
	}
	if v := strings.ToLower(env.getenv("TOOLGUARD_HOOK")); v == "off" || v == "0" || v == "false" {
		return Output{}, nil
	}
	p, err := parsePayload(data)
	if err != nil {
		return Output{}, err
	}
	ev, err := a.parse(p, event)
	if err != nil {
		return Output{}, err
	}
	if ev.Kind == KindOther {
		return a.render(ev, Answer{}), nil
	}
	toTranscript(a.name, &ev)
	pol, err := hookPolicy(env, a, policyFile)
	if err != nil {
		return Output{}, err
	}
	e := NewEngine(a, pol, stateDir(env), env.Now)
	ans, err := e.Handle(ev)
	if err != nil {
		return Output{}, err
	}
	return a.render(ev, ans), nil
}

// hookPolicy is the CLI policy for agent a with TOOLGUARD_EXEMPT, under a
// --policy file when given.
func hookPolicy(env *Env, a *agent, policyFile string) (toolguard.Policy, error) {
	pol := cliPolicy(a, strings.Split(env.getenv("TOOLGUARD_EXEMPT"), ","))
	if policyFile == "" {
		return pol, nil
	}
	if env.PolicyFile == nil {
		return pol, errors.New("--policy is not available in this build")
	}
	return env.PolicyFile(&pol, policyFile)
}

// maxErrorLog bounds the failure log; past it the log starts over.
const maxErrorLog = 1 << 20

// logFailure writes an internal failure to standard error and to the
// failure log in the state folder (errors.log). The failure holds no
// arguments or results.
func logFailure(env *Env, agentName string, err error) {
	msg := fmt.Sprintf("%s toolguard hook run --agent %s: %v (the call was let through)\n",
		time.Now().UTC().Format(time.RFC3339), agentName, err)
	if env.Stderr != nil {
		fmt.Fprint(env.Stderr, msg)
	}
	dir := stateDir(env)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	p := filepath.Join(dir, "errors.log")
	if st, err := os.Stat(p); err == nil && st.Size() > maxErrorLog {
		_ = os.Remove(p)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(msg)
}
