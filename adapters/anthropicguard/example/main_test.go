package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
)

// sentBlock is a content block as the SDK put it on the wire.
type sentBlock struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
	Text      string `json:"text"`
	Content   []struct {
		Text string `json:"text"`
	} `json:"content"`
}

type sentRequest struct {
	Messages []struct {
		Role    string      `json:"role"`
		Content []sentBlock `json:"content"`
	} `json:"messages"`
	Tools      []map[string]any `json:"tools"`
	ToolChoice map[string]any   `json:"tool_choice"`
}

func decode(t *testing.T, body []byte) sentRequest {
	t.Helper()
	var r sentRequest
	require.NoError(t, json.Unmarshal(body, &r))
	return r
}

// requireAnswered checks what the API requires: the user message after an
// assistant message with tool_use blocks begins with one tool_result block
// per tool_use, and roles alternate.
func requireAnswered(t *testing.T, r sentRequest) {
	t.Helper()
	for i, m := range r.Messages {
		if i > 0 {
			require.NotEqual(t, r.Messages[i-1].Role, m.Role, "message %d repeats the role", i)
		}
		if m.Role != "assistant" {
			continue
		}
		var ids []string
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				ids = append(ids, b.ID)
			}
		}
		if len(ids) == 0 {
			continue
		}
		require.Less(t, i+1, len(r.Messages), "tool_use blocks are not answered")
		next := r.Messages[i+1]
		require.Equal(t, "user", next.Role)
		require.GreaterOrEqual(t, len(next.Content), len(ids))
		for j, id := range ids {
			require.Equal(t, "tool_result", next.Content[j].Type)
			require.Equal(t, id, next.Content[j].ToolUseID)
		}
	}
}

func start(t *testing.T, script func(int, bool) []fakeCall) (*fakeModel, string) {
	t.Helper()
	m := newFakeModel(script)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv.URL
}

func TestLoopGetsHintThenAbort(t *testing.T) {
	model, url := start(t, sameCall(false))
	tracker := toolguard.NewTracker(toolguard.Policy{})
	_, err := chat(context.Background(), newClient(url), tracker, "weather?", sunny, io.Discard)

	require.ErrorIs(t, err, toolguard.ErrLoop)
	var le *toolguard.LoopError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, toolguard.ReasonDuplicate, le.Reason)

	reqs := model.Requests()
	require.Len(t, reqs, 4, "two runs, a hint, then the abort stops the loop")
	for _, b := range reqs {
		requireAnswered(t, decode(t, b))
	}
	last := decode(t, reqs[3])
	answer := last.Messages[len(last.Messages)-1]
	require.Equal(t, "user", answer.Role)
	require.Len(t, answer.Content, 1)
	hint := answer.Content[0]
	assert.Equal(t, "toolu_3_1", hint.ToolUseID)
	assert.True(t, hint.IsError)
	require.Len(t, hint.Content, 1)
	assert.True(t, strings.HasPrefix(hint.Content[0].Text, toolguard.HintMarker), "content %q", hint.Content[0].Text)
	assert.Contains(t, hint.Content[0].Text, "was already executed with identical parameters")
}

func TestBudgetNudgeThenWindDown(t *testing.T) {
	model, url := start(t, sameCall(false))
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4})
	answer, err := chat(context.Background(), newClient(url), tracker, "watch", changing(), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "Summary: the last reading was reading 4: 22 °C.", answer)

	reqs := model.Requests()
	require.Len(t, reqs, 5)
	for i, b := range reqs {
		r := decode(t, b)
		requireAnswered(t, r)
		assert.Len(t, r.Tools, 1, "request %d keeps the tool definitions", i+1)
		if i < 4 {
			assert.Nil(t, r.ToolChoice, "request %d lets the model call tools", i+1)
		}
	}
	nudged := decode(t, reqs[3])
	user := nudged.Messages[len(nudged.Messages)-1]
	require.Len(t, user.Content, 2, "the tool result, then the nudge")
	assert.Equal(t, "tool_result", user.Content[0].Type)
	assert.Equal(t, "text", user.Content[1].Type)
	assert.Equal(t, "You have used 3 of 4 tool calls. Start wrapping up.", user.Content[1].Text)

	final := decode(t, reqs[4])
	assert.Equal(t, map[string]any{"type": "none"}, final.ToolChoice)
	user = final.Messages[len(final.Messages)-1]
	require.Len(t, user.Content, 2)
	assert.Equal(t, "You have used all 4 tool calls for this turn. Summarize your work and answer the user's question.", user.Content[1].Text)
}

func TestParallelBatchOverrunsBudget(t *testing.T) {
	twice := func(_ int, toolsAllowed bool) []fakeCall {
		if !toolsAllowed {
			return nil
		}
		return []fakeCall{{Tool: "get_weather", Input: `{"city":"Paris"}`}, {Tool: "get_weather", Input: `{"city":"Lyon"}`}}
	}
	model, url := start(t, twice)
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 3})
	answer, err := chat(context.Background(), newClient(url), tracker, "watch", changing(), io.Discard)
	require.NoError(t, err, "a batch that overruns the budget winds down instead of stopping")
	assert.True(t, strings.HasPrefix(answer, "Summary: "))

	reqs := model.Requests()
	require.Len(t, reqs, 3)
	final := decode(t, reqs[2])
	requireAnswered(t, final)
	user := final.Messages[len(final.Messages)-1]
	require.Len(t, user.Content, 3, "two tool results in one user message, then the wind-down")
	assert.False(t, user.Content[0].IsError)
	assert.True(t, user.Content[1].IsError)
	assert.Equal(t, "toolu_2_2", user.Content[1].ToolUseID)
	assert.Contains(t, user.Content[1].Content[0].Text, "All 3 available tool calls for this turn were used")
	assert.Equal(t, "text", user.Content[2].Type)
}

func TestCallAfterWindDownStops(t *testing.T) {
	model, url := start(t, sameCall(true))
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 2})
	_, err := chat(context.Background(), newClient(url), tracker, "watch", changing(), io.Discard)
	require.ErrorIs(t, err, toolguard.ErrBudgetExhausted)
	assert.Equal(t, toolguard.PhaseExhausted, tracker.Guidance().Phase)
	assert.Len(t, model.Requests(), 3)
}

func TestRunPrintsBothConversations(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	want := `== a model that repeats the same call
toolu_1_1 get_weather: ran
toolu_2_1 get_weather: ran
toolu_3_1 get_weather: hint, not run: duplicate
toolu_4_1 get_weather: abort, not run: duplicate
stopped: toolguard: loop detected: tool "get_weather" stopped by duplicate (count 2, limit 2)
== a turn that runs out of tool calls
toolu_1_1 get_weather: ran
toolu_2_1 get_weather: ran
toolu_3_1 get_weather: ran
harness (nudge): You have used 3 of 4 tool calls. Start wrapping up.
toolu_4_1 get_weather: ran
harness (wind_down): You have used all 4 tool calls for this turn. Summarize your work and answer the user's question.
answer: Summary: the last reading was reading 4: 22 °C.
`
	assert.Equal(t, want, out.String())
}
