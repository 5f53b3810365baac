package mcpproxy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stop closes the client's side and waits for the proxy's exit status.
func (s *session) stop() int {
	s.t.Helper()
	s.in.Close()
	code := <-s.done
	s.done <- code
	return code
}

func TestDryRun(t *testing.T) {
	s := start(t, nil, "--dry-run")
	s.initialize()
	read := map[string]any{"path": "/etc/hosts"}
	var got []string
	for range 4 {
		m := s.call("read_file", read)
		got = append(got, verdict(m)+": "+resultText(m))
	}
	for _, g := range got {
		assert.Equal(t, "allow: contents of /etc/hosts", g, "shadow mode refuses nothing")
	}
	require.Equal(t, ExitOK, s.stop())
	log := s.stderr.String()
	assert.Equal(t, 2, strings.Count(log, "dry run: this call would be refused"), log)
	assert.Contains(t, log, "gen_ai.tool.call.id=4", "the call id of the first one refused (1 is initialize)")
	assert.Contains(t, log, "would_refuse=2")
}

func TestJSONLogAndSummary(t *testing.T) {
	s := start(t, nil, "--log-format", "json")
	s.initialize()
	read := map[string]any{"path": "/etc/hosts"}
	for range 4 {
		s.call("read_file", read)
	}
	require.Equal(t, ExitOK, s.stop())
	var summary map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.stderr.String()))
	lines := 0
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "every log line is JSON: %s", sc.Text())
		lines++
		if rec["msg"] == "toolguard mcp-proxy: session summary" {
			summary = rec
		}
		if rec["level"] == "WARN" {
			assert.NotEmpty(t, rec["gen_ai.tool.call.id"], "a refusal names its call: %s", sc.Text())
		}
	}
	require.NotNil(t, summary, s.stderr.String())
	assert.EqualValues(t, 4, summary["calls"])
	assert.EqualValues(t, 2, summary["refused"])
	assert.EqualValues(t, 1, summary["refused.hint/duplicate"])
	assert.EqualValues(t, 1, summary["refused.abort/duplicate"])
	assert.EqualValues(t, 1, summary["conversations"])
	assert.Greater(t, lines, 2)
}

func TestVersionAndBadLogFormat(t *testing.T) {
	var out, errOut strings.Builder
	assert.Equal(t, ExitOK, Main([]string{"--version"}, Env{Stdout: &out, Stderr: &errOut}))
	assert.Regexp(t, `^toolguard mcp-proxy \S`, out.String())
	assert.Equal(t, ExitBadInput, Main([]string{"--log-format", "xml", "--", "true"}, Env{Stdout: &out, Stderr: &errOut}))
	assert.Contains(t, errOut.String(), `--log-format "xml": want text or json`)
}

// The whole policy through --policy: an exempt polling tool, a tool whose
// readOnlyHint the user overrides, and no turn budget unless set.
func TestPolicyFileWholePolicy(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`tools:
  echo_size: {exempt: true}
  read_file: {read_only: false}
`), 0o600))
	s := startEnv(t, nil, Env{PolicyFile: policyFile}, "--policy", file)
	s.initialize()
	s.request("tools/list", map[string]any{})
	for range 6 {
		assert.Equal(t, "allow", verdict(s.call("echo_size", map[string]any{"blob": "same"})), "exempt")
	}
	// read_file is not read-only now: a read_file of another path in
	// between is progress for the loop on the first path. With the
	// server's hint it is not (see the proxy without the file, below).
	seq := func(s *session) []string {
		a, b := map[string]any{"path": "/a"}, map[string]any{"path": "/b"}
		return []string{verdict(s.call("read_file", a)), verdict(s.call("read_file", a)),
			verdict(s.call("read_file", b)), verdict(s.call("read_file", a))}
	}
	assert.Equal(t, []string{"allow", "allow", "allow", "allow"}, seq(s))
	hinted := start(t, nil)
	hinted.initialize()
	hinted.request("tools/list", map[string]any{})
	assert.Equal(t, []string{"allow", "allow", "allow", "hint"}, seq(hinted))

	// Bad file: FILE:LINE:COLUMN.
	require.NoError(t, os.WriteFile(file, []byte("tools:\n  x: {exmpt: true}\n"), 0o600))
	var out, errOut strings.Builder
	assert.Equal(t, ExitBadInput, Main([]string{"--policy", file, "--", "true"}, Env{Stdout: &out, Stderr: &errOut, PolicyFile: policyFile}))
	assert.Contains(t, errOut.String(), file+":2:7: tools.x.exmpt: unknown key; did you mean exempt?")
}
