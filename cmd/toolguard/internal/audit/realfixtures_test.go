package audit

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tally is what a reader made of one episode, in the terms an independent
// count of the file can give: the calls, their names, which failed (by
// call id), how many have a recorded result, and how many model responses
// and user turns hold calls.
type tally struct {
	name   string
	calls  int
	names  map[string]int
	failed []string // "id tool", sorted
	paired int      // calls with a recorded result that is not empty
	noID   int      // calls without a call id
	rounds int      // the last call's round
	turns  int      // the last call's user turn
}

func tallyOf(ep Episode) tally {
	t := tally{name: ep.Name, calls: len(ep.Calls), names: map[string]int{}}
	for _, c := range ep.Calls {
		t.names[c.Tool]++
		if c.Failed {
			t.failed = append(t.failed, c.ID+" "+c.Tool)
		}
		if c.Result != "" {
			t.paired++
		}
		if c.ID == "" {
			t.noID++
		}
		t.rounds = max(t.rounds, c.Round)
		t.turns = max(t.turns, c.Turn)
	}
	sort.Strings(t.failed)
	return t
}

// TestRealFixtures checks the readers against real files, copied from
// public repositories (testdata/sessions/README.md names each one's
// origin and license), with counts made independently of the readers: the
// jq command above each case gives them from the file itself.
func TestRealFixtures(t *testing.T) {
	tests := []struct {
		file   string
		format Format
		want   []tally
	}{
		// Codex CLI 0.125 (codemie-ai/codemie-code): three hosted web
		// searches (web_search_call, no call id, no output item) and three
		// apply_patch calls whose patch_apply_end says success true.
		//   calls and names: jq -r 'select(.type=="response_item").payload
		//     | select(.type|test("^(function|custom_tool|local_shell|web_search)_call$"))
		//     | .name // "web_search"' F | sort | uniq -c
		//   paired: every function_call / custom_tool_call has an output
		//     item with its call_id (102); the 3 searches have none
		//   failed: the outputs whose "Process exited with code N" has N != 0
		//     (4 write_stdin); no patch_apply_end says success false
		//   rounds: the calls between two token_count events are one response
		//     (64); a search, the reasoning around it and the function calls
		//     after it, up to the next token_count, are one response
		//   ids: each web_search_call follows the event_msg web_search_end
		//     that names its call_id (ws_…), so no call is without an id
		//   turns: 2 event_msg user_message, each followed by calls
		{"codex/2026/05/11/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", FormatCodex, []tally{{
			name: "019e1625-789d-76c0-80ab-3724b5ddb799", calls: 105,
			names: map[string]int{"exec_command": 43, "write_stdin": 54, "web_search": 3, "update_plan": 2, "apply_patch": 3},
			failed: []string{"call_6YhDEiPvTJjMNdn6h89qlZOC write_stdin", "call_Bl9T10SnkFx3d7cIuJXmzy4Y write_stdin",
				"call_PAoFGDC6cPakVp8JImcOm2uB write_stdin", "call_niqqK8Zis60Tze83ulvh2F6Q write_stdin"},
			paired: 102, rounds: 64, turns: 2,
		}}},
		// Claude Code 1.0.108 (d-kimuson/claude-code-viewer): two Task
		// subagents written inline (isSidechain true, no agentId), each chain
		// from a line whose parentUuid is null; the third Task call failed.
		// Chains: each line joins the chain of its parentUuid (a walk of the
		// file in Python); per chain the tool_use blocks, their names, the
		// distinct message.id of the lines holding them (rounds), the
		// tool_result blocks with is_error true (failed) and with non-empty
		// content (paired):
		//   jq -c 'select(.type=="assistant") | [.isSidechain, .message.id,
		//     (.message.content[]|select(.type=="tool_use")|.id+" "+.name)]' F
		// One user prompt (the /orchestrator command) in the main chain.
		{"claude-code/-path-to-Demo/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", FormatClaudeCode, []tally{{
			name: "5c0375b4-57a5-4f26-b12d-d022ee4e51b7", calls: 13,
			names:  map[string]int{"TodoWrite": 5, "Glob": 2, "Task": 3, "Edit": 1, "Read": 1, "MultiEdit": 1},
			failed: []string{"toolu_018t5jce2ZNoGr2ADsHGQife Task", "toolu_019ctBEHhLKehUi4xPDkYwvc Edit"},
			paired: 13, rounds: 9, turns: 1,
		}, {
			name: "5c0375b4-57a5-4f26-b12d-d022ee4e51b7/sidechain-1", calls: 2, names: map[string]int{"Glob": 1, "Read": 1},
			paired: 2, rounds: 2, turns: 1,
		}, {
			name: "5c0375b4-57a5-4f26-b12d-d022ee4e51b7/sidechain-2", calls: 6, names: map[string]int{"Bash": 5, "Read": 1},
			failed: []string{"toolu_01KDiLyJT1VsszVhG4d3p6jV Bash"},
			paired: 6, rounds: 6, turns: 1,
		}}},
		// Harbor's own golden trajectories (ATIF-v1.5), written by Harbor's
		// terminus-2 and OpenHands agents in its integration tests.
		//   jq -c '.steps[] | {s:.source, calls:[.tool_calls[]?.function_name],
		//     res:[.observation.results[]?|.source_call_id // "-"]}' F
		// An agent step with tool_calls is one round; its results pair with
		// its calls (by source_call_id, else in order); a user step that
		// calls follow is a turn. No result says is_error.
		{"harbor/golden/terminus_2/hello-world-invalid-json.trajectory.json", FormatATIF, []tally{{
			// Step 2 (the parse error fed back, no tool_calls) is no call.
			name: "NORMALIZED_SESSION_ID", calls: 3, names: map[string]int{"bash_command": 1, "mark_task_complete": 2},
			paired: 3, rounds: 3, turns: 1,
		}}},
		{"harbor/golden/terminus_2/hello-world-context-summarization.trajectory.json", FormatATIF, []tally{{
			// Steps 2-4 and 7-10 call; the user step 6 after the summary
			// (system step 5) is a second turn.
			name: "NORMALIZED_SESSION_ID", calls: 7, names: map[string]int{"bash_command": 5, "mark_task_complete": 2},
			paired: 7, rounds: 7, turns: 2,
		}}},
		{"harbor/golden/openhands/hello-world.trajectory.json", FormatATIF, []tally{{
			// finish (step 6) has no observation.
			name: "NORMALIZED_SESSION_ID", calls: 2, names: map[string]int{"str_replace_editor": 1, "finish": 1},
			paired: 1, rounds: 2, turns: 1,
		}}},
		// GitHub Copilot CLI 1.0.55 (qiaolei81/copilot-session-viewer), the
		// system.message record cut: the main agent views a file, then in
		// one message calls report_intent and task; the task's explore
		// subagent (events with agentId, data.parentToolCallId naming the
		// task call) views two files in one message. Every call has its
		// tool.execution_complete, success true.
		//   jq -r 'select(.type=="assistant.message")
		//     | (.data.parentToolCallId // "main") as $a
		//     | .data.toolRequests[] | $a+" "+.name' F | sort | uniq -c
		// The subagent is an episode of its own, as Claude Code's are.
		{"copilot/session-state/030f200c-c26f-4ef0-9099-6d1156c83631/events.jsonl", FormatCopilot, []tally{{
			name: "030f200c-c26f-4ef0-9099-6d1156c83631", calls: 3, names: map[string]int{"view": 1, "report_intent": 1, "task": 1},
			paired: 3, rounds: 2, turns: 1,
		}, {
			name: "030f200c-c26f-4ef0-9099-6d1156c83631/task-toolu_vrtx_01TxUTxpA98CaQcbRogpf822", calls: 2, names: map[string]int{"view": 2},
			paired: 2, rounds: 1, turns: 1,
		}}},
		// The real fixtures the readers were first built on, counted the
		// same way. Codex 0.128 (codemie-ai/codemie-code), a rollout without
		// token_count: a round is the calls written one after the other.
		//   jq -r 'select(.type=="response_item") | .payload.type' F | awk
		//     '{ if ($1=="function_call"||$1=="custom_tool_call") { if (!p) r++; p=1 } else p=0 } END {print r}'
		// 38 outputs, one with "Process exited with code 1"; the first of the
		// three event_msg user_message has no call after it.
		{"codex/2026/05/11/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl", FormatCodex, []tally{{
			name: "019e1695-0522-7c83-8b39-0dd379793f80", calls: 38, names: map[string]int{"exec_command": 35, "js": 3},
			failed: []string{"call_3f7AXDMZ9PHz7zedrTO4twut exec_command"},
			paired: 38, rounds: 17, turns: 2,
		}}},
		// Claude Code 2.1.39 (marot/spotter, trimmed): one response over six
		// lines (three Bash), a second with two; one tool_result is empty.
		//   jq -c 'select(.type=="assistant") | [.message.id,
		//     [.message.content[]|select(.type=="tool_use")|.name]]' F
		//   jq -c 'select(.type=="user") | .message.content[]?
		//     | select(.type=="tool_result") | [.tool_use_id, (.content|tostring|length)]' F
		{"claude-code/-home-USER-projects-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl", FormatClaudeCode, []tally{{
			name: "258c7280-ae70-4798-800f-63464d01a85d", calls: 5, names: map[string]int{"Bash": 5},
			paired: 4, rounds: 2, turns: 1,
		}}},
		{"claude-code/-home-USER-projects-spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl", FormatClaudeCode, []tally{{
			name: "258c7280-ae70-4798-800f-63464d01a85d/agent-a881341", calls: 2, names: map[string]int{"WebFetch": 2},
			paired: 2, rounds: 2, turns: 1,
		}}},
		// Claude Code 2.0.64 (codemie-ai/codemie-code): one response with
		// three Writes, then three user requests; the Bash result is empty.
		{"claude-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", FormatClaudeCode, []tally{{
			name: "4c2ddfdc-b619-4525-8d03-1950fb1b0257", calls: 6, names: map[string]int{"Write": 3, "Read": 1, "Edit": 1, "Bash": 1},
			paired: 5, rounds: 4, turns: 3,
		}}},
		// claude-code-action's execution file (anthropics/claude-code-action).
		//   jq -c '.[] | select(.type=="assistant") | [.message.id,
		//     [.message.content[]|select(.type=="tool_use")|.name]]' F
		{"headless/claude-execution-output.json", FormatClaudeCode, []tally{{
			name: "sample-session-id", calls: 3, names: map[string]int{"Read": 1, "Edit": 1, "mcp__github__add_pull_request_review_comment": 1},
			paired: 3, rounds: 3, turns: 1,
		}}},
		// OpenHands trajectories (All-Hands-AI/OpenHands): an action with
		// tool_call_metadata and no cause is a call (its model_response.id
		// the round), an observation with that cause its result; a
		// non-zero extras.metadata.exit_code a failure.
		//   jq -c '.[] | select(.tool_call_metadata) | {id, cause,
		//     fn: .tool_call_metadata.function_name, resp: .tool_call_metadata.model_response.id,
		//     len: (.content|length), exit: .extras.metadata.exit_code}' F
		// (the mv and mkdir outputs are empty; finish has no observation)
		{"openhands/wrong_initial_state.json", FormatOpenHands, []tally{{
			name: "wrong_initial_state", calls: 4, names: map[string]int{"str_replace_editor": 2, "execute_bash": 1, "finish": 1},
			paired: 2, rounds: 4, turns: 1,
		}}},
		{"openhands/basic_gui_mode.json", FormatOpenHands, []tally{{
			name: "basic_gui_mode", calls: 4, names: map[string]int{"execute_bash": 2, "str_replace_editor": 2},
			failed: []string{"toolu_01DwihWr4ooPZS1CGTLAWrFP execute_bash"},
			paired: 3, rounds: 4, turns: 1,
		}}},
		// Gemini CLI .json (codemie-ai/codemie-code): four gemini messages
		// with toolCalls (9, 1, 2, 2), all status success; five user
		// messages, the first followed by no call.
		//   jq -c '[.messages[] | .type+":"+((.toolCalls//[])|length|tostring)]' F
		{"gemini/legacy/session-2026-01-16T11-01-file-ops-37b7abef.json", FormatGemini, []tally{{
			name: "37b7abef-713d-4522-85f0-8ff15a4e6d17", calls: 14,
			names:  map[string]int{"write_todos": 3, "delegate_to_agent": 1, "read_file": 6, "search_file_content": 1, "write_file": 3},
			paired: 14, rounds: 4, turns: 4,
		}}},
		// aider's Markdown history (Aider-AI/aider, trimmed to one session):
		// each "<<<<<<< SEARCH" is an edit; the edits of one reply are a
		// round; aider's "> " lines right after the reply are their result
		// ("failed to match" a failure). Three replies were cut off (no "> "
		// line before the next "#### " line): their 6 edits have no result.
		//   awk '/^#### /{ if (n) print NR": "n" edits, no output"; n=0; next }
		//     /^> |^>$/{ if (n) print NR": "n" edits: "$0; n=0; next }
		//     /^<<<<<<< SEARCH/{ n++ }' F
		{"aider/.aider.chat.history.md", FormatAider, []tally{{
			name: ".aider.chat.history 2024-08-06 08:55:14", calls: 18, names: map[string]int{"edit": 18},
			failed: []string{"edit-1-10 edit", "edit-1-11 edit", "edit-1-13 edit", "edit-1-17 edit", "edit-1-5 edit", "edit-1-6 edit"},
			paired: 12, rounds: 14, turns: 9,
		}}},
		// Cline CLI session (cline/cline, a session the CLI wrote, kept as
		// its SDK's test fixture): {version, agent, sessionId, messages}
		// with Anthropic-style tool_use / tool_result blocks, usage in each
		// assistant message's metrics; no result has is_error.
		//   names: jq -r '.messages[] | select(.role=="assistant") | .content[]
		//     | select(.type=="tool_use") | .name' F | sort | uniq -c
		//   paired: jq '[.messages[].content[] | select(.type=="tool_result")] | length' F
		//   rounds and turns: jq -r '[.messages[] | if .role=="user" then (if
		//     any(.content[]; .type=="tool_result") then "r" else "U" end) else (if
		//     any(.content[]; .type=="tool_use") then "c" else "t" end) end] | join("")' F
		//     gives UcrcrtUcrtUcrcrcrcrcrtUcrcrcrtUt: 11 responses with calls,
		//     the last in the 4th of 5 user turns
		{"cline/data/sessions/1784094124598_rruoq/1784094124598_rruoq.messages.json", FormatCline, []tally{{
			name: "1784094124598_rruoq", calls: 11, names: map[string]int{"editor": 4, "read_files": 6, "run_commands": 1},
			paired: 11, rounds: 11, turns: 4,
		}}},
		// Roo Code task history (RooCodeInc/Roo-Code, pull request 8743):
		// classic XML calls, one per assistant message; the first is cut
		// off ("<execute_command><command>git log …" then "[Response
		// interrupted by a tool use result…]", no closing tags) and failed
		// ("Tool \"execute_command\" is not allowed in ask mode."); each
		// result is a "[TOOL for '…'] Result:" block followed by its body in
		// the next text blocks; the last user message is Roo's own "[ERROR]
		// You did not use a tool" reminder, not the user's.
		//   calls, one per assistant message, by its first line-start tag:
		//     jq -r '.[] | select(.role=="assistant") | .content | map(select(.type=="text").text)
		//       | join("\n") | [scan("(?m)^<([a-z_]+)>")[0]] | .[0] // "none"' F | uniq -c
		//     gives 1 execute_command, 7 read_file, 1 none, 1 attempt_completion
		//   results and turns: jq -r '.[] | select(.role=="user") | [.content[] | .text[:40]]' F
		//     gives the <task>, 8 results (the first "The tool execution
		//     failed …"), then the [ERROR] reminder: one user turn
		{"roo/tasks/natural-mini-uncondensed/api_conversation_history.json", FormatCline, []tally{{
			name: "natural-mini-uncondensed", calls: 9,
			names:  map[string]int{"execute_command": 1, "read_file": 7, "attempt_completion": 1},
			failed: []string{"xml-1 execute_command"},
			paired: 8, rounds: 9, turns: 1,
		}}},
		// Roo Code task history, condensed then resumed (same pull
		// request): the first assistant message is the condensed summary
		// (a string, no call), so the update_todo_list result after it
		// answers nothing; the attempt_completion after it gets no result
		// (the task was resumed: "New instructions for task continuation");
		// one read_file gets two results, the first "The tool execution
		// failed"; three results come with the user's new instructions after
		// the <environment_details> block.
		//   calls, the first tool element of each assistant message:
		//     jq -r '.[] | select(.role=="assistant") | .content | if type=="string"
		//       then . else map(select(.type=="text").text) | join("\n") end
		//       | [scan("<(attempt_completion|list_files|read_file|update_todo_list
		//       |use_mcp_tool|write_to_file)>")[0]] | join(",")' F
		//     gives none, attempt_completion, list_files, read_file, list_files,
		//     write_to_file, update_todo_list, 4 use_mcp_tool, update_todo_list,
		//     none, attempt_completion, attempt_completion
		//   results: jq -r '.[] | select(.role=="user") | .content | map(.text[:40])' F
		//     gives the orphan result, then 11 results for the calls after it
		//     (one message holding two for the read_file), none after the
		//     first and the last attempt_completion
		//   turns: jq -r 'to_entries[] | select(.value.role=="user") | .key as $k
		//     | .value.content[] | .text // "" | select(test("^\\s*(<task>|New
		//     instructions for task continuation)")) | $k' F
		//     gives messages 0, 4, 6, 8, 14: five user turns, the last calls in
		//     the fifth (the [ERROR] reminder is not one)
		{"roo/tasks/natural-already-condensed/api_conversation_history.json", FormatCline, []tally{{
			name: "natural-already-condensed", calls: 13,
			names: map[string]int{"attempt_completion": 3, "list_files": 2, "read_file": 1, "write_to_file": 1,
				"update_todo_list": 2, "use_mcp_tool": 4},
			failed: []string{"xml-3 read_file"},
			paired: 11, rounds: 13, turns: 5,
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			format, eps, err := Parse(tt.file, readFixture(t, filepath.Join("sessions", tt.file)))
			require.NoError(t, err)
			require.Equal(t, tt.format, format)
			require.Equal(t, len(tt.want), len(eps), "episodes")
			for i, ep := range eps {
				assert.Equal(t, tt.want[i], tallyOf(ep), "episode %d", i)
			}
		})
	}
}

// TestRooRealResults checks what the reader takes from the real Roo Code
// history beyond the counts: the cut-off call's arguments (its unclosed
// <command>) and a result whose body is in the text blocks after its
// "[TOOL for '…'] Result:" header.
func TestRooRealResults(t *testing.T) {
	_, eps, err := Parse("api_conversation_history.json",
		readFixture(t, filepath.Join("sessions", "roo/tasks/natural-mini-uncondensed/api_conversation_history.json")))
	require.NoError(t, err)
	require.Len(t, eps, 1)
	calls := eps[0].Calls
	require.Len(t, calls, 9)
	assert.JSONEq(t, `{"command":"git log --oneline -10"}`, string(calls[0].Args))
	assert.Equal(t, "The tool execution failed with the following error:\n<error>\nTool \"execute_command\" is not allowed in ask mode.\n</error>", calls[0].Result)
	assert.Contains(t, calls[1].Result, "<files>\n<file><path>webview-ui/src/hooks/useAutosaveDraft.ts</path>")
	assert.NotContains(t, calls[1].Result, "<environment_details>")
}
