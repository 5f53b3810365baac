package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard"
)

const sessions = fixtures + "/sessions"

// TestSessionFormats reads every transcript fixture: its format is told
// from its content, and its calls come out with their rounds, user turns
// and failures as the format defines them.
func TestSessionFormats(t *testing.T) {
	tests := []struct {
		file    string
		format  Format
		project string
		tokens  bool
		want    []shape
	}{
		// Two tool_use blocks of msg_…B6 are written on two lines: one round.
		// The isMeta caveat does not start a turn, the user's words do; the
		// inline sidechain is an episode of its own.
		{"claude-code/-home-dev-shop/7c0e5a52-3f1d-4b8e-9a61-2d4f8e1b9c30.jsonl", FormatClaudeCode, "/home/dev/shop", true, []shape{
			{"7c0e5a52-3f1d-4b8e-9a61-2d4f8e1b9c30", "", []string{"Bash 1 1 !", "Read 2 1", "Bash 3 1 !", "Bash 4 1 !", "Bash 5 1 !", "Grep 6 2", "Read 6 2", "Edit 7 2", "Bash 8 2"}},
			{"7c0e5a52-3f1d-4b8e-9a61-2d4f8e1b9c30/agent-5d1e2f3a", "", []string{"Grep 1 1"}},
		}},
		{"claude-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", FormatClaudeCode, "/tmp/private", true, []shape{
			// One response asks for three Writes (one line each); then two user
			// requests with a call or two each.
			{"4c2ddfdc-b619-4525-8d03-1950fb1b0257", "", []string{"Write 1 1", "Write 1 1", "Write 1 1", "Read 2 2", "Edit 3 2", "Bash 4 3"}},
		}},
		{"claude-code/-home-USER-projects-spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl", FormatClaudeCode, "/home/USER/projects/spotter-worktrees/spotter-gqc", true, []shape{
			{"258c7280-ae70-4798-800f-63464d01a85d/agent-a881341", "", []string{"WebFetch 1 1", "WebFetch 2 1"}},
		}},
		// The exit code inside each output decides the failure; the context
		// Codex injects as a user message does not start a turn.
		{"codex/2025/10/29/rollout-2025-10-29T10-00-00-0199e3b4-5a6b-7c8d-9e0f-a1b2c3d4e5f6.jsonl", FormatCodex, "/home/dev/shop", true, []shape{
			{"0199e3b4-5a6b-7c8d-9e0f-a1b2c3d4e5f6", "", []string{"shell 1 1 !", "shell 2 1 !", "shell 3 1 !", "shell 4 1 !", "apply_patch 5 1", "shell 6 1"}},
		}},
		// The rewind drops the second user message and the call after it.
		{"gemini/9a1f0c2e/chats/session-2026-04-07T08-00-4f9c2d1e.jsonl", FormatGemini, "9a1f0c2e7d4b", true, []shape{
			{"4f9c2d1e-8b7a-4c3d-9e2f-1a0b9c8d7e6f", "", []string{"read_file 1 1 !", "read_file 2 1 !", "read_file 3 1 !", "read_file 4 2"}},
		}},
		{"api/responses_request.json", FormatResponses, "", false, []shape{
			{"responses_request", "", []string{"search_kb 1 1", "search_kb 2 1", "search_kb 3 1", "get_order 4 2"}},
		}},
		{"api/responses.jsonl", FormatResponses, "", true, []shape{
			{"responses", "", []string{"get_weather 1 1", "get_weather 2 1", "get_weather 3 1", "web_search 4 1"}},
		}},
		{"api/chat_completions.jsonl", FormatChatCompletion, "", true, []shape{
			{"chat_completions", "", []string{"get_weather 1 1", "get_weather 2 1", "get_weather 3 1"}},
		}},
		// Server tool results sit in the assistant message; an error object
		// is a failure.
		{"api/anthropic_server_tools.json", FormatAnthropic, "", false, []shape{
			{"line 1", "", []string{"web_search 1 1 !", "web_search 2 1 !", "web_search 3 1 !", "fetch_page 4 1"}},
		}},
		{"api/openai_functions.json", FormatOpenAI, "", false, []shape{
			{"line 1", "", []string{"lookup_order 1 1 !", "lookup_order 2 1 !", "lookup_order 3 1 !"}},
		}},
		// Each step-start begins a model response.
		{"api/vercel_ui_messages.json", FormatVercel, "", false, []shape{
			{"line 1", "", []string{"getWeather 1 1 !", "getWeather 2 1 !", "getWeather 3 1 !"}},
		}},
		{"otlp/genai_spans.jsonl", FormatOTLP, "", true, []shape{
			{"conv_7d1e", "", []string{"fetch_invoice 1 1 !", "fetch_invoice 2 1 !", "fetch_invoice 3 1 !"}},
		}},
		// claude-code-action's execution file: the headless stream-json
		// messages collected in one JSON array.
		{"headless/claude-execution-output.json", FormatClaudeCode, "", true, []shape{
			{"sample-session-id", "", []string{"Read 1 1", "Edit 2 1", "mcp__github__add_pull_request_review_comment 3 1"}},
		}},
		// claude -p --output-format stream-json: one message a line; the
		// subagent's messages name its Task call (parent_tool_use_id).
		{"headless/claude-stream.jsonl", FormatClaudeCode, "/home/runner/work/shop/shop", true, []shape{
			{"0b7e2c55-1f3a-4c8e-9d20-6a5b4c3d2e1f", "", []string{"Bash 1 1 !", "Task 2 1", "Edit 3 1", "Bash 4 1"}},
			{"0b7e2c55-1f3a-4c8e-9d20-6a5b4c3d2e1f/task-toolu_01B", "", []string{"Bash 1 1"}},
		}},
		// Harbor's trajectory.json (ATIF): the agent steps' tool_calls are
		// rounds, their observation the results; metrics the usage.
		{"harbor/fix-git__Xk3pQ7m/agent/trajectory.json", FormatATIF, "", true, []shape{
			{"7b1c0e2f-9d3a-4c5b-8e6f-1a2b3c4d5e6f", "", []string{"bash_command 1 1", "bash_command 2 1", "bash_command 3 1",
				"bash_command 4 1", "bash_command 5 1", "bash_command 6 1", "mark_task_complete 7 1"}},
		}},
		// OpenHands trajectories (arrays of events): the function the model
		// called names the call; an observation completes its cause; a
		// non-zero exit code is a failure.
		{"openhands/wrong_initial_state.json", FormatOpenHands, "", true, []shape{
			{"wrong_initial_state", "", []string{"str_replace_editor 1 1", "execute_bash 2 1", "str_replace_editor 3 1", "finish 4 1"}},
		}},
		{"openhands/basic_gui_mode.json", FormatOpenHands, "", true, []shape{
			{"basic_gui_mode", "", []string{"execute_bash 1 1", "str_replace_editor 2 1", "str_replace_editor 3 1", "execute_bash 4 1 !"}},
		}},
		// Cline (native tool calls) and Roo Code (classic XML tool calls):
		// results are "[tool for 'x'] Result:" text blocks, in order; a
		// <feedback> message starts a turn.
		{"cline/tasks/1777073160794/api_conversation_history.json", FormatCline, "", true, []shape{
			{"1777073160794", "", []string{"read_file 1 1", "execute_command 2 1", "execute_command 3 1", "execute_command 4 1",
				"execute_command 5 1", "replace_in_file 6 1"}},
		}},
		{"roo/tasks/0f3e2d1c-5b4a-4c3d-9e8f-7a6b5c4d3e2f/api_conversation_history.json", FormatCline, "", false, []shape{
			{"0f3e2d1c-5b4a-4c3d-9e8f-7a6b5c4d3e2f", "", []string{"read_file 1 1", "apply_diff 2 1 !", "apply_diff 3 1 !",
				"apply_diff 4 1 !", "write_to_file 5 2"}},
		}},
		// aider's Markdown history: each SEARCH/REPLACE block is an edit;
		// "failed to match" after the reply is a failure; a "####" line a
		// user turn; "> Tokens: … sent, … received" the usage.
		{"aider/.aider.chat.history.md", FormatAider, "", true, []shape{
			{".aider.chat.history 2024-08-06 08:55:14", "", []string{"edit 1 1", "edit 2 2", "edit 2 2", "edit 2 2",
				"edit 3 3 !", "edit 4 3 !", "edit 5 3", "edit 6 4", "edit 6 4", "edit 7 5 !", "edit 8 5 !", "edit 9 5",
				"edit 10 6 !", "edit 11 7", "edit 11 7", "edit 12 8", "edit 13 9 !", "edit 14 9"}},
		}},
		// Goose's JSONL session: a metadata line, then messages whose
		// toolRequest / toolResponse items are the calls and results.
		{"goose/sessions/20251009_1.jsonl", FormatGoose, "/home/dev/notes", false, []shape{
			{"20251009_1", "", []string{"developer__shell 1 1", "developer__shell 2 1 !", "developer__shell 3 1 !",
				"developer__shell 4 1 !", "developer__text_editor 5 1"}},
		}},
		// opencode export: tool parts, a step-start per model response.
		{"opencode/ses_6b2f0c1d8e7affQ2kLm9Np3Rs.json", FormatOpencode, "/home/dev/api", true, []shape{
			{"ses_6b2f0c1d8e7affQ2kLm9Np3Rs", "", []string{"grep 1 1", "read 2 1", "read 3 1", "read 4 1", "bash 5 1 !"}},
		}},
		// Copilot CLI's events.jsonl: toolRequests are rounds,
		// tool.execution_complete with success false a failure.
		{"copilot/session-state/5e1d2c3b-4a5f-4e6d-8c7b-9a0f1e2d3c4b/events.jsonl", FormatCopilot, "/home/dev/api", false, []shape{
			{"5e1d2c3b-4a5f-4e6d-8c7b-9a0f1e2d3c4b", "", []string{"view 1 1", "bash 2 1 !", "bash 3 1 !", "bash 4 1 !", "bash 5 1 !"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			format, eps, err := Parse(tt.file, readFixture(t, filepath.Join("sessions", tt.file)))
			if err != nil {
				t.Fatal(err)
			}
			if format != tt.format || len(eps) != len(tt.want) {
				t.Fatalf("format %s with %d episodes, want %s with %d", format, len(eps), tt.format, len(tt.want))
			}
			for i, ep := range eps {
				if got := shapeOf(ep); !equalShape(got, tt.want[i]) {
					t.Errorf("episode %d:\n got %q\nwant %q", i, got, tt.want[i])
				}
				if ep.Project != tt.project || ep.Tokens != tt.tokens {
					t.Errorf("episode %d: project %q tokens %v, want %q %v", i, ep.Project, ep.Tokens, tt.project, tt.tokens)
				}
			}
		})
	}
}

func equalShape(a, b shape) bool {
	return a.name == b.name && a.label == b.label && strings.Join(a.calls, "|") == strings.Join(b.calls, "|")
}

// TestCosts checks the cost of results: the tokens a round's results
// added to the next prompt, shared by characters, where usage is recorded.
func TestCosts(t *testing.T) {
	_, eps, err := Parse("c", readFixture(t, "sessions/claude-code/-home-dev-shop/7c0e5a52-3f1d-4b8e-9a61-2d4f8e1b9c30.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The first response read 4000+120+8 tokens and wrote 60; the second
	// read 4300+120+8: the failed test's output added 240.
	if c := eps[0].Calls[0].Cost; c != 240 {
		t.Errorf("cost of the first result: %d tokens, want 240", c)
	}
	// Without usage, a cost is the result's characters.
	_, eps, err = Parse("o", readFixture(t, "sessions/api/openai_functions.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c, want := eps[0].Calls[0].Cost, len("Error: order service timed out"); c != want {
		t.Errorf("cost %d, want %d characters", c, want)
	}
}

// TestNoCallsListed: a file in which no call is found is read and listed
// with what was found instead, not an error; one with records of a kind
// the reader does not know gets a warning too, as its calls may have a
// shape the reader cannot read. --allow-no-calls is still accepted.
func TestNoCallsListed(t *testing.T) {
	noCallsFile := sessions + "/claude-code/-tmp-private/agent-50243ee8.jsonl"
	for _, args := range [][]string{{noCallsFile}, {"--allow-no-calls", noCallsFile}} {
		st, out, errOut := main3(t, "", args...)
		if st != ExitOK || errOut != "" || !strings.Contains(out, "files                        1 (0 not read, 1 without a tool call)") ||
			!strings.Contains(out, "agent-50243ee8.jsonl  found: 1 assistant text blocks, 1 user messages") {
			t.Errorf("%v: status %d\n%s\n%s", args, st, out, errOut)
		}
	}
	unknown := `{"timestamp":"t","type":"session_meta","payload":{"id":"s1","cwd":"/w"}}
{"timestamp":"t","type":"response_item","payload":{"type":"computer_call","id":"cu_1"}}
`
	st, _, errOut := main3(t, unknown, "--fail-on", "hint", "-")
	if st != ExitOK || !strings.Contains(errOut, "<stdin>: no tool call this command reads (found: 1 unrecognized computer_call items)") {
		t.Errorf("unknown kind: status %d, stderr %q", st, errOut)
	}
	// Conversations whose call blocks the reader did not know used to be
	// reported clean: they now read as calls.
	for _, f := range []string{"api/anthropic_server_tools.json", "api/openai_functions.json", "api/vercel_ui_messages.json"} {
		st, out, errOut := main3(t, "", "--fail-on", "hint", sessions+"/"+f)
		if st != ExitFailOn {
			t.Errorf("%s: status %d\n%s\n%s", f, st, out, errOut)
		}
	}
}

// TestFolder walks the fixtures' folders: sessions are grouped by project,
// and the file without calls is listed, not an error.
func TestFolder(t *testing.T) {
	st, out, errOut := main3(t, "", "--format", "json", sessions+"/claude-code")
	if st != ExitOK || errOut != "" || !strings.Contains(out, `"no_calls": "1 assistant text blocks, 1 user messages"`) {
		t.Fatalf("status %d\nstderr:\n%s", st, errOut)
	}
	for _, want := range []string{`"project": "/home/dev/shop"`, `"project": "/tmp/private"`, `"refused_by_tool"`} {
		if !strings.Contains(out, want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	// A file that is not a transcript, found in a folder, is passed over.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "notes.jsonl"), `{"todo":"buy milk"}`+"\n")
	writeFile(t, filepath.Join(dir, "p", "s.jsonl"), string(readFixture(t, "episodes.jsonl")))
	st, out, errOut = main3(t, "", dir)
	if st != ExitOK || errOut != "" || !strings.Contains(out, "1 skipped: not transcripts") {
		t.Errorf("status %d\n%s\n%s", st, out, errOut)
	}
}

// TestEpisodeCap: past --max-episode-size a record or a session is an
// error, and the other files are still audited.
func TestEpisodeCap(t *testing.T) {
	dir := t.TempDir()
	big := `{"episode":"big","calls":[{"tool":"t","result":"` + strings.Repeat("x", 2<<20) + `"}]}` + "\n"
	writeFile(t, filepath.Join(dir, "big.jsonl"), big)
	st, out, errOut := main3(t, "", "--max-episode-size", "1", filepath.Join(dir, "big.jsonl"), fixtures+"/episodes.jsonl")
	if st != ExitBadInput || !strings.Contains(errOut, "big.jsonl: line 1: a record of more than 1.0 MiB (the --max-episode-size cap)") ||
		!strings.Contains(out, "click-loop") {
		t.Errorf("status %d\n%s\n%s", st, out, errOut)
	}
	// Past the first line, records are read in chunks: a record longer
	// than the cap is still an error naming its line.
	second := `{"episode":"small","calls":[{"tool":"t"}]}` + "\n" + big
	writeFile(t, filepath.Join(dir, "second.jsonl"), second)
	st, _, errOut = main3(t, "", "--max-episode-size", "1", filepath.Join(dir, "second.jsonl"))
	if st != ExitBadInput || !strings.Contains(errOut, "second.jsonl: line 2: a record of more than 1.0 MiB") {
		t.Errorf("status %d\n%s", st, errOut)
	}
	doc := "{\n" + `"sessionId":"s1","projectHash":"p1","messages":[{"id":"m1","type":"user","content":"` + strings.Repeat("x", 2<<20) + `"}]}`
	writeFile(t, filepath.Join(dir, "session-big.json"), doc)
	st, _, errOut = main3(t, "", "--max-episode-size", "1", filepath.Join(dir, "session-big.json"))
	if st != ExitBadInput || !strings.Contains(errOut, "session-big.json: more than 1.0 MiB in one session (the --max-episode-size cap)") {
		t.Errorf("status %d\n%s", st, errOut)
	}
}

func main3(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	r := runMain(t, stdin, args...)
	return r.status, r.stdout, r.stderr
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPipelineOrder: whatever the number of workers, the report lists the
// files and episodes in input order and is the same.
func TestPipelineOrder(t *testing.T) {
	files := []input{}
	for _, f := range []string{"episodes.jsonl", "openai.jsonl", "anthropic.json"} {
		files = append(files, input{path: filepath.Join(fixtures, f), display: f})
	}
	var want string
	for _, workers := range []int{1, 2, 7} {
		r := &Report{Policy: "default"}
		env := Env{Stderr: &bytes.Buffer{}, Now: time.Now}
		if !run(files, runOptions{policy: toolguard.Policy{}, keep: true, maxEpisode: DefaultMaxEpisode, workers: workers}, env, r) {
			t.Fatal("run failed")
		}
		var b bytes.Buffer
		if err := WriteJSON(&b, r); err != nil {
			t.Fatal(err)
		}
		if want == "" {
			want = b.String()
		} else if b.String() != want {
			t.Errorf("%d workers: a different report", workers)
		}
	}
}
