package audit

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/toolguard/toolguard"
)

// Exit statuses of Main.
const (
	ExitOK       = 0 // every file was audited; --fail-on was not reached
	ExitFailOn   = 1 // some episode reached the --fail-on verdict
	ExitBadInput = 2 // a usage error, or a file that could not be read or parsed
)

// StdinName is how standard input ("-") is named in reports and errors.
const StdinName = "<stdin>"

// Env is what Main needs from the process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Terminal reports that Stderr is a terminal: only then is a progress
	// bar drawn while inputs are read.
	Terminal bool
	// PolicyFile reads a --policy quota file: over the defaults when base
	// is nil, layered onto the --preset policy otherwise. nil means
	// --policy is refused.
	PolicyFile func(base *toolguard.Policy, path string) (toolguard.Policy, error)
	// Now is the clock of the progress bar. nil means time.Now.
	Now func() time.Time
}

const usage = `usage: toolguard audit [flags] FILE|FOLDER...

Replays recorded agent tool calls through toolguard and reports, per
episode, what would have fired. A FILE holds Claude Code, Codex CLI or
Gemini CLI sessions, OpenAI (Chat Completions, chat.completion responses,
Responses API), Anthropic or Vercel AI SDK conversations, OTLP-JSON GenAI
spans, Claude Code's headless output, Harbor's trajectory.json (ATIF),
Copilot CLI event logs, OpenHands trajectories, Cline and Roo Code task
histories, aider chat histories, Goose sessions, opencode exports, or
episodes in the JSON Lines trace format; the format is detected
from the content (docs/audit.md lists them). A FOLDER is walked for its
*.jsonl and *.json files and .aider.chat.history.md (~/.claude/projects,
~/.codex/sessions, ~/.gemini/tmp), grouped by project; a file in it that is not a transcript
is skipped, a transcript without a tool call is listed. "-" reads standard
input.

Flags (before or after the files):
  --format text|json|html  output: one line per episode and a summary
                           (text, the default), every decision (json), or
                           a self-contained page with a timeline per
                           episode (html)
  --preset NAME            use a preset policy: %s
  --policy FILE            use the quotas of a YAML quota file (or the
                           front matter of a Markdown agent definition),
                           over the defaults or over --preset
  --compare NAME,...       replay under these policies too and set them side
                           by side (NAME: default, policy for the --policy
                           file, or a preset)
  --fail-on hint|abort     exit 1 when an episode reached that verdict
                           (hint includes abort)
  --episodes all|fired|none
                           which episodes the text report lists, one per
                           line, before its summary (default all)
  --max-episode-size MIB   the largest record, or session file, read
                           (default 256); a larger one is an error

Exit status: 0 every file was read (a file without a tool call, or a
last line cut off while its session was being written, is read and
listed, not a failure); 1 --fail-on was reached; 2 a usage error, or some
file could not be read or parsed (the other files are still audited, and
2 wins over 1).
`

// Main runs `toolguard audit` with the arguments after "audit" and
// returns the exit status.
func Main(args []string, env Env) int {
	tuneGC()
	if env.Now == nil {
		env.Now = time.Now
	}
	opts, status, ok := parseOptions(args, env)
	if !ok {
		return status
	}

	r := &Report{Policy: opts.policyName, Lines: opts.lines}
	for _, np := range opts.run.compare {
		r.Compare = append(r.Compare, np.name)
	}
	ins, errs := expandInputs(opts.files)
	for _, fr := range errs {
		fmt.Fprintln(env.Stderr, fr.Err)
		status = ExitBadInput
	}
	r.Files = append(r.Files, errs...)
	var found []input
	for _, in := range ins {
		if in.path == "-" || !containsFile(errs, in.path) {
			found = append(found, in)
		}
	}
	if !run(found, opts.run, env, r) {
		status = ExitBadInput
	}
	defer r.release()
	if err := opts.write(env.Stdout, r); err != nil {
		fmt.Fprintf(env.Stderr, "toolguard audit: writing the report: %v\n", err)
		return ExitBadInput
	}
	if status == ExitOK && opts.failOn != toolguard.Allow && r.reached(opts.failOn) {
		return ExitFailOn
	}
	return status
}

// auditGCPercent is the garbage collector's target of the command: the
// live heap is small (a bounded number of episodes in flight) and most of
// what is allocated dies at once, so collecting half as often costs little
// memory and saves a fifth of the time.
const auditGCPercent = 200

// tuneGC sets the collector's target, unless the user set GOGC.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(auditGCPercent)
	}
}

// options are the parsed command line.
type options struct {
	files      []string
	write      func(io.Writer, *Report) error
	failOn     toolguard.Verdict // Allow: not set
	policy     toolguard.Policy
	policyName string
	run        runOptions
	lines      string
}

func containsFile(frs []FileResult, name string) bool {
	for _, fr := range frs {
		if fr.File == name {
			return true
		}
	}
	return false
}

// parseOptions reads the flags and the policy. When it returns false, Main
// returns the status (help was printed, or a problem reported).
func parseOptions(args []string, env Env) (options, int, bool) {
	fset := flag.NewFlagSet("toolguard audit", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	formatFlag := fset.String("format", "text", "")
	preset := fset.String("preset", "", "")
	policyFile := fset.String("policy", "", "")
	failOn := fset.String("fail-on", "", "")
	fset.Bool("allow-no-calls", false, "") // accepted for old scripts: a file without calls is no longer an error
	lines := fset.String("episodes", "all", "")
	compare := fset.String("compare", "", "")
	maxEpisode := fset.Int("max-episode-size", DefaultMaxEpisode>>20, "")
	fail := func(format string, a ...any) (options, int, bool) {
		fmt.Fprintf(env.Stderr, "toolguard audit: "+format+"\n", a...)
		fmt.Fprintln(env.Stderr, `run "toolguard audit -h" for help`)
		return options{}, ExitBadInput, false
	}

	var (
		opts options
		err  error
	)
	opts.files, err = parseInterspersed(fset, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(env.Stdout, usage, strings.Join(toolguard.PresetNames(), ", "))
		return options{}, ExitOK, false
	case err != nil:
		return fail("%v", err)
	case len(opts.files) == 0:
		return fail("no input: name one or more files, or - for standard input")
	}
	stdin := 0
	for _, f := range opts.files {
		if f == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return fail("standard input (-) named more than once")
	}
	switch *failOn {
	case "":
	case "hint":
		opts.failOn = toolguard.Hint
	case "abort":
		opts.failOn = toolguard.Abort
	default:
		return fail("--fail-on %q: want hint or abort", *failOn)
	}
	switch *formatFlag {
	case "text":
		opts.write = WriteText
	case "json":
		opts.write = WriteJSON
	case "html":
		opts.write = WriteHTML
	default:
		return fail("--format %q: want text, json or html", *formatFlag)
	}

	switch *lines {
	case "all", "fired", "none":
		opts.lines = *lines
	default:
		return fail("--episodes %q: want all, fired or none", *lines)
	}
	if *maxEpisode <= 0 || *maxEpisode > 1<<20 {
		return fail("--max-episode-size %d: want a number of MiB between 1 and %d", *maxEpisode, 1<<20)
	}
	opts.policyName = "default"
	var base *toolguard.Policy
	if *preset != "" {
		p, err := toolguard.Preset(*preset)
		if err != nil {
			return fail("--preset: %v", err)
		}
		opts.policy, base, opts.policyName = p, &p, "preset "+*preset
	}
	if *policyFile != "" {
		if env.PolicyFile == nil {
			return fail("--policy is not available in this build")
		}
		p, err := env.PolicyFile(base, *policyFile)
		if err != nil {
			fmt.Fprintf(env.Stderr, "toolguard audit: --policy: %v\n", err)
			return options{}, ExitBadInput, false
		}
		opts.policy = p
		if base == nil {
			opts.policyName = "file " + *policyFile
		} else {
			opts.policyName += " with file " + *policyFile
		}
	}
	var compared []namedPolicy
	if *compare != "" {
		for _, name := range strings.Split(*compare, ",") {
			name = strings.TrimSpace(name)
			switch name {
			case "default":
				compared = append(compared, namedPolicy{name: name})
			case "policy":
				if *policyFile == "" {
					return fail("--compare policy: no --policy FILE given")
				}
				compared = append(compared, namedPolicy{name: "policy " + *policyFile, policy: opts.policy})
			default:
				p, err := toolguard.Preset(name)
				if err != nil {
					return fail("--compare: %v (want default, policy or a preset: %s)", err, strings.Join(toolguard.PresetNames(), ", "))
				}
				compared = append(compared, namedPolicy{name: "preset " + name, policy: p})
			}
		}
	}
	opts.run = runOptions{
		policy: opts.policy, keep: *formatFlag != "text", compare: compared,
		maxEpisode: *maxEpisode << 20, workers: workersDefault(),
	}
	return opts, ExitOK, true
}

// namedPolicy is a policy of --compare and its name.
type namedPolicy struct {
	name   string
	policy toolguard.Policy
}

// parseInterspersed parses flags that may come before, between or after
// the file names; "--" ends the flags.
func parseInterspersed(fset *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fset.Parse(args); err != nil {
			return nil, err
		}
		rest := fset.Args()
		if len(rest) == 0 {
			return files, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(files, rest...), nil
		}
		files = append(files, rest[0])
		args = rest[1:]
	}
}

// pathProblem drops the path from an *fs.PathError: the caller names the file.
func pathProblem(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
