package hook

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// userFiles are settings a user already has, per agent, with hooks of
// their own that install must keep.
var userFiles = map[string]map[string]string{
	"claude": {"home/.claude/settings.json": `{
  "model": "opus",
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit-bash.sh"}]}]
  },
  "permissions": {"allow": ["Bash(ls:*)"]}
}
`},
	"codex": {
		"codex/hooks.json":  `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"/usr/local/bin/mine","timeout":5}]}]}}` + "\n",
		"codex/config.toml": "model = \"gpt-5.5\"\n\n[hooks.state.\"/x/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:00\"\n",
	},
	"gemini":   {"home/.gemini/settings.json": `{"security":{"auth":{"selectedType":"gemini-api-key"}},"hooks":{"AfterTool":[{"matcher":"*","hooks":[{"name":"mine","type":"command","command":"notify"}]}]}}` + "\n"},
	"copilot":  {"copilot/hooks/mine.json": `{"version":1,"hooks":{"preToolUse":[{"type":"command","bash":"mine"}]}}` + "\n"},
	"opencode": {"config/opencode/plugin/mine.js": "export const Mine = async () => ({})\n"},
	"cline":    {"cline/hooks/TaskStart": "#!/bin/sh\necho start\n"},
	"crush":    {"config/crush/crush.json": `{"options":{"debug":true},"hooks":{"PreToolUse":[{"matcher":"^bash$","command":"mine"}]}}` + "\n"},
	"cursor":   {"home/.cursor/hooks.json": `{"version":1,"hooks":{"afterFileEdit":[{"command":"./format.sh"}]}}` + "\n"},
}

// installEnv is an Env whose agents' homes are all under root.
func installEnv(root string, out *bytes.Buffer) Env {
	vars := map[string]string{
		"HOME":            root + "/home",
		"XDG_STATE_HOME":  root + "/state",
		"XDG_CONFIG_HOME": root + "/config",
		"CODEX_HOME":      root + "/codex",
		"COPILOT_HOME":    root + "/copilot",
		"CLINE_DIR":       root + "/cline",
	}
	return Env{
		Stdout: out, Stderr: out,
		Getenv:     func(k string) string { return vars[k] },
		Executable: "/opt/tool guard/toolguard",
	}
}

// snapshot returns every file under root but the state folder.
func snapshot(t *testing.T, root string) map[string]string {
	files := map[string]string{}
	require.NoError(t, filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if !strings.HasPrefix(rel, "state") {
			b, _ := os.ReadFile(p)
			files[rel] = string(b)
		}
		return nil
	}))
	return files
}

// TestInstallUninstall: for every agent, into a home that holds the user's
// own settings: install adds the guard and keeps the user's hooks, a second
// install changes nothing, status sees it, uninstall puts every file back
// byte for byte.
func TestInstallUninstall(t *testing.T) {
	for name := range installers {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for rel, data := range userFiles[name] {
				p := filepath.Join(root, rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
			}
			before := snapshot(t, root)
			var out bytes.Buffer
			env := installEnv(root, &out)
			require.Equal(t, ExitOK, Main([]string{"install", "--agent", name}, env), out.String())
			installed := snapshot(t, root)
			require.NotEqual(t, before, installed)
			cmd := `'/opt/tool guard/toolguard' hook run --agent ` + name
			found := false
			for rel, data := range installed {
				if strings.Contains(data, cmd) || strings.Contains(data, strings.ReplaceAll(js(cmd), `"`, "")) {
					found = true
				}
				if strings.HasSuffix(rel, ".json") && !strings.Contains(rel, "backup") {
					require.True(t, json.Valid([]byte(data)), "%s: %s", rel, data)
				}
			}
			require.True(t, found, "no entry runs the guard: %v", installed)
			// The user's own hooks are still there.
			for _, mine := range []string{"audit-bash.sh", "/usr/local/bin/mine", `"notify"`, `"bash":"mine"`, "export const Mine", "echo start", `"command":"mine"`, "./format.sh"} {
				for rel, data := range before {
					if strings.Contains(data, mine) {
						assert.Contains(t, strings.ReplaceAll(installed[rel], " ", ""), strings.ReplaceAll(mine, " ", ""), rel)
					}
				}
			}

			out.Reset()
			require.Equal(t, ExitOK, Main([]string{"install", "--agent", name}, env), out.String())
			require.Equal(t, installed, snapshot(t, root), "a second install changes nothing")

			out.Reset()
			require.Equal(t, ExitOK, Main([]string{"status"}, env))
			require.Contains(t, out.String(), name+" ")

			out.Reset()
			require.Equal(t, ExitOK, Main([]string{"uninstall", "--agent", name}, env), out.String())
			require.Equal(t, before, snapshot(t, root), "uninstall restores every file")
		})
	}
}

// TestUninstallKeepsLaterEdits: a settings file the user changed after the
// install loses only the guard's entries.
func TestUninstallKeepsLaterEdits(t *testing.T) {
	root := t.TempDir()
	var out bytes.Buffer
	env := installEnv(root, &out)
	require.Equal(t, ExitOK, Main([]string{"install", "--agent", "claude"}, env), out.String())
	path := filepath.Join(root, "home/.claude/settings.json")
	m, _, err := jsonSettings(path)
	require.NoError(t, err)
	m["theme"] = "dark"
	require.NoError(t, os.WriteFile(path, encodeSettings(m), 0o644))
	require.Equal(t, ExitOK, Main([]string{"uninstall", "--agent", "claude"}, env), out.String())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, `{"theme":"dark"}`, string(b))
}

// TestInstallDryRun writes nothing.
func TestInstallDryRun(t *testing.T) {
	root := t.TempDir()
	var out bytes.Buffer
	env := installEnv(root, &out)
	require.Equal(t, ExitOK, Main([]string{"install", "--agent", "codex", "--dry-run"}, env))
	require.Contains(t, out.String(), "would write")
	require.Contains(t, out.String(), "trusted_hash")
	require.Empty(t, snapshot(t, root))
}

// TestInstallRefusals: bad flags, mcphost's explanation, a user's own Cline
// hook in the way.
func TestInstallRefusals(t *testing.T) {
	root := t.TempDir()
	var out bytes.Buffer
	env := installEnv(root, &out)
	require.Equal(t, ExitBadInput, Main([]string{"install"}, env))
	require.Equal(t, ExitBadInput, Main([]string{"install", "--agent", "claude", "--scope", "global"}, env))
	require.Equal(t, ExitBadInput, Main([]string{"install", "--agent", "nobody"}, env))
	out.Reset()
	require.Equal(t, ExitOK, Main([]string{"install", "--agent", "mcphost"}, env))
	require.Contains(t, out.String(), "mcp-proxy")
	p := filepath.Join(root, "cline/hooks/PreToolUse")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho mine\n"), 0o755))
	out.Reset()
	require.Equal(t, ExitFailed, Main([]string{"install", "--agent", "cline"}, env))
	require.Contains(t, out.String(), "hook of yours")
	b, _ := os.ReadFile(p)
	require.Equal(t, "#!/bin/sh\necho mine\n", string(b))
}

// TestCodexTrust: the trust entries name hooks.json's groups by their
// index and hash each group in Codex's canonical form.
func TestCodexTrust(t *testing.T) {
	root := t.TempDir()
	for rel, data := range userFiles["codex"] {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	var out bytes.Buffer
	env := installEnv(root, &out)
	require.Equal(t, ExitOK, Main([]string{"install", "--agent", "codex"}, env), out.String())
	cfg, err := os.ReadFile(filepath.Join(root, "codex/config.toml"))
	require.NoError(t, err)
	hooksPath := filepath.Join(root, "codex/hooks.json")
	cmd := `'/opt/tool guard/toolguard' hook run --agent codex`
	// The user's PreToolUse group is 0: the guard's is 1.
	require.Contains(t, string(cfg), `[hooks.state."`+hooksPath+`:pre_tool_use:1:0"]`)
	require.Contains(t, string(cfg), `[hooks.state."`+hooksPath+`:post_tool_use:0:0"]`)
	require.Contains(t, string(cfg), codexTrustHash("pre_tool_use", "", cmd, 30))
	require.True(t, strings.HasPrefix(string(cfg), userFiles["codex"]["codex/config.toml"]))
	// The hash of a known group, computed by hand: sha256 of
	// {"event_name":"pre_tool_use","hooks":[{"async":false,"command":"x","timeout":30,"type":"command"}]}.
	require.Equal(t, "sha256:"+hashOf([]byte(`{"event_name":"pre_tool_use","hooks":[{"async":false,"command":"x","timeout":30,"type":"command"}]}`)),
		codexTrustHash("pre_tool_use", "", "x", 30))
}
