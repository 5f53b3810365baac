package openaiguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	openaiguard "github.com/toolguard/toolguard/adapters/openaiguard"
)

// message decodes an assistant message the way the SDK decodes a response.
func message(t *testing.T, raw string) openai.ChatCompletionMessage {
	t.Helper()
	var m openai.ChatCompletionMessage
	require.NoError(t, json.Unmarshal([]byte(raw), &m))
	return m
}

const weatherCall = `{"role":"assistant","content":null,"tool_calls":[
	{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`

// wire returns the JSON the SDK sends for a message param.
func wire(t *testing.T, m openai.ChatCompletionMessageParamUnion) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func TestCalls(t *testing.T) {
	m := message(t, `{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_a","type":"function","function":{"name":"search","arguments":"{\"query\":\"go\"}"}},
		{"id":"call_b","type":"function","function":{"name":"list","arguments":""}},
		{"id":"call_c","type":"custom","custom":{"name":"patch","input":"*** raw text"}},
		{"id":"call_d","type":"function","function":{"name":"broken","arguments":"{not json"}},
		{"id":"call_e","type":"mystery"}]}`)
	calls := openaiguard.Calls(m)
	require.Len(t, calls, 5)
	assert.Equal(t, toolguard.Call{ID: "call_a", Tool: "search", Args: json.RawMessage(`{"query":"go"}`)}, calls[0])
	assert.Equal(t, toolguard.Call{ID: "call_b", Tool: "list"}, calls[1])
	assert.Equal(t, toolguard.Call{ID: "call_c", Tool: "patch", Args: json.RawMessage(`"*** raw text"`)}, calls[2])
	assert.Equal(t, "{not json", string(calls[3].Args), "arguments are passed as the model wrote them")
	assert.Equal(t, toolguard.Call{ID: "call_e"}, calls[4])

	assert.Nil(t, openaiguard.Calls(message(t, `{"role":"assistant","content":"hi"}`)))
}

func TestCheckHintThenAbort(t *testing.T) {
	tr := toolguard.NewTracker(toolguard.Policy{})
	m := message(t, weatherCall)
	run := func() *openaiguard.Round {
		r := openaiguard.Check(context.Background(), tr, m)
		r.Run(context.Background(), func(context.Context, toolguard.Call) (string, error) { return "sunny", nil })
		return r
	}
	for i := 0; i < 2; i++ {
		r := run()
		require.Equal(t, 0, r.Skipped())
		require.NoError(t, r.Err())
		require.Empty(t, r.SkipMessages())
	}

	r := openaiguard.Check(context.Background(), tr, m)
	require.Equal(t, toolguard.Hint, r.Decisions[0].Verdict)
	require.Equal(t, 1, r.Skipped())
	require.NoError(t, r.Err(), "a hint does not stop the loop")
	msgs := r.SkipMessages()
	require.Len(t, msgs, 1)
	got := wire(t, msgs[0])
	assert.Equal(t, "tool", got["role"])
	assert.Equal(t, "call_1", got["tool_call_id"])
	assert.Equal(t, r.Decisions[0].Message, got["content"])
	assert.True(t, strings.HasPrefix(got["content"].(string), toolguard.HintMarker))

	r = openaiguard.Check(context.Background(), tr, m)
	require.Equal(t, toolguard.Abort, r.Decisions[0].Verdict)
	err := r.Err()
	require.ErrorIs(t, err, toolguard.ErrLoop)
	var le *toolguard.LoopError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "get_weather", le.Tool)
	got = wire(t, r.SkipMessages()[0])
	assert.Equal(t, r.Decisions[0].Message, got["content"], "an abort answers the call with its message")
}

func TestRunAnswersEveryCallInOrder(t *testing.T) {
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 2})
	m := message(t, `{"role":"assistant","content":null,"tool_calls":[
		{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}},
		{"id":"c2","type":"function","function":{"name":"read","arguments":"{\"path\":\"b\"}"}},
		{"id":"c3","type":"function","function":{"name":"read","arguments":"{\"path\":\"c\"}"}}]}`)
	r := openaiguard.Check(context.Background(), tr, m)
	var ran []string
	msgs := r.Run(context.Background(), func(_ context.Context, c toolguard.Call) (string, error) {
		ran = append(ran, c.ID)
		if c.ID == "c2" {
			return "partial", errors.New("permission denied")
		}
		return "contents of " + c.ID, nil
	})
	assert.Equal(t, []string{"c1", "c2"}, ran, "the call past the budget does not run")
	require.Len(t, msgs, 3)
	for i, want := range []struct{ id, content string }{
		{"c1", "contents of c1"},
		{"c2", "error: permission denied\npartial"},
		{"c3", r.Decisions[2].Message},
	} {
		got := wire(t, msgs[i])
		assert.Equal(t, "tool", got["role"])
		assert.Equal(t, want.id, got["tool_call_id"])
		assert.Equal(t, want.content, got["content"])
	}
	require.ErrorIs(t, r.Err(), toolguard.ErrBudgetExhausted)

	ledger := tr.Ledger()
	require.Len(t, ledger, 3)
	assert.True(t, ledger[0].Done && !ledger[0].Failed)
	assert.True(t, ledger[1].Done && ledger[1].Failed)
	assert.NotEqual(t, toolguard.Allow, ledger[2].Verdict)
	assert.Equal(t, toolguard.PhaseWindDown, tr.Guidance().Phase)
}

func TestNilTrackerAndExecutor(t *testing.T) {
	r := openaiguard.Check(context.Background(), nil, message(t, weatherCall))
	require.Len(t, r.Decisions, 1)
	assert.Equal(t, toolguard.Allow, r.Decisions[0].Verdict)
	msgs := r.Run(context.Background(), nil)
	require.Len(t, msgs, 1)
	assert.Equal(t, "error: openaiguard: no executor", wire(t, msgs[0])["content"])

	empty := openaiguard.Check(context.Background(), toolguard.NewTracker(toolguard.Policy{}), openai.ChatCompletionMessage{})
	assert.Empty(t, empty.Run(context.Background(), nil))
	assert.NoError(t, empty.Err())
}

func TestInvalidCallIsAnswered(t *testing.T) {
	tr := toolguard.NewTracker(toolguard.Policy{})
	r := openaiguard.Check(context.Background(), tr, message(t, `{"role":"assistant","tool_calls":[{"id":"x","type":"mystery"}]}`))
	require.ErrorIs(t, r.Err(), toolguard.ErrInvalidCall)
	got := wire(t, r.Run(context.Background(), nil)[0])
	assert.Equal(t, "x", got["tool_call_id"])
	assert.True(t, strings.HasPrefix(got["content"].(string), "[invalid-call]"))
}

func TestGuidanceMessage(t *testing.T) {
	_, ok := openaiguard.GuidanceMessage(toolguard.Guidance{Phase: toolguard.PhaseNormal})
	assert.False(t, ok)

	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4})
	for i := 0; i < 4; i++ {
		c := toolguard.Call{ID: "c", Tool: "poll", Args: json.RawMessage(`{}`)}
		require.False(t, tr.ShouldSkip(c).Skip())
		tr.Record(c, toolguard.Outcome{Result: strings.Repeat("x", i)})
		g := tr.Guidance()
		m, ok := openaiguard.GuidanceMessage(g)
		switch i {
		case 0, 1:
			assert.False(t, ok)
		case 2:
			require.True(t, ok)
			assert.Equal(t, map[string]any{"role": "user", "content": "You have used 3 of 4 tool calls. Start wrapping up."}, wire(t, m))
			assert.False(t, g.StripTools)
		case 3:
			require.True(t, ok)
			assert.Equal(t, "user", wire(t, m)["role"])
			assert.Equal(t, g.Message, wire(t, m)["content"])
			assert.True(t, g.StripTools)
		}
	}
}

func TestStripTools(t *testing.T) {
	p := openai.ChatCompletionNewParams{
		Model:             openai.ChatModelGPT5_4Mini,
		Messages:          []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		Tools:             []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "f"})},
		ToolChoice:        openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
		ParallelToolCalls: openai.Bool(true),
	}
	openaiguard.StripTools(&p)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	assert.NotContains(t, got, "tools")
	assert.NotContains(t, got, "tool_choice")
	assert.NotContains(t, got, "parallel_tool_calls")
	assert.Contains(t, got, "messages")
	openaiguard.StripTools(nil)
}
