package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
)

// parseFixture parses one fixture under testdata/sessions.
func parseFixture(t *testing.T, name string) (Format, []Episode) {
	t.Helper()
	f, eps, err := Parse(name, readFixture(t, "sessions/"+name))
	require.NoError(t, err)
	return f, eps
}

// TestCodexHostedCalls: Codex's hosted web searches (web_search_call, with
// the actions search, open_page and find_in_page, and no output item) are
// calls named web_search whose arguments are the action; they used to be
// dropped, so a rollout of searches read clean.
func TestCodexHostedCalls(t *testing.T) {
	_, eps := parseFixture(t, "codex/2026/03/02/rollout-2026-03-02T09-00-00-019cab12-7e4f-7c21-9d3a-5b6c7d8e9f01.jsonl")
	require.Len(t, eps, 1)
	var actions []string
	for _, c := range eps[0].Calls {
		if c.Tool != "web_search" {
			continue
		}
		var a struct{ Type, Query, URL, Pattern string }
		require.NoError(t, json.Unmarshal(c.Args, &a))
		actions = append(actions, a.Type)
	}
	assert.Equal(t, []string{"search", "open_page", "find_in_page", "search", "search", "search"}, actions)
	// Each search is a response of its own (a token_count ends each).
	assert.Equal(t, []string{"web_search 1 1", "web_search 2 1", "web_search 3 1", "web_search 4 1", "web_search 5 1", "web_search 6 1",
		"exec_command 7 1", "apply_patch 8 1 !", "apply_patch 9 1 !", "apply_patch 10 1 !"}, shapeOf(eps[0]).calls)

	// The seed rule's cap on external tools now sees them: the searches
	// repeated without anything new fire.
	ds := Replay(toolguard.Policy{}, &eps[0])
	require.Len(t, ds, 10)
	assert.Equal(t, toolguard.Hint, ds[4].Verdict)
	assert.Equal(t, toolguard.Abort, ds[5].Verdict)
}

// TestCodexFailedPatch: an apply_patch whose output is "apply_patch
// verification failed: …" (no exit code) failed, and so did one whose
// patch_apply_end event says success false, whatever its output says.
func TestCodexFailedPatch(t *testing.T) {
	assert.True(t, codexFailed("apply_patch verification failed: Failed to find expected lines in a.go"))
	assert.False(t, codexFailed("Success. Updated the following files:\nM a.go"))

	rollout := `{"timestamp":"t","type":"session_meta","payload":{"id":"s1","cwd":"/w"}}
{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"*** Begin Patch"}}
{"timestamp":"t","type":"event_msg","payload":{"type":"patch_apply_end","call_id":"c1","success":false}}
{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c1","output":"Exit code: 0"}}
{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"}}
{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c2","output":"Exit code: 0"}}
{"timestamp":"t","type":"event_msg","payload":{"type":"patch_apply_end","call_id":"c2","success":false}}
{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call","call_id":"c3","name":"apply_patch","input":"*** Begin Patch"}}
{"timestamp":"t","type":"event_msg","payload":{"type":"patch_apply_end","call_id":"c3","success":true}}
{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c3","output":"Exit code: 0"}}
`
	_, eps, err := Parse("r.jsonl", []byte(rollout))
	require.NoError(t, err)
	require.Len(t, eps, 1)
	var failed []bool
	for _, c := range eps[0].Calls {
		failed = append(failed, c.Failed)
	}
	assert.Equal(t, []bool{true, true, false}, failed)
}

// TestClaudeInlineSidechains: Claude Code 1.0.x wrote its subagents into
// the session file, without an agentId, each chain starting at a user line
// whose parentUuid is null; two subagents running at once interleave. Each
// is an episode of its own, as a 2.x subagent's file is.
func TestClaudeInlineSidechains(t *testing.T) {
	_, eps := parseFixture(t, "claude-code/-home-dev-legacy/5b0f3c1e-2a47-4d8e-9f61-0c2b7a9e4d13.jsonl")
	var got []shape
	for _, ep := range eps {
		got = append(got, shapeOf(ep))
	}
	assert.Equal(t, []shape{
		{"5b0f3c1e-2a47-4d8e-9f61-0c2b7a9e4d13", "", []string{"Task 1 1", "Task 1 1"}},
		{"5b0f3c1e-2a47-4d8e-9f61-0c2b7a9e4d13/sidechain-1", "", []string{"Grep 1 1", "Read 2 1", "Read 3 1", "Read 4 1", "Read 5 1"}},
		{"5b0f3c1e-2a47-4d8e-9f61-0c2b7a9e4d13/sidechain-2", "", []string{"Grep 1 1", "Read 2 1"}},
	}, got)
}

// TestClaudeUsagePerBlock: Claude Code writes one line per content block of
// a response, each with the usage at that point of the stream (output
// tokens 10, 10, 10, 10, 10, then 441 in this real session). The last is
// the response's; the first overstated what the results cost.
func TestClaudeUsagePerBlock(t *testing.T) {
	_, eps := parseFixture(t, "claude-code/-home-USER-projects-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl")
	require.Len(t, eps, 1)
	ep := eps[0]
	require.True(t, ep.Tokens)
	sums := map[int]int{}
	n := map[int]int{}
	for _, c := range ep.Calls {
		sums[c.Round] += c.Cost
		n[c.Round]++
	}
	// Round 1: the next prompt (1+1457+25879) less this prompt
	// (3+8037+17842) and its output (441); round 2 likewise with 196.
	for round, added := range map[int]int{1: 27337 - 25882 - 441, 2: 31180 - 27337 - 196} {
		assert.LessOrEqual(t, sums[round], added, "round %d", round)
		assert.Greater(t, sums[round], added-n[round], "round %d (each call's share is rounded down)", round)
	}
}

// TestClaudeUsageTextAfterCalls: a text block written after the response's
// tool_use lines is the same response, not the next one.
func TestClaudeUsageTextAfterCalls(t *testing.T) {
	line := func(blocks string, out int) string {
		return `{"type":"assistant","sessionId":"s","uuid":"` + strings.Repeat("a", out%7+1) + itoa(out) + `","message":{"id":"m1","content":[` + blocks +
			`],"usage":{"input_tokens":100,"output_tokens":` + itoa(out) + `}}}` + "\n"
	}
	data := line(`{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}`, 5) +
		line(`{"type":"text","text":"listing"}`, 40) +
		`{"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a b c d"}]}}` + "\n" +
		`{"type":"assistant","sessionId":"s","uuid":"u2","message":{"id":"m2","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":200,"output_tokens":3}}}` + "\n"
	_, eps, err := Parse("s.jsonl", []byte(data))
	require.NoError(t, err)
	require.Len(t, eps, 1)
	assert.Equal(t, 200-100-40, eps[0].Calls[0].Cost)
}
