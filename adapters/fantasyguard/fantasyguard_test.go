package fantasyguard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"charm.land/fantasy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/fantasyguard"
)

// scriptedModel is a fantasy.LanguageModel whose answers come from a
// script: given the request number (from 1) and the request, the response.
// It keeps every request, so a test reads what fantasy sent the model.
type scriptedModel struct {
	script func(n int, call fantasy.Call) *fantasy.Response

	mu       sync.Mutex
	requests []fantasy.Call
}

func (m *scriptedModel) Generate(_ context.Context, call fantasy.Call) (*fantasy.Response, error) {
	m.mu.Lock()
	m.requests = append(m.requests, call)
	n := len(m.requests)
	m.mu.Unlock()
	if n > 50 {
		return nil, errors.New("scripted model: more than 50 requests")
	}
	return m.script(n, call), nil
}

func (m *scriptedModel) Stream(context.Context, fantasy.Call) (fantasy.StreamResponse, error) {
	return nil, errors.New("scripted model: no streaming")
}

func (m *scriptedModel) GenerateObject(context.Context, fantasy.ObjectCall) (*fantasy.ObjectResponse, error) {
	return nil, errors.New("scripted model: no objects")
}

func (m *scriptedModel) StreamObject(context.Context, fantasy.ObjectCall) (fantasy.ObjectStreamResponse, error) {
	return nil, errors.New("scripted model: no objects")
}

func (m *scriptedModel) Provider() string { return "scripted" }
func (m *scriptedModel) Model() string    { return "scripted-1" }

func (m *scriptedModel) request(i int) fantasy.Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[i]
}

func (m *scriptedModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// toolCalls is a response asking for the given calls, each "name {json}".
func toolCalls(n int, calls ...string) *fantasy.Response {
	var content fantasy.ResponseContent
	for i, c := range calls {
		name, input, _ := strings.Cut(c, " ")
		content = append(content, fantasy.ToolCallContent{
			ToolCallID: fmt.Sprintf("call_%d_%d", n, i), ToolName: name, Input: input,
		})
	}
	return &fantasy.Response{Content: content, FinishReason: fantasy.FinishReasonToolCalls}
}

func text(s string) *fantasy.Response {
	return &fantasy.Response{
		Content:      fantasy.ResponseContent{fantasy.TextContent{Text: s}},
		FinishReason: fantasy.FinishReasonStop,
	}
}

// lastToolResult is the text of the last tool result in a request, and
// whether it was an error result.
func lastToolResult(t *testing.T, call fantasy.Call) (string, bool) {
	t.Helper()
	for i := len(call.Prompt) - 1; i >= 0; i-- {
		msg := call.Prompt[i]
		if msg.Role != fantasy.MessageRoleTool {
			continue
		}
		for j := len(msg.Content) - 1; j >= 0; j-- {
			part, ok := fantasy.AsMessagePart[fantasy.ToolResultPart](msg.Content[j])
			if !ok {
				continue
			}
			if e, ok := fantasy.AsToolResultOutputType[fantasy.ToolResultOutputContentError](part.Output); ok {
				return e.Error.Error(), true
			}
			if txt, ok := fantasy.AsToolResultOutputType[fantasy.ToolResultOutputContentText](part.Output); ok {
				return txt.Text, false
			}
		}
	}
	t.Fatal("no tool result in the request")
	return "", false
}

// userTexts are the texts of the user messages of a request.
func userTexts(call fantasy.Call) []string {
	var out []string
	for _, msg := range call.Prompt {
		if msg.Role != fantasy.MessageRoleUser {
			continue
		}
		for _, p := range msg.Content {
			if tp, ok := fantasy.AsMessagePart[fantasy.TextPart](p); ok {
				out = append(out, tp.Text)
			}
		}
	}
	return out
}

type searchInput struct {
	Query string `json:"query"`
}

// searchTool is a real fantasy tool that counts its runs.
func searchTool(runs *atomic.Int64) fantasy.AgentTool {
	return fantasy.NewAgentTool("search", "Searches the docs.",
		func(_ context.Context, in searchInput, _ fantasy.ToolCall) (fantasy.ToolResponse, error) {
			runs.Add(1)
			return fantasy.NewTextResponse("results for " + in.Query), nil
		})
}

func newAgent(m *scriptedModel, g *fantasyguard.Guard, tools ...fantasy.AgentTool) fantasy.Agent {
	return fantasy.NewAgent(m,
		fantasy.WithTools(g.Tools(tools...)...),
		fantasy.WithPrepareStep(g.PrepareStep(nil)),
		fantasy.WithStopConditions(g.StopCondition(), fantasy.StepCountIs(20)),
	)
}

// A model that asks for the same search forever: two runs, a hint, then
// an abort that ends the run with no further model request.
func TestLoopIsHintedThenAborted(t *testing.T) {
	m := &scriptedModel{script: func(n int, _ fantasy.Call) *fantasy.Response {
		return toolCalls(n, `search {"query":"fantasy agents"}`)
	}}
	var runs atomic.Int64
	g := fantasyguard.New(toolguard.NewTracker(toolguard.Policy{}))
	res, err := newAgent(m, g, searchTool(&runs)).Generate(context.Background(), fantasy.AgentCall{Prompt: "find it"})
	require.NoError(t, err)
	require.NotNil(t, res)

	assert.EqualValues(t, 2, runs.Load(), "the third and fourth calls did not run")
	assert.Equal(t, 4, m.count(), "no model request after the abort")
	got, isErr := lastToolResult(t, m.request(2))
	assert.Equal(t, "results for fantasy agents", got)
	assert.False(t, isErr)
	got, isErr = lastToolResult(t, m.request(3))
	assert.True(t, strings.HasPrefix(got, toolguard.HintMarker), got)
	assert.True(t, isErr, "a skipped call is not a success")

	require.Error(t, g.Err())
	assert.ErrorIs(t, g.Err(), toolguard.ErrLoop)
	var le *toolguard.LoopError
	require.ErrorAs(t, g.Err(), &le)
	assert.Equal(t, "search", le.Tool)
	require.Len(t, res.Steps, 4)
	last := res.Steps[3].Content
	var aborted bool
	for _, c := range last {
		if r, ok := fantasy.AsContentType[fantasy.ToolResultContent](c); ok {
			aborted = r.StopTurn
		}
	}
	assert.True(t, aborted, "the abort's tool result ends the turn")
}

// A model that reads the hint and answers: the run ends normally.
func TestHintThenAnswer(t *testing.T) {
	m := &scriptedModel{}
	m.script = func(n int, call fantasy.Call) *fantasy.Response {
		if n > 1 {
			if got, _ := lastToolResult(t, call); strings.HasPrefix(got, toolguard.HintMarker) {
				return text("The docs say fantasy agents run tools.")
			}
		}
		return toolCalls(n, `search {"query":"fantasy agents"}`)
	}
	var runs atomic.Int64
	g := fantasyguard.New(toolguard.NewTracker(toolguard.Policy{}))
	res, err := newAgent(m, g, searchTool(&runs)).Generate(context.Background(), fantasy.AgentCall{Prompt: "find it"})
	require.NoError(t, err)
	assert.Equal(t, "The docs say fantasy agents run tools.", res.Response.Content.Text())
	assert.NoError(t, g.Err())
	assert.EqualValues(t, 2, runs.Load())
}

// The turn budget: the nudge reaches the model as a user message, the
// wind-down takes the tools away, and a tool the model calls anyway is
// refused with the budget's error.
func TestBudgetNudgeAndWindDown(t *testing.T) {
	m := &scriptedModel{script: func(n int, _ fantasy.Call) *fantasy.Response {
		return toolCalls(n, fmt.Sprintf(`search {"query":"topic %d"}`, n))
	}}
	var runs atomic.Int64
	g := fantasyguard.New(toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4, NudgeRatio: 0.5}))
	_, err := newAgent(m, g, searchTool(&runs)).Generate(context.Background(), fantasy.AgentCall{Prompt: "research"})
	require.NoError(t, err)

	assert.EqualValues(t, 4, runs.Load())
	require.Equal(t, 5, m.count(), "four calls, then the refused one ends the run")
	for i := 0; i < 2; i++ {
		assert.NotEmpty(t, m.request(i).Tools, "request %d has tools", i+1)
		assert.Len(t, userTexts(m.request(i)), 1, "request %d: only the prompt", i+1)
	}
	nudge := userTexts(m.request(2))
	require.Len(t, nudge, 2)
	assert.Equal(t, "You have used 2 of 4 tool calls. Start wrapping up.", nudge[1])
	assert.NotEmpty(t, m.request(2).Tools, "the nudge keeps the tools")

	windDown := m.request(4)
	assert.Empty(t, windDown.Tools, "no tools in the wind-down")
	texts := userTexts(windDown)
	assert.Contains(t, texts[len(texts)-1], "Summarize your work")

	assert.ErrorIs(t, g.Err(), toolguard.ErrBudgetExhausted, "the call made anyway was refused")
}

// Each Generate call is a new turn: the call that was hinted runs again.
func TestNewTurnPerGenerate(t *testing.T) {
	var script []string
	m := &scriptedModel{}
	m.script = func(n int, _ fantasy.Call) *fantasy.Response {
		if n <= len(script) && script[n-1] != "" {
			return toolCalls(n, script[n-1])
		}
		return text("done")
	}
	script = []string{`search {"query":"a"}`, `search {"query":"a"}`, `search {"query":"a"}`, ""}
	var runs atomic.Int64
	g := fantasyguard.New(toolguard.NewTracker(toolguard.Policy{}))
	agent := newAgent(m, g, searchTool(&runs))
	_, err := agent.Generate(context.Background(), fantasy.AgentCall{Prompt: "one"})
	require.NoError(t, err)
	assert.EqualValues(t, 2, runs.Load())

	script = append(script, `search {"query":"a"}`, "")
	_, err = agent.Generate(context.Background(), fantasy.AgentCall{Prompt: "two"})
	require.NoError(t, err)
	assert.EqualValues(t, 3, runs.Load(), "a new turn: the call runs")
	ledger := g.Tracker().Ledger()
	require.Len(t, ledger, 4)
	assert.Equal(t, ledger[0].Turn, ledger[2].Turn, "the hinted call was in the first Generate's turn")
	assert.Equal(t, ledger[2].Turn+1, ledger[3].Turn, "the second Generate started a new turn")
}

// The calls of one model response are one round: similar queries in it
// are distinct questions, and a failing tool's error is recorded.
func TestOneResponseIsOneRound(t *testing.T) {
	m := &scriptedModel{script: func(n int, _ fantasy.Call) *fantasy.Response {
		if n == 1 {
			return toolCalls(n, `search {"query":"java null pointer exception fix"}`,
				`search {"query":"how to fix null pointer exception java"}`, `fail {}`)
		}
		return text("done")
	}}
	var runs atomic.Int64
	fail := fantasy.NewAgentTool("fail", "Always fails.",
		func(context.Context, struct{}, fantasy.ToolCall) (fantasy.ToolResponse, error) {
			return fantasy.NewTextErrorResponse("exit status 1"), nil
		})
	g := fantasyguard.New(toolguard.NewTracker(toolguard.Policy{}))
	_, err := newAgent(m, g, searchTool(&runs), fail).Generate(context.Background(), fantasy.AgentCall{Prompt: "q"})
	require.NoError(t, err)
	assert.EqualValues(t, 2, runs.Load(), "both reworded queries of one response ran")
	ledger := g.Tracker().Ledger()
	require.Len(t, ledger, 3)
	assert.Equal(t, "call_1_0", ledger[0].CallID)
	assert.True(t, ledger[2].Done && ledger[2].Failed)
}

func TestNil(t *testing.T) {
	g := fantasyguard.New(nil)
	assert.NotNil(t, g.Tracker())
	assert.Nil(t, g.Tool(nil))
	assert.False(t, g.StopCondition()(nil))
}
