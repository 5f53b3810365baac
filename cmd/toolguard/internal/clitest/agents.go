package clitest

import (
	"path/filepath"
)

// dummyKey is the API key every CLI sends to the model server.
const dummyKey = "clitest-dummy-key"

func textFinal(text string) Step { return Step{Text: text} }

// Claude is Claude Code: Anthropic's /v1/messages, the Bash tool.
var Claude = &Agent{
	Name:  "claude",
	Shell: func(cmd string) Call { return Call{Name: "Bash", Args: map[string]any{"command": cmd, "description": "run it"}} },
	Final: textFinal,
	Configure: func(e *Env) {
		e.Vars["ANTHROPIC_BASE_URL"] = e.Server.URL
		e.Vars["ANTHROPIC_API_KEY"] = dummyKey
		e.Vars["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
		e.Vars["DISABLE_TELEMETRY"] = "1"
		e.Vars["DISABLE_AUTOUPDATER"] = "1"
		e.WriteFile(filepath.Join(e.Home, ".claude.json"), map[string]any{
			"hasCompletedOnboarding": true,
			"projects":               map[string]any{e.Project: map[string]any{"hasTrustDialogAccepted": true}},
		})
	},
	Args: func(e *Env, prompt string, resume bool) []string {
		args := []string{"-p", prompt, "--output-format", "json", "--allowedTools", "Bash", "--model", "claude-sonnet-4-5"}
		if resume {
			args = append(args, "--continue")
		}
		return args
	},
}
