// Command toolguard works with recorded agent tool calls.
//
// Usage:
//
//	toolguard audit [flags] FILE...
//	toolguard mcp-proxy [flags] -- COMMAND [ARG...]
//	toolguard hook run|install|uninstall|status|log [flags]
//	toolguard serve [--addr HOST:PORT] [--policy FILE]
//
// audit replays the recorded calls of each episode through a toolguard
// Tracker and reports what would have fired; run "toolguard audit -h" for
// its flags. The formats, the JSON field names and the exit statuses are
// described in docs/audit.md of the repository.
//
// mcp-proxy runs an MCP server command behind a stdio MCP server that
// guards its tool calls; run "toolguard mcp-proxy -h" for its flags and see
// docs/integrations.md.
//
// hook guards the tool calls of an agent CLI (Claude Code, Codex, Gemini
// CLI, Copilot CLI, opencode, Cline, Crush, Cursor) through its hooks, and
// serve does the same for agents that post their hook events over HTTP;
// see docs/hooks.md.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/toolguard/toolguard/cmd/toolguard/internal/audit"
	"github.com/toolguard/toolguard/cmd/toolguard/internal/hook"
	"github.com/toolguard/toolguard/cmd/toolguard/internal/mcpproxy"
	"golang.org/x/term"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, isTerminal(os.Stderr)))
}

const usage = `usage: toolguard COMMAND [arguments]

Commands:
  audit   replay recorded agent tool calls and report what toolguard would
          have done (run "toolguard audit -h" for its flags)
  mcp-proxy
          run an MCP server behind a guard of its tool calls (run
          "toolguard mcp-proxy -h" for its flags)
  hook    guard an agent CLI's tool calls through its hooks: run, install,
          uninstall, status, log (run "toolguard hook help")
  serve   guard the tool calls of agents that post their hook events over
          HTTP (run "toolguard serve -h" for its flags)
`

// run dispatches the subcommand and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, terminal bool) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return audit.ExitBadInput
	}
	switch args[0] {
	case "audit":
		return audit.Main(args[1:], audit.Env{
			Stdin: stdin, Stdout: stdout, Stderr: stderr,
			Terminal:   terminal,
			PolicyFile: applyPolicyFile,
		})
	case "mcp-proxy":
		return mcpproxy.Main(args[1:], mcpproxy.Env{
			Stdin: stdin, Stdout: stdout, Stderr: stderr,
			PolicyFile: applyPolicyFile,
		})
	case "hook":
		return hook.Main(args[1:], hook.Env{
			Stdin: stdin, Stdout: stdout, Stderr: stderr,
			PolicyFile: applyPolicyFile,
		})
	case "serve":
		return hook.Serve(args[1:], hook.Env{
			Stdin: stdin, Stdout: stdout, Stderr: stderr,
			PolicyFile: applyPolicyFile,
		})
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return audit.ExitOK
	}
	fmt.Fprintf(stderr, "toolguard: unknown command %q\n\n%s", args[0], usage)
	return audit.ExitBadInput
}

// isTerminal reports whether f is a terminal. A character device is not
// enough: /dev/null is one too.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
