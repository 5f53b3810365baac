package hook

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pluginDriver loads the installed opencode plugin in node and calls its
// hooks as opencode does: the same command four times, each call's after
// hook when it ran. It prints one JSON line per call.
const pluginDriver = `
const mod = await import(process.argv[2])
const aborted = []
const hooks = await mod.Toolguard({ client: { session: { abort: async (o) => { aborted.push(o.path.id) } } } })
await hooks["chat.message"]({ sessionID: "S" }, {})
for (let i = 1; i <= 4; i++) {
  const input = { tool: "bash", sessionID: "S", callID: "c" + i }
  const output = { args: { command: "make" } }
  let error = null
  try { await hooks["tool.execute.before"](input, output) } catch (e) { error = e.message }
  if (error === null) {
    await hooks["tool.execute.after"]({ ...input, args: output.args }, { title: "make", output: "same", metadata: { exit: 0 } })
  }
  console.log(JSON.stringify({ i, error, aborted: aborted.length }))
}
`

// TestOpencodePlugin runs the plugin install writes, in node, against the
// real toolguard binary and against toolguard serve.
func TestOpencodePlugin(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is needed")
		}
		t.Skip("node is not installed")
	}
	root := t.TempDir()
	bin := filepath.Join(root, "toolguard")
	out, err := exec.Command("go", "build", "-o", bin, "../..").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var buf bytes.Buffer
	env := installEnv(root, &buf)
	env.Executable = bin
	require.Equal(t, ExitOK, Main([]string{"install", "--agent", "opencode"}, env), buf.String())
	plugin := filepath.Join(root, "config/opencode/plugin/toolguard.js")
	driver := filepath.Join(root, "driver.mjs")
	require.NoError(t, os.WriteFile(driver, []byte(pluginDriver), 0o600))

	h, err := NewHandler(&env, "")
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, serve := range []string{"", srv.URL} {
		state := t.TempDir()
		cmd := exec.Command("node", driver, "file://"+plugin)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "TOOLGUARD_SERVE_URL="+serve, "TOOLGUARD_HOOK=", "TOOLGUARD_EXEMPT=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		var got []struct {
			I       int
			Error   *string
			Aborted int
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var r struct {
				I       int
				Error   *string
				Aborted int
			}
			require.NoError(t, json.Unmarshal([]byte(line), &r), "%s", out)
			got = append(got, r)
		}
		require.Len(t, got, 4, "%s", out)
		require.Nil(t, got[0].Error)
		require.Nil(t, got[1].Error)
		require.NotNil(t, got[2].Error, "serve %q", serve)
		require.Contains(t, *got[2].Error, "identical parameters")
		require.Equal(t, 0, got[2].Aborted)
		require.NotNil(t, got[3].Error)
		require.Equal(t, 1, got[3].Aborted, "the repeat after the hint aborts the session: %s", out)
	}
}
