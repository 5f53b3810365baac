package langchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard"
	tglc "github.com/toolguard/toolguard/adapters/langchaingo"
)

// loopingModel is an llms.Model that asks for the same calculator call on
// every request. With giveUp it answers instead once the last tool result
// it was sent is a toolguard hint.
type loopingModel struct {
	input  string
	giveUp bool

	mu       sync.Mutex
	requests int
	seen     []string // the tool results of the last request
}

var _ llms.Model = (*loopingModel)(nil)

func (m *loopingModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests++
	m.seen = m.seen[:0]
	for _, mc := range msgs {
		for _, p := range mc.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				m.seen = append(m.seen, r.Content)
			}
		}
	}
	if m.giveUp && len(m.seen) > 0 && strings.HasPrefix(m.seen[len(m.seen)-1], toolguard.HintMarker) {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "The answer is 4."}}}, nil
	}
	args, err := json.Marshal(map[string]string{"__arg1": m.input})
	if err != nil {
		return nil, err
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		ToolCalls: []llms.ToolCall{{
			ID:           fmt.Sprintf("call_%d", m.requests),
			Type:         "function",
			FunctionCall: &llms.FunctionCall{Name: "calculator", Arguments: string(args)},
		}},
	}}}, nil
}

func (m *loopingModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// counting is a real tools.Tool that counts the calls reaching the wrapped
// tool.
type counting struct {
	tools.Tool
	mu    sync.Mutex
	calls int
}

func (c *counting) Call(ctx context.Context, input string) (string, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.Tool.Call(ctx, input)
}

func verdicts(t *toolguard.Tracker) []string {
	var out []string
	for _, e := range t.Ledger() {
		out = append(out, e.Verdict.String()+"/"+e.Status())
	}
	return out
}

func TestExecutorLoopIsStopped(t *testing.T) {
	tracker := toolguard.NewTracker(toolguard.Policy{})
	calc := &counting{Tool: tools.Calculator{}}
	model := &loopingModel{input: "2+2"}
	agent := agents.NewOpenAIFunctionsAgent(model, tglc.WrapAll(tracker, []tools.Tool{calc}))
	executor := agents.NewExecutor(agent, agents.WithMaxIterations(20))

	_, err := chains.Run(context.Background(), executor, "What is 2+2?")

	require.Error(t, err)
	assert.ErrorIs(t, err, toolguard.ErrLoop)
	var loop *toolguard.LoopError
	require.ErrorAs(t, err, &loop)
	assert.Equal(t, "calculator", loop.Tool)
	assert.Equal(t, toolguard.ReasonDuplicate, loop.Reason)
	assert.Equal(t, 2, calc.calls, "only the first two identical calls run")
	assert.Equal(t, 4, model.requests, "the run stops at the fourth request, not at MaxIterations")
	assert.Equal(t, []string{"allow/ok", "allow/ok", "hint/skipped", "abort/skipped"}, verdicts(tracker))
	// The model was shown the hint as the third call's result.
	require.Len(t, model.seen, 3)
	assert.Equal(t, "4", model.seen[0])
	assert.True(t, strings.HasPrefix(model.seen[2], toolguard.HintMarker), model.seen[2])
}

func TestExecutorFinishesAfterHint(t *testing.T) {
	tracker := toolguard.NewTracker(toolguard.Policy{})
	calc := &counting{Tool: tools.Calculator{}}
	model := &loopingModel{input: "2+2", giveUp: true}
	agent := agents.NewOpenAIFunctionsAgent(model, tglc.WrapAll(tracker, []tools.Tool{calc}))
	executor := agents.NewExecutor(agent, agents.WithMaxIterations(20))

	out, err := chains.Run(context.Background(), executor, "What is 2+2?")

	require.NoError(t, err)
	assert.Equal(t, "The answer is 4.", out)
	assert.Equal(t, 2, calc.calls)
	assert.Equal(t, []string{"allow/ok", "allow/ok", "hint/skipped"}, verdicts(tracker))
}

func TestExecutorAbortAsResult(t *testing.T) {
	tracker := toolguard.NewTracker(toolguard.Policy{})
	calc := &counting{Tool: tools.Calculator{}}
	model := &loopingModel{input: "2+2"}
	agent := agents.NewOpenAIFunctionsAgent(model,
		tglc.WrapAll(tracker, []tools.Tool{calc}, tglc.WithAbortAsResult()))
	executor := agents.NewExecutor(agent, agents.WithMaxIterations(6))

	_, err := chains.Run(context.Background(), executor, "What is 2+2?")

	// The tracker no longer stops the run: the executor's limit does.
	assert.ErrorIs(t, err, agents.ErrNotFinished)
	assert.Equal(t, 2, calc.calls)
	assert.Equal(t, []string{"allow/ok", "allow/ok", "hint/skipped", "abort/skipped", "abort/skipped", "abort/skipped"},
		verdicts(tracker))
	require.Len(t, model.seen, 5)
	for _, s := range model.seen[2:] {
		assert.True(t, strings.HasPrefix(s, toolguard.HintMarker), s)
	}
}

// A text agent (MRKL) driven by langchaingo's own fake LLM loops the same
// way and is stopped the same way.
func TestOneShotAgentWithFakeLLM(t *testing.T) {
	tracker := toolguard.NewTracker(toolguard.Policy{Action: toolguard.ActionAbort})
	calc := &counting{Tool: tools.Calculator{}}
	model := fake.NewFakeLLM([]string{"Thought: I should compute it.\nAction: calculator\nAction Input: 6*7"})
	agent := agents.NewOneShotAgent(model, tglc.WrapAll(tracker, []tools.Tool{calc}))
	executor := agents.NewExecutor(agent, agents.WithMaxIterations(20))

	_, err := chains.Run(context.Background(), executor, "What is 6*7?")

	assert.ErrorIs(t, err, toolguard.ErrLoop)
	assert.Equal(t, 2, calc.calls)
	assert.Equal(t, []string{"allow/ok", "allow/ok", "abort/skipped"}, verdicts(tracker))
}

// stepModel asks for the calculator with a new expression each time, so
// only the turn budget can end the run.
type stepModel struct{ n int }

func (m *stepModel) GenerateContent(_ context.Context, _ []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	m.n++
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		ToolCalls: []llms.ToolCall{{
			ID: fmt.Sprint(m.n), Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "calculator", Arguments: fmt.Sprintf(`{"__arg1":"%d+1"}`, m.n)},
		}},
	}}}, nil
}

func (m *stepModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

func TestExecutorBudget(t *testing.T) {
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4, NudgeRatio: 0.5})
	calc := &counting{Tool: tools.Calculator{}}
	agent := agents.NewOpenAIFunctionsAgent(&stepModel{}, tglc.WrapAll(tracker, []tools.Tool{calc}))
	executor := agents.NewExecutor(agent, agents.WithMaxIterations(20), agents.WithReturnIntermediateSteps())

	out, err := executor.Call(context.Background(), map[string]any{"input": "count"})

	assert.ErrorIs(t, err, toolguard.ErrBudgetExhausted)
	var budget *toolguard.BudgetError
	require.ErrorAs(t, err, &budget)
	assert.Equal(t, 4, budget.Limit)
	assert.Equal(t, 4, calc.calls)
	assert.Equal(t, toolguard.PhaseExhausted, tracker.Guidance().Phase)
	assert.Nil(t, out)
}

func TestWrapKeepsNameAndDescription(t *testing.T) {
	tracker := toolguard.NewTracker(toolguard.Policy{})
	calc := tools.Calculator{}
	w := tglc.Wrap(tracker, calc)
	assert.Equal(t, calc.Name(), w.Name())
	assert.Equal(t, calc.Description(), w.Description())

	assert.Nil(t, tglc.Wrap(tracker, nil))
	assert.Equal(t, tools.Tool(calc), tglc.Wrap(nil, calc))
	assert.Empty(t, tglc.WrapAll(tracker, nil))
}

func TestArgs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"query":"go"}`, `{"query":"go"}`},
		{`  {"a": 1}  `, `{"a": 1}`},
		{`2+2`, `{"input":"2+2"}`},
		{`["a"]`, `{"input":"[\"a\"]"}`},
		{`{"broken"`, `{"input":"{\"broken\""}`},
		{``, `{"input":""}`},
		{"\xff", `{"input":"\ufffd"}`},
	} {
		assert.JSONEq(t, tc.want, string(tglc.Args(tc.in)), "input %q", tc.in)
	}
}

// fixed is a tools.Tool with a scripted result.
type fixed struct {
	name string
	out  string
	err  error
	runs int
}

func (f *fixed) Name() string        { return f.name }
func (f *fixed) Description() string { return "test tool" }
func (f *fixed) Call(context.Context, string) (string, error) {
	f.runs++
	return f.out, f.err
}

func TestCallVerdicts(t *testing.T) {
	ctx := context.Background()
	tracker := toolguard.NewTracker(toolguard.Policy{})
	tool := &fixed{name: "lookup", out: "same"}
	w := tglc.Wrap(tracker, tool)

	for i := 0; i < 2; i++ {
		out, err := w.Call(ctx, "x")
		require.NoError(t, err)
		assert.Equal(t, "same", out)
	}
	out, err := w.Call(ctx, `{"input":"x"}`) // the same call, spelled as JSON
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, toolguard.HintMarker), out)
	assert.Contains(t, out, "identical parameters")

	out, err = w.Call(ctx, "x")
	assert.Empty(t, out)
	assert.ErrorIs(t, err, toolguard.ErrLoop)
	assert.Equal(t, 2, tool.runs)

	// A different input is a different call.
	out, err = w.Call(ctx, "y")
	require.NoError(t, err)
	assert.Equal(t, "same", out)
	assert.Equal(t, 3, tool.runs)
}

func TestToolErrorIsRecorded(t *testing.T) {
	tracker := toolguard.NewTracker(toolguard.Policy{})
	boom := errors.New("boom")
	w := tglc.Wrap(tracker, &fixed{name: "fails", err: boom})
	_, err := w.Call(context.Background(), "x")
	assert.ErrorIs(t, err, boom)
	ledger := tracker.Ledger()
	require.Len(t, ledger, 1)
	assert.True(t, ledger[0].Done && ledger[0].Failed)
}

func TestGuidanceIsAppended(t *testing.T) {
	ctx := context.Background()
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4, NudgeRatio: 0.5})
	w := tglc.Wrap(tracker, &fixed{name: "step", out: "ok"})

	var outs []string
	for i := 0; i < 4; i++ {
		out, err := w.Call(ctx, fmt.Sprint(i))
		require.NoError(t, err)
		outs = append(outs, out)
	}
	assert.Equal(t, "ok", outs[0])
	assert.Equal(t, "ok\n\nYou have used 2 of 4 tool calls. Start wrapping up.", outs[1])
	assert.Equal(t, "ok", outs[2], "the nudge is given once")
	assert.True(t, strings.HasPrefix(outs[3], "ok\n\nYou have used all 4 tool calls"), outs[3])

	_, err := w.Call(ctx, "5")
	assert.ErrorIs(t, err, toolguard.ErrBudgetExhausted)

	quiet := tglc.Wrap(toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 1}),
		&fixed{name: "step", out: "ok"}, tglc.WithoutGuidance())
	out, err := quiet.Call(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, "ok", out)
}

func TestConcurrentCalls(t *testing.T) {
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: -1})
	w := tglc.Wrap(tracker, tools.Calculator{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				_, _ = w.Call(context.Background(), fmt.Sprintf("%d+%d", i, j%3))
			}
		}(i)
	}
	wg.Wait()
	assert.Len(t, tracker.Ledger(), 160)
}

func TestEmptyToolName(t *testing.T) {
	tool := &fixed{name: "", out: "ran"}
	_, err := tglc.Wrap(toolguard.NewTracker(toolguard.Policy{}), tool).Call(context.Background(), "x")
	assert.ErrorIs(t, err, toolguard.ErrInvalidCall)
	assert.Zero(t, tool.runs)
}

// BenchmarkCall measures the guard's cost around a tool that does nothing.
func BenchmarkCall(b *testing.B) {
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: -1, MaxRepeats: -1, SessionLimit: -1})
	w := tglc.Wrap(tracker, &fixed{name: "noop", out: "ok"})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%1000 == 0 {
			tracker.Reset()
		}
		if _, err := w.Call(ctx, `{"q":"same"}`); err != nil {
			b.Fatal(err)
		}
	}
}
