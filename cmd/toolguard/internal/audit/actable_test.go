package audit

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
)

// TestReportActable: per firing, the text report names the session by
// what the user asked, its file, the call's id and line, previews of the
// repeated arguments and of what came back, and the setting that governs
// the rule; and says whether the session looks like a loop.
func TestReportActable(t *testing.T) {
	st, out, errOut := main3(t, "", sessions+"/claude-code/-home-dev-shop")
	require.Equal(t, ExitOK, st, errOut)
	for _, want := range []string{
		"Firings, by session (1)",
		"  7c0e5a52-3f1d-4b8e-9a61-2d4f8e1b9c30: looks like a loop (1 refused; when the agent ran them, 1 got nothing new, 0 something new)",
		`    asked   "the cart test fails, please fix it"`,
		"    file    " + sessions + "/claude-code/-home-dev-shop/7c0e5a52-3f1d-4b8e-9a61-2d4f8e1b9c30.jsonl",
		"    call 5 Bash (id toolu_01E, line 13): duplicate, hint",
		`      args     {"command":"go test ./...","description":"Run the tests"}`,
		"      got      Exit code 1 --- FAIL: TestCartTotal (0.00s) cart_test.go:14: Total() = 9, want 10 FAIL FAIL example.com/shop 0.004s FAIL (nothing new)",
		`      setting  MaxRepeats (default); per tool Tools["Bash"].MaxRepeats, or .Exempt for a polling tool`,
	} {
		assert.Contains(t, out, want+"\n")
	}
}

// TestReportRedacts: the title and the previews of a report never show a
// secret the transcript holds, in any format.
func TestReportRedacts(t *testing.T) {
	secrets := []string{"sk-proj-9fQ2xLm7Tz4Kp1Vb8Nc3", "hunter2hunter2", "Zx81Qw72Er63Ty54Ui45Op36As27", "s3cr3tPa55"}
	line := func(v map[string]any) string { b, _ := json.Marshal(v); return string(b) + "\n" }
	user := func(uuid string, content any) string {
		return line(map[string]any{"type": "user", "sessionId": "s1", "uuid": uuid, "message": map[string]any{"role": "user", "content": content}})
	}
	data := user("u0", "deploy with key "+secrets[0]+" please")
	for i := range 4 {
		id := "t" + itoa(i)
		data += line(map[string]any{"type": "assistant", "sessionId": "s1", "uuid": "a" + itoa(i), "message": map[string]any{"id": "m" + itoa(i),
			"content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{
				"command": "curl -H 'Authorization: Bearer " + secrets[2] + "' https://admin:" + secrets[3] + "@example.com/deploy"}}}}})
		data += user("r"+itoa(i), []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "denied: password=" + secrets[1]}})
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p", "s1.jsonl"), data)
	for _, format := range []string{"text", "json", "html"} {
		st, out, errOut := main3(t, "", "--format", format, dir)
		require.Equal(t, ExitOK, st, errOut)
		assert.Contains(t, out, "[REDACTED]", format)
		for _, s := range secrets {
			assert.NotContains(t, out, s, format)
		}
	}
	assert.Equal(t, "export [REDACTED]", preview("export "+secrets[2], 40))
	assert.Equal(t, "src/internal/audit/pipeline_test.go", preview("src/internal/audit/pipeline_test.go", 40), "a path is not a secret")
}

// TestLooks: a firing whose refused call got nothing new when the agent
// ran it looks like a loop; one that got a new result (a poll whose
// output changes, refused by the result-blind turn-tracker preset) looks
// like work; one without a recorded result is unclear.
func TestLooks(t *testing.T) {
	ep := func(results ...string) *Episode {
		e := &Episode{Name: "e"}
		for i, r := range results {
			e.Calls = append(e.Calls, Call{Round: i + 1, Turn: 1, Tool: "status", Args: json.RawMessage(`{"job":7}`), Result: r})
		}
		return e
	}
	tracker, err := toolguard.Preset("turn-tracker")
	require.NoError(t, err)
	for _, tt := range []struct {
		name    string
		policy  toolguard.Policy
		results []string
		want    Looks
	}{
		{"same result", toolguard.Policy{}, []string{"running", "running", "running", "running"}, LooksLoop},
		{"new results", tracker, []string{"10%", "40%", "70%", "100%"}, LooksWork},
		{"no results", toolguard.Policy{}, []string{"", "", "", ""}, LooksUnclear},
		{"nothing fired", toolguard.Policy{}, []string{"a"}, LooksClean},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := replayEpisode(tt.policy, ep(tt.results...), false)
			assert.Equal(t, tt.want, res.Looks())
		})
	}
}

// TestCompare: --compare replays under several policies and sets them
// side by side, in text and JSON; an unknown name is a usage error.
func TestCompare(t *testing.T) {
	st, out, errOut := main3(t, "", "--episodes", "none", "--compare", "default,quota-rule,turn-tracker", sessions+"/claude-code")
	require.Equal(t, ExitOK, st, errOut)
	assert.Contains(t, out, `
Policies side by side
  POLICY               WITH A FIRING  WITH AN ABORT  REFUSED CALLS  LOOKS LIKE A LOOP  LOOKS LIKE WORK
  default              2              1              3              2                  0
  preset quota-rule    2              1              3              2                  0
  preset turn-tracker  5              4              11             3                  2
`)
	st, out, _ = main3(t, "", "--format", "json", "--compare", "turn-budget", sessions+"/claude-code/-home-dev-shop")
	require.Equal(t, ExitOK, st)
	assert.Contains(t, out, `"policy": "preset turn-budget",
          "firings": 0,`)
	st, _, errOut = main3(t, "", "--compare", "default,nope", sessions+"/claude-code")
	assert.Equal(t, ExitBadInput, st)
	assert.Contains(t, errOut, `--compare: toolguard: unknown preset "nope"`)
}

// TestLooksFalseAlarm: the false alarm the issue found on a real session
// (an Edit that failed twice, a Read, then the same Edit, which succeeded).
// Under the default policy nothing fires any more; the result-blind
// turn-tracker preset refuses the second Edit, which had got the same
// failure again: nothing new, so that refusal is counted as a loop caught,
// while the fourth Edit, which succeeded, runs.
func TestLooksFalseAlarm(t *testing.T) {
	edit := json.RawMessage(`{"file_path":"/w/a.go","old_string":"x := 1","new_string":"x := 2"}`)
	ep := &Episode{Name: "e", Calls: []Call{
		{Round: 1, Turn: 1, ID: "1", Tool: "Edit", Args: edit, Result: "String to replace not found in file.", Failed: true},
		{Round: 2, Turn: 1, ID: "2", Tool: "Edit", Args: edit, Result: "String to replace not found in file.", Failed: true},
		{Round: 3, Turn: 1, ID: "3", Tool: "Read", Args: json.RawMessage(`{"file_path":"/w/a.go"}`), Result: "x  := 1"},
		{Round: 4, Turn: 1, ID: "4", Tool: "Edit", Args: edit, Result: "The file /w/a.go has been updated."},
	}}
	plain := replayEpisode(toolguard.Policy{}, ep, true)
	assert.Equal(t, LooksClean, plain.Looks())

	tracker, err := toolguard.Preset("turn-tracker")
	require.NoError(t, err)
	res := replayEpisode(tracker, ep, true)
	news := map[int]Newness{}
	for _, d := range res.Decisions {
		if d.Fired() {
			news[d.Index] = d.New
		}
	}
	assert.Equal(t, map[int]Newness{2: NothingNew}, news)
	assert.Equal(t, LooksLoop, res.Looks())
}
