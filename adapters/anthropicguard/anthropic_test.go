package anthropicguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	anthropicguard "github.com/toolguard/toolguard/adapters/anthropicguard"
)

// message decodes an assistant message the way the SDK decodes a response.
func message(t *testing.T, content string) anthropic.Message {
	t.Helper()
	var m anthropic.Message
	require.NoError(t, json.Unmarshal([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m",
		"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1},"content":`+content+`}`), &m))
	return m
}

const weatherCall = `[{"type":"text","text":"Let me check."},
	{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]`

// toolResult is a tool_result block as the SDK puts it on the wire.
type toolResult struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Text string `json:"text"`
}

func wire(t *testing.T, b anthropic.ContentBlockParamUnion) toolResult {
	t.Helper()
	raw, err := json.Marshal(b)
	require.NoError(t, err)
	var r toolResult
	require.NoError(t, json.Unmarshal(raw, &r))
	return r
}

func (r toolResult) text() string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

func TestCalls(t *testing.T) {
	m := message(t, `[{"type":"thinking","thinking":"hm","signature":"s"},
		{"type":"tool_use","id":"toolu_a","name":"search","input":{"query":"go"}},
		{"type":"server_tool_use","id":"srvtoolu_b","name":"web_search","input":{"query":"go"}},
		{"type":"tool_use","id":"toolu_c","name":"list","input":{}},
		{"type":"text","text":"done"}]`)
	calls := anthropicguard.Calls(m)
	require.Len(t, calls, 2, "server tool uses run on the API's side")
	assert.Equal(t, "toolu_a", calls[0].ID)
	assert.Equal(t, "search", calls[0].Tool)
	assert.JSONEq(t, `{"query":"go"}`, string(calls[0].Args))
	assert.Equal(t, "toolu_c", calls[1].ID)
	assert.JSONEq(t, `{}`, string(calls[1].Args))

	assert.Nil(t, anthropicguard.Calls(message(t, `[{"type":"text","text":"hi"}]`)))
}

func TestCheckHintThenAbort(t *testing.T) {
	tr := toolguard.NewTracker(toolguard.Policy{})
	m := message(t, weatherCall)
	for i := 0; i < 2; i++ {
		r := anthropicguard.Check(context.Background(), tr, m)
		blocks := r.Run(context.Background(), func(context.Context, toolguard.Call) (string, error) { return "sunny", nil })
		require.Len(t, blocks, 1)
		got := wire(t, blocks[0])
		assert.Equal(t, "tool_result", got.Type)
		assert.Equal(t, "toolu_1", got.ToolUseID)
		assert.False(t, got.IsError)
		assert.Equal(t, "sunny", got.text())
		require.NoError(t, r.Err())
	}

	r := anthropicguard.Check(context.Background(), tr, m)
	require.Equal(t, toolguard.Hint, r.Decisions[0].Verdict)
	require.Equal(t, 1, r.Skipped())
	require.NoError(t, r.Err(), "a hint does not stop the loop")
	blocks := r.SkipBlocks()
	require.Len(t, blocks, 1)
	got := wire(t, blocks[0])
	assert.Equal(t, "toolu_1", got.ToolUseID)
	assert.True(t, got.IsError)
	assert.Equal(t, r.Decisions[0].Message, got.text())
	assert.True(t, strings.HasPrefix(got.text(), toolguard.HintMarker))

	r = anthropicguard.Check(context.Background(), tr, m)
	require.Equal(t, toolguard.Abort, r.Decisions[0].Verdict)
	require.ErrorIs(t, r.Err(), toolguard.ErrLoop)
	got = wire(t, r.Run(context.Background(), nil)[0])
	assert.True(t, got.IsError)
	assert.Equal(t, r.Decisions[0].Message, got.text(), "an abort answers the call with its message")
}

func TestRunAnswersEveryCallInOrder(t *testing.T) {
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 2})
	m := message(t, `[
		{"type":"tool_use","id":"t1","name":"read","input":{"path":"a"}},
		{"type":"tool_use","id":"t2","name":"read","input":{"path":"b"}},
		{"type":"tool_use","id":"t3","name":"read","input":{"path":"c"}}]`)
	r := anthropicguard.Check(context.Background(), tr, m)
	var ran []string
	blocks := r.Run(context.Background(), func(_ context.Context, c toolguard.Call) (string, error) {
		ran = append(ran, c.ID)
		if c.ID == "t2" {
			return "", errors.New("permission denied")
		}
		return "", nil // an empty result
	})
	assert.Equal(t, []string{"t1", "t2"}, ran)
	require.Len(t, blocks, 3)
	b1, b2, b3 := wire(t, blocks[0]), wire(t, blocks[1]), wire(t, blocks[2])
	assert.Equal(t, "t1", b1.ToolUseID)
	assert.False(t, b1.IsError)
	assert.Empty(t, b1.Content, "an empty result sends no empty text block")
	assert.Equal(t, "t2", b2.ToolUseID)
	assert.True(t, b2.IsError)
	assert.Equal(t, "error: permission denied", b2.text())
	assert.Equal(t, "t3", b3.ToolUseID)
	assert.True(t, b3.IsError)
	assert.Contains(t, b3.text(), "All 2 available tool calls for this turn were used")
	require.ErrorIs(t, r.Err(), toolguard.ErrBudgetExhausted)
	assert.Equal(t, toolguard.PhaseWindDown, tr.Guidance().Phase)
}

func TestNilTrackerAndExecutor(t *testing.T) {
	r := anthropicguard.Check(context.Background(), nil, message(t, weatherCall))
	require.Len(t, r.Decisions, 1)
	got := wire(t, r.Run(context.Background(), nil)[0])
	assert.True(t, got.IsError)
	assert.Equal(t, "error: anthropicguard: no executor", got.text())

	empty := anthropicguard.Check(context.Background(), toolguard.NewTracker(toolguard.Policy{}), anthropic.Message{})
	assert.Empty(t, empty.Run(context.Background(), nil))
	assert.NoError(t, empty.Err())
}

func TestGuidanceBlock(t *testing.T) {
	_, ok := anthropicguard.GuidanceBlock(toolguard.Guidance{})
	assert.False(t, ok)
	b, ok := anthropicguard.GuidanceBlock(toolguard.Guidance{Phase: toolguard.PhaseNudge, Message: "Start wrapping up."})
	require.True(t, ok)
	got := wire(t, b)
	assert.Equal(t, "text", got.Type)
	assert.Equal(t, "Start wrapping up.", got.Text)
}

func TestStripTools(t *testing.T) {
	p := anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeHaiku4_5,
		MaxTokens: 16,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
		Tools:     []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "f"}}},
		ToolChoice: anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{
			DisableParallelToolUse: anthropic.Bool(true)}},
	}
	anthropicguard.StripTools(&p)
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.Equal(t, map[string]any{"type": "none"}, got["tool_choice"])
	assert.Len(t, got["tools"], 1, "the definitions stay")
	anthropicguard.StripTools(nil)
}
