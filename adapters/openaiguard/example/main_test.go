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

// sentMessage is a message as the SDK put it on the wire.
type sentMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

type sentRequest struct {
	Messages []sentMessage    `json:"messages"`
	Tools    []map[string]any `json:"tools"`
	Raw      map[string]any   `json:"-"`
}

func decode(t *testing.T, body []byte) sentRequest {
	t.Helper()
	var r sentRequest
	require.NoError(t, json.Unmarshal(body, &r))
	require.NoError(t, json.Unmarshal(body, &r.Raw))
	return r
}

// requireAnswered checks what the API requires: every tool call of an
// assistant message is answered by a tool message right after it.
func requireAnswered(t *testing.T, r sentRequest) {
	t.Helper()
	for i, m := range r.Messages {
		if m.Role != "assistant" {
			continue
		}
		for j, tc := range m.ToolCalls {
			k := i + 1 + j
			require.Less(t, k, len(r.Messages), "tool call %s is not answered", tc.ID)
			require.Equal(t, "tool", r.Messages[k].Role)
			require.Equal(t, tc.ID, r.Messages[k].ToolCallID)
		}
	}
}

// start serves the fake model on loopback for one test.
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
	var hint *sentMessage
	for i := range last.Messages {
		if last.Messages[i].ToolCallID == "call_3_1" {
			hint = &last.Messages[i]
		}
	}
	require.NotNil(t, hint, "the hinted call is answered in the next request")
	content, _ := hint.Content.(string)
	assert.True(t, strings.HasPrefix(content, toolguard.HintMarker), "content %q", content)
	assert.Contains(t, content, "was already executed with identical parameters")
	assert.Contains(t, content, "This call was not executed")

	ledger := tracker.Ledger()
	require.Len(t, ledger, 4)
	assert.Equal(t, toolguard.Hint, ledger[2].Verdict)
	assert.Equal(t, toolguard.Abort, ledger[3].Verdict)
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
		if i < 4 {
			assert.Len(t, r.Tools, 1, "request %d offers the tool", i+1)
		}
	}
	nudged := decode(t, reqs[3])
	lastMsg := nudged.Messages[len(nudged.Messages)-1]
	assert.Equal(t, "user", lastMsg.Role)
	assert.Equal(t, "You have used 3 of 4 tool calls. Start wrapping up.", lastMsg.Content)

	final := decode(t, reqs[4])
	assert.NotContains(t, final.Raw, "tools", "the wind-down request has no tools")
	assert.NotContains(t, final.Raw, "tool_choice")
	lastMsg = final.Messages[len(final.Messages)-1]
	assert.Equal(t, "user", lastMsg.Role)
	assert.Equal(t, "You have used all 4 tool calls for this turn. Summarize your work and answer the user's question.", lastMsg.Content)
	nudges := 0
	for _, m := range final.Messages {
		if s, _ := m.Content.(string); strings.HasPrefix(s, "You have used 3 of 4") {
			nudges++
		}
	}
	assert.Equal(t, 1, nudges, "the nudge is sent once")
}

func TestParallelBatchOverrunsBudget(t *testing.T) {
	twice := func(_ int, toolsOffered bool) []fakeCall {
		if !toolsOffered {
			return nil
		}
		return []fakeCall{{Tool: "get_weather", Args: `{"city":"Paris"}`}, {Tool: "get_weather", Args: `{"city":"Lyon"}`}}
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
	assert.Empty(t, final.Tools)
	for _, m := range final.Messages {
		if m.ToolCallID == "call_2_2" {
			assert.Contains(t, m.Content, "All 3 available tool calls for this turn were used")
			assert.True(t, strings.HasPrefix(m.Content.(string), "[budget-exhausted]"))
		}
	}
}

func TestCallAfterWindDownStops(t *testing.T) {
	model, url := start(t, sameCall(true))
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 2})
	_, err := chat(context.Background(), newClient(url), tracker, "watch", changing(), io.Discard)
	require.ErrorIs(t, err, toolguard.ErrBudgetExhausted)
	assert.Equal(t, toolguard.PhaseExhausted, tracker.Guidance().Phase)
	reqs := model.Requests()
	require.Len(t, reqs, 3)
	assert.Empty(t, decode(t, reqs[2]).Tools)
}

func TestRunPrintsBothConversations(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	want := `== a model that repeats the same call
call_1_1 get_weather: ran
call_2_1 get_weather: ran
call_3_1 get_weather: hint, not run: duplicate
call_4_1 get_weather: abort, not run: duplicate
stopped: toolguard: loop detected: tool "get_weather" stopped by duplicate (count 2, limit 2)
== a turn that runs out of tool calls
call_1_1 get_weather: ran
call_2_1 get_weather: ran
call_3_1 get_weather: ran
harness (nudge): You have used 3 of 4 tool calls. Start wrapping up.
call_4_1 get_weather: ran
harness (wind_down): You have used all 4 tool calls for this turn. Summarize your work and answer the user's question.
answer: Summary: the last reading was reading 4: 22 °C.
`
	assert.Equal(t, want, out.String())
}
