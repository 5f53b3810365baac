package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
)

// dummyKey is the API key every CLI sends to the model server.
const dummyKey = "clitest-dummy-key"

func textFinal(text string) Step { return Step{Text: text} }

// Claude is Claude Code: Anthropic's /v1/messages, the Bash tool.
var Claude = &Agent{
	Name: "claude",
	Shell: func(cmd string) Call {
		return Call{Name: "Bash", Args: map[string]any{"command": cmd, "description": "run it"}}
	},
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

// Codex is the Codex CLI: OpenAI's /v1/responses, the exec_command tool.
var Codex = &Agent{
	Name:  "codex",
	Shell: func(cmd string) Call { return Call{Name: "exec_command", Args: map[string]any{"cmd": cmd}} },
	Final: textFinal,
	Configure: func(e *Env) {
		codexHome := filepath.Join(e.Home, ".codex")
		e.Vars["CODEX_HOME"] = codexHome
		e.Vars["CLITEST_KEY"] = dummyKey
		e.WriteFile(filepath.Join(codexHome, "config.toml"), `# the user's own settings
model = "gpt-5.5"
model_provider = "clitest"
check_for_update_on_startup = false

[model_providers.clitest]
name = "clitest"
base_url = "`+e.Server.URL+`/v1"
env_key = "CLITEST_KEY"
wire_api = "responses"

[analytics]
enabled = false
`)
	},
	Args: func(e *Env, prompt string, resume bool) []string {
		args := []string{"exec"}
		if resume {
			args = append(args, "resume", "--last")
		}
		args = append(args, "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--json")
		return append(args, prompt)
	},
}

// Gemini is the Gemini CLI: Gemini's :streamGenerateContent, the
// run_shell_command tool.
var Gemini = &Agent{
	Name:  "gemini",
	Shell: func(cmd string) Call { return Call{Name: "run_shell_command", Args: map[string]any{"command": cmd}} },
	Final: textFinal,
	Configure: func(e *Env) {
		e.Vars["GEMINI_API_KEY"] = dummyKey
		e.Vars["GOOGLE_GEMINI_BASE_URL"] = e.Server.URL
		e.WriteFile(filepath.Join(e.Home, ".gemini", "settings.json"), map[string]any{
			"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
			"ide":       map[string]any{"enabled": false},
		})
		e.WriteFile(filepath.Join(e.Home, ".gemini", "trustedFolders.json"), map[string]any{e.Project: "TRUST_FOLDER"})
	},
	Args: func(e *Env, prompt string, resume bool) []string {
		args := []string{"-m", "gemini-2.5-flash", "--yolo", "--output-format", "json"}
		if resume {
			args = append(args, "--resume", "latest")
		}
		return append(args, "-p", prompt)
	},
}

// Copilot is GitHub Copilot CLI in its offline bring-your-own-key mode:
// /v1/chat/completions, the bash tool.
var Copilot = &Agent{
	Name: "copilot",
	Shell: func(cmd string) Call {
		return Call{Name: "bash", Args: map[string]any{"command": cmd, "description": "Run the command"}}
	},
	Final: textFinal,
	Configure: func(e *Env) {
		e.Vars["COPILOT_HOME"] = filepath.Join(e.Home, ".copilot")
		e.Vars["COPILOT_OFFLINE"] = "true"
		e.Vars["COPILOT_PROVIDER_BASE_URL"] = e.Server.URL + "/v1"
		e.Vars["COPILOT_PROVIDER_API_KEY"] = dummyKey
		e.Vars["COPILOT_MODEL"] = "gpt-5.4"
		e.MkdirAll(filepath.Join(e.Home, ".copilot"))
	},
	Args: func(e *Env, prompt string, resume bool) []string {
		args := []string{"-p", prompt, "--allow-all-tools", "--no-auto-update", "--output-format", "json"}
		if resume {
			args = append(args, "--continue")
		}
		return args
	},
}

// Opencode is opencode: /v1/chat/completions through its bundled
// OpenAI-compatible provider, the bash tool; guarded by a plugin.
var Opencode = &Agent{
	Name: "opencode",
	Shell: func(cmd string) Call {
		return Call{Name: "bash", Args: map[string]any{"command": cmd, "description": "Run the command"}}
	},
	Final: textFinal,
	Configure: func(e *Env) {
		for k, v := range map[string]string{"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "1"} {
			e.Vars[k] = v
		}
		e.WriteFile(filepath.Join(e.Project, "opencode.json"), map[string]any{
			"$schema": "https://opencode.ai/config.json",
			"provider": map[string]any{"clitest": map[string]any{
				"npm":     "@ai-sdk/openai-compatible",
				"name":    "clitest",
				"options": map[string]any{"baseURL": e.Server.URL + "/v1", "apiKey": dummyKey},
				"models":  map[string]any{"m": map[string]any{"name": "m", "tool_call": true}},
			}},
			"model":       "clitest/m",
			"small_model": "clitest/m",
			// doom_loop is opencode's own check of three identical calls
			// in a row: `opencode run` rejects its permission prompt and
			// ends the run with an error. Off, so the guard is under test.
			"permission": map[string]any{"bash": "allow", "doom_loop": "allow"},
			"autoupdate": false,
			"share":      "disabled",
		})
		opencodePlugin(e, filepath.Join(e.XDG("config"), "opencode"))
	},
	Args: func(e *Env, prompt string, resume bool) []string {
		args := []string{"run", "--format", "json"}
		if resume {
			args = append(args, "--continue")
		}
		return append(args, prompt)
	},
}

// Cline is the Cline CLI: /v1/chat/completions, the run_commands tool; a
// run ends when the model calls submit_and_exit.
var Cline = &Agent{
	Name: "cline",
	Shell: func(cmd string) Call {
		return Call{Name: "run_commands", Args: map[string]any{"commands": []string{cmd}}}
	},
	Final: func(text string) Step {
		return Step{Calls: []Call{{Name: "submit_and_exit", Args: map[string]any{"summary": "the answer: " + text, "verified": true}}}}
	},
	Configure: func(e *Env) {
		e.Vars["CLINE_DIR"] = filepath.Join(e.Home, ".cline")
		out, err := e.Command(e.Bin, "auth", "-p", "openai-compatible", "-k", dummyKey, "-m", "m", "-b", e.Server.URL+"/v1")
		if err != nil {
			e.T.Fatalf("cline auth: %v\n%s", err, out)
		}
	},
	Args: func(e *Env, prompt string, resume bool) []string {
		// Cline 3.0.65 resumes a session (--id) only in its interactive
		// terminal UI: a headless run is always a new task (TestNewTurn).
		return []string{"--yolo", "--json", prompt}
	},
}

// opencodePlugin preinstalls @opencode-ai/plugin in the opencode config
// folder dir, as opencode would before loading plugins (minutes): a copy
// of install.sh's opencode-config (the package.json opencode writes, its
// lock file and node_modules). opencode reinstalls over a node_modules
// that is a symbolic link, so it is copied.
func opencodePlugin(e *Env, dir string) {
	e.MkdirAll(filepath.Dir(dir))
	out, err := exec.Command("cp", "-a", filepath.Join(InstallDir(), "opencode-config"), dir).CombinedOutput()
	if err != nil {
		e.T.Fatalf("cp: %v\n%s", err, out)
	}
}

// Mcphost is mcphost: /v1/chat/completions, every tool from an MCP server.
// Its hooks cannot refuse a call, so its one MCP server, the test binary's
// shell server (ServeMCP), runs behind `toolguard mcp-proxy`.
var Mcphost = &Agent{
	Name:  "mcphost",
	Shell: func(cmd string) Call { return Call{Name: "sh__run", Args: map[string]any{"command": cmd}} },
	Final: textFinal,
	Configure: func(e *Env) {
		self, err := os.Executable()
		if err != nil {
			e.T.Fatal(err)
		}
		e.WriteFile(filepath.Join(e.Home, ".mcphost.json"), map[string]any{
			"mcpServers": map[string]any{"sh": map[string]any{
				"type":        "local",
				"command":     []string{Toolguard(e.T), "mcp-proxy", "--", self},
				"environment": map[string]string{MCPServerEnv: "1"},
			}},
		})
	},
	Args: func(e *Env, prompt string, resume bool) []string {
		return []string{"-p", prompt, "--quiet", "--config", filepath.Join(e.Home, ".mcphost.json"),
			"-m", "openai:m", "--provider-url", e.Server.URL + "/v1", "--provider-api-key", dummyKey,
			"--session", filepath.Join(e.Root, "mcphost-session.json")}
	},
}
