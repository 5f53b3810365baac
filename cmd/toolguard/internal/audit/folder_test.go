package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCutLastLine: a session still being written ends in a line cut off
// mid-record. The file is read up to the cut, with a warning naming the
// line, whether it is read whole (a session transcript) or record by
// record (the episode format), and the exit status stays 0.
func TestCutLastLine(t *testing.T) {
	dir := t.TempDir()
	session := readFixture(t, "sessions/claude-code/-home-dev-shop/7c0e5a52-3f1d-4b8e-9a61-2d4f8e1b9c30.jsonl")
	lines := strings.Count(string(session), "\n")
	cut := session[:len(session)-40] // the last line loses its end and its newline
	writeFile(t, filepath.Join(dir, "claude", "s.jsonl"), string(cut))

	// Record by record, past the first chunk: the cut line is the last of
	// the last chunk.
	var ep strings.Builder
	for i := range 3000 {
		ep.WriteString(`{"episode":"e` + itoa(i) + `","calls":[{"tool":"ls","args":{"path":"/tmp/` + strings.Repeat("x", 400) + `"}}]}` + "\n")
	}
	ep.WriteString(`{"episode":"cut","calls":[{"tool":"l`)
	writeFile(t, filepath.Join(dir, "episodes", "e.jsonl"), ep.String())

	st, out, errOut := main3(t, "", "--episodes", "none", dir)
	assert.Equal(t, ExitOK, st, errOut)
	assert.Contains(t, errOut, "claude/s.jsonl: line "+itoa(lines)+": the last line is cut off (a session still being written?); read up to line "+itoa(lines-1))
	assert.Contains(t, errOut, "episodes/e.jsonl: line 3001: the last line is cut off")
	assert.Contains(t, out, "calls                        3010")
	assert.Contains(t, out, "Files read with a warning (2)")

	// A cut line that is not the last stays an error.
	mid := strings.Replace(ep.String(), `{"episode":"e5",`, `{"episode":"e5`, 1)
	writeFile(t, filepath.Join(dir, "mid.jsonl"), mid)
	st, _, errOut = main3(t, "", filepath.Join(dir, "mid.jsonl"))
	assert.Equal(t, ExitBadInput, st)
	assert.Contains(t, errOut, "mid.jsonl: line 6:")
}

// TestFolderJSON: a folder of .json transcripts is read (it used to report
// "files 0"); .json files that are not transcripts (settings, todo lists)
// are passed over, not errors.
func TestFolderJSON(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"openai_functions.json", "anthropic_server_tools.json", "vercel_ui_messages.json"} {
		writeFile(t, filepath.Join(dir, "api", f), string(readFixture(t, "sessions/api/"+f)))
	}
	writeFile(t, filepath.Join(dir, "settings.json"), `{"theme":"dark","permissions":{"allow":["Bash(ls:*)"]}}`)
	writeFile(t, filepath.Join(dir, "todos", "a.json"), `[]`)
	writeFile(t, filepath.Join(dir, "todos", "b.json"), `[{"content":"fix the parser","status":"pending","id":"1"}]`)
	writeFile(t, filepath.Join(dir, "broken.json"), `{"messages": [`)
	st, out, errOut := main3(t, "", "--format", "json", dir)
	require.Equal(t, ExitOK, st, errOut)
	assert.Empty(t, errOut)
	assert.Contains(t, out, `"files": 7,`)
	assert.Contains(t, out, `"files_skipped": 4,`)
	assert.Contains(t, out, `"format": "vercel-ai"`)
	assert.NotContains(t, out, `"calls": 0,
  "episodes`)
}

// TestExitStatuses pins the documented exit statuses on a folder as a
// user has it: 0 when every file was read (files without calls and cut
// last lines included), 1 when --fail-on is reached, 2 when some file
// could not be read, whatever --fail-on says.
func TestExitStatuses(t *testing.T) {
	home := t.TempDir()
	copyTree(t, filepath.Join(fixtures, "sessions", "claude-code"), filepath.Join(home, "projects"))
	st, _, errOut := main3(t, "", home)
	assert.Equal(t, ExitOK, st, errOut)
	st, _, _ = main3(t, "", "--fail-on", "hint", home)
	assert.Equal(t, ExitFailOn, st)
	writeFile(t, filepath.Join(home, "projects", "x", "broken.jsonl"), "{\"type\":\"user\"\n{}\n")
	st, _, errOut = main3(t, "", "--fail-on", "hint", home)
	assert.Equal(t, ExitBadInput, st)
	assert.Contains(t, errOut, "broken.jsonl: line 1:")
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		writeFile(t, filepath.Join(to, rel), string(data))
		return nil
	})
	require.NoError(t, err)
}
