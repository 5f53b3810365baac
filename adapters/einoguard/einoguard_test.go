package einoguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	einoguard "github.com/toolguard/toolguard/adapters/einoguard"
)

type lookupIn struct {
	ID int `json:"id"`
}

// lookupTool is a real eino tool that counts its runs.
func lookupTool(t *testing.T, runs *atomic.Int64) tool.InvokableTool {
	t.Helper()
	it, err := utils.InferTool("lookup", "Looks a record up by id.",
		func(_ context.Context, in lookupIn) (string, error) {
			runs.Add(1)
			return fmt.Sprintf("record %d", in.ID), nil
		})
	require.NoError(t, err)
	return it
}

func toolCall(id, name, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}
}

func newNode(t *testing.T, tracker *toolguard.Tracker, tools []tool.BaseTool, opts ...einoguard.Option) *compose.ToolsNode {
	t.Helper()
	node, err := compose.NewToolNode(context.Background(), &compose.ToolsNodeConfig{
		Tools:               tools,
		ToolCallMiddlewares: []compose.ToolMiddleware{einoguard.Middleware(tracker, opts...)},
	})
	require.NoError(t, err)
	return node
}

// skipText reports whether s is the text of a refused call: a loop hint
// or a turn budget refusal.
func skipText(s string) bool {
	return strings.HasPrefix(s, toolguard.HintMarker) || strings.HasPrefix(s, "[budget-exhausted]")
}

func hinted(msgs []*schema.Message) (ids []string) {
	for _, m := range msgs {
		if skipText(m.Content) {
			ids = append(ids, m.ToolCallID)
		}
	}
	return ids
}

// One model message with several tool calls, some identical, run
// concurrently by a real ToolsNode: exactly the allowed number of each run,
// whatever the interleaving. Run with -race.
func TestToolsNodeParallelCalls(t *testing.T) {
	for iter := 0; iter < 50; iter++ {
		var runs atomic.Int64
		tracker := toolguard.NewTracker(toolguard.Policy{})
		node := newNode(t, tracker, []tool.BaseTool{lookupTool(t, &runs)})
		msg := schema.AssistantMessage("", []schema.ToolCall{
			toolCall("a1", "lookup", `{"id":1}`),
			toolCall("a2", "lookup", `{"id": 1}`),
			toolCall("a3", "lookup", `{"id":1}`),
			toolCall("b1", "lookup", `{"id":2}`),
			toolCall("b2", "lookup", `{"id":2}`),
			toolCall("c1", "lookup", `{"id":3}`),
		})

		out, err := node.Invoke(context.Background(), msg)
		require.NoError(t, err)
		require.Len(t, out, 6)
		for i, m := range out {
			assert.Equal(t, msg.ToolCalls[i].ID, m.ToolCallID)
		}
		// Two of the three identical id-1 calls run; the third is hinted.
		h := hinted(out)
		require.Len(t, h, 1, "iteration %d", iter)
		assert.Contains(t, []string{"a1", "a2", "a3"}, h[0])
		assert.EqualValues(t, 5, runs.Load())
		for _, m := range out {
			if !strings.HasPrefix(m.Content, toolguard.HintMarker) {
				assert.Regexp(t, `^record \d$`, m.Content)
			}
		}

		// Every call is in the ledger under its schema.ToolCall ID.
		ids := map[string]string{}
		for _, e := range tracker.Ledger() {
			ids[e.CallID] = e.Status()
		}
		assert.Len(t, ids, 6)
		assert.Equal(t, "skipped", ids[h[0]])

		// The model insists: the same call never runs again and soon fails
		// the node with the loop error. (When the first id-1 result arrived
		// after the hint was given, that result was new and the tracker
		// hints once more before it aborts.)
		err = nil
		for i := 4; i <= 5 && err == nil; i++ {
			var again []*schema.Message
			again, err = node.Invoke(context.Background(), schema.AssistantMessage("", []schema.ToolCall{
				toolCall(fmt.Sprint("a", i), "lookup", `{"id":1}`),
			}))
			if err == nil {
				assert.Len(t, hinted(again), 1)
			}
		}
		require.Error(t, err)
		assert.ErrorIs(t, err, toolguard.ErrLoop)
		assert.EqualValues(t, 5, runs.Load())
	}
}

func TestToolsNodeBudget(t *testing.T) {
	var runs atomic.Int64
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 3})
	node := newNode(t, tracker, []tool.BaseTool{lookupTool(t, &runs)})
	var calls []schema.ToolCall
	for i := 0; i < 5; i++ {
		calls = append(calls, toolCall(fmt.Sprint("c", i), "lookup", fmt.Sprintf(`{"id":%d}`, i)))
	}

	_, err := node.Invoke(context.Background(), schema.AssistantMessage("", calls))
	assert.ErrorIs(t, err, toolguard.ErrBudgetExhausted)
	assert.EqualValues(t, 3, runs.Load(), "parallel calls past the budget are refused")

	// With WithAbortAsResult the refused calls answer with the message.
	runs.Store(0)
	tracker = toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 3})
	node = newNode(t, tracker, []tool.BaseTool{lookupTool(t, &runs)}, einoguard.WithAbortAsResult())
	out, err := node.Invoke(context.Background(), schema.AssistantMessage("", calls))
	require.NoError(t, err)
	assert.EqualValues(t, 3, runs.Load())
	assert.Len(t, hinted(out), 2)
	var guidance int
	for _, m := range out {
		if strings.Contains(m.Content, "Summarize your work") && !skipText(m.Content) {
			guidance++ // the call that used the last slot carries the wind-down text
		}
	}
	assert.Equal(t, 1, guidance)
	assert.GreaterOrEqual(t, tracker.Guidance().Phase, toolguard.PhaseWindDown)
}

func TestToolsNodeStream(t *testing.T) {
	var runs atomic.Int64
	st, err := utils.InferStreamTool("poll", "Streams a status.",
		func(_ context.Context, in lookupIn) (*schema.StreamReader[string], error) {
			runs.Add(1)
			return schema.StreamReaderFromArray([]string{"status ", fmt.Sprint(in.ID)}), nil
		})
	require.NoError(t, err)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	node := newNode(t, tracker, []tool.BaseTool{st})

	collect := func(id string) string {
		sr, err := node.Stream(context.Background(), schema.AssistantMessage("", []schema.ToolCall{
			toolCall(id, "poll", `{"id":7}`),
		}))
		require.NoError(t, err)
		defer sr.Close()
		var b strings.Builder
		for {
			msgs, err := sr.Recv()
			if errors.Is(err, io.EOF) {
				return b.String()
			}
			require.NoError(t, err)
			b.WriteString(msgs[0].Content)
		}
	}
	assert.Equal(t, "status 7", collect("s1"))
	assert.Equal(t, "status 7", collect("s2"))
	got := collect("s3")
	assert.True(t, strings.HasPrefix(got, toolguard.HintMarker), got)
	assert.EqualValues(t, 2, runs.Load())

	ledger := tracker.Ledger()
	require.Len(t, ledger, 3)
	assert.True(t, ledger[0].Done && !ledger[0].Failed, "recorded when the stream ended")
	assert.True(t, ledger[0].NewResult)
	assert.False(t, ledger[1].NewResult, "the same streamed result is no progress")
	assert.NotEqual(t, toolguard.Allow, ledger[2].Verdict)

	// Invoke on a streaming tool goes through the same middleware.
	_, err = node.Invoke(context.Background(), schema.AssistantMessage("", []schema.ToolCall{
		toolCall("s4", "poll", `{"id":7}`),
	}))
	assert.ErrorIs(t, err, toolguard.ErrLoop)
}

func TestToolsNodeStreamClosedEarly(t *testing.T) {
	st, err := utils.InferStreamTool("tail", "Streams lines.",
		func(_ context.Context, _ lookupIn) (*schema.StreamReader[string], error) {
			return schema.StreamReaderFromArray([]string{"a", "b", "c"}), nil
		})
	require.NoError(t, err)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	node := newNode(t, tracker, []tool.BaseTool{st})
	sr, err := node.Stream(context.Background(), schema.AssistantMessage("", []schema.ToolCall{toolCall("t1", "tail", `{}`)}))
	require.NoError(t, err)
	_, err = sr.Recv()
	require.NoError(t, err)
	sr.Close()
	// What the call produced is recorded once the closed reader is
	// collected.
	require.Eventually(t, func() bool {
		runtime.GC()
		l := tracker.Ledger()
		return len(l) == 1 && l[0].Done && !l[0].Failed
	}, 5e9, 1e6)
}

func TestToolsNodeEnhanced(t *testing.T) {
	var runs atomic.Int64
	et, err := utils.InferEnhancedTool("snapshot", "Returns an image.",
		func(_ context.Context, _ lookupIn) (*schema.ToolResult, error) {
			runs.Add(1)
			return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: "same"}}}, nil
		})
	require.NoError(t, err)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	node := newNode(t, tracker, []tool.BaseTool{et})
	var last []*schema.Message
	for i := 0; i < 3; i++ {
		last, err = node.Invoke(context.Background(), schema.AssistantMessage("", []schema.ToolCall{
			toolCall(fmt.Sprint("e", i), "snapshot", `{"id":1}`),
		}))
		require.NoError(t, err)
	}
	assert.EqualValues(t, 2, runs.Load())
	require.Len(t, last, 1)
	require.NotEmpty(t, last[0].UserInputMultiContent)
	assert.True(t, strings.HasPrefix(last[0].UserInputMultiContent[0].Text, toolguard.HintMarker))
}

func TestWrapInvokable(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int64
	inner := lookupTool(t, &runs)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	w := einoguard.WrapInvokable(tracker, inner)

	want, err := inner.Info(ctx)
	require.NoError(t, err)
	got, err := w.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	for i := 0; i < 2; i++ {
		out, err := w.InvokableRun(ctx, `{"id":4}`)
		require.NoError(t, err)
		assert.Equal(t, "record 4", out)
	}
	out, err := w.InvokableRun(ctx, `{ "id" : 4 }`)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, toolguard.HintMarker), out)
	_, err = w.InvokableRun(ctx, `{"id":4}`)
	var loop *toolguard.LoopError
	require.ErrorAs(t, err, &loop)
	assert.Equal(t, "lookup", loop.Tool)
	assert.EqualValues(t, 2, runs.Load())

	typ, ok := components.GetType(w)
	assert.True(t, ok)
	assert.Equal(t, "Lookup", typ, "the wrapped tool's type names it in callbacks")
	assert.False(t, components.IsCallbacksEnabled(w))

	assert.Nil(t, einoguard.WrapInvokable(tracker, nil))
	assert.Equal(t, inner, einoguard.WrapInvokable(nil, inner))
}

// A wrapped tool in a plain ToolsNode sees the schema.ToolCall ID.
func TestWrapInvokableCallID(t *testing.T) {
	var runs atomic.Int64
	tracker := toolguard.NewTracker(toolguard.Policy{})
	node, err := compose.NewToolNode(context.Background(), &compose.ToolsNodeConfig{
		Tools: []tool.BaseTool{einoguard.WrapInvokable(tracker, lookupTool(t, &runs))},
	})
	require.NoError(t, err)
	_, err = node.Invoke(context.Background(), schema.AssistantMessage("", []schema.ToolCall{
		toolCall("call_x", "lookup", `{"id":1}`),
		toolCall("call_y", "lookup", `{"id":2}`),
	}))
	require.NoError(t, err)
	var ids []string
	for _, e := range tracker.Ledger() {
		ids = append(ids, e.CallID)
		assert.True(t, e.Done && !e.Failed)
	}
	assert.ElementsMatch(t, []string{"call_x", "call_y"}, ids)
}

type failingInfo struct{ tool.InvokableTool }

func (failingInfo) Info(context.Context) (*schema.ToolInfo, error) { return nil, errors.New("no info") }

func TestWrapInvokableInfoError(t *testing.T) {
	var runs atomic.Int64
	w := einoguard.WrapInvokable(toolguard.NewTracker(toolguard.Policy{}), failingInfo{lookupTool(t, &runs)})
	typ, _ := components.GetType(w)
	assert.Equal(t, "failingInfo", typ, "without a Typer, the type name")
	_, err := w.InvokableRun(context.Background(), `{}`)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "toolguard/einoguard: "), err.Error())
	assert.Zero(t, runs.Load())
}

func TestNilTrackerMiddleware(t *testing.T) {
	assert.Equal(t, compose.ToolMiddleware{}, einoguard.Middleware(nil))
}

// loopModel is a model.ToolCallingChatModel that asks for the same lookup
// on every turn; with giveUp it answers once it is sent a hint.
type loopModel struct {
	giveUp bool
	mu     sync.Mutex
	turns  int
}

func (m *loopModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns++
	if last := in[len(in)-1]; m.giveUp && last.Role == schema.Tool && strings.HasPrefix(last.Content, toolguard.HintMarker) {
		return schema.AssistantMessage("Record 1 is \"record 1\".", nil), nil
	}
	return schema.AssistantMessage("", []schema.ToolCall{toolCall(fmt.Sprint("call_", m.turns), "lookup", `{"id":1}`)}), nil
}

func (m *loopModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *loopModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

func newAgent(t *testing.T, m model.ToolCallingChatModel, tracker *toolguard.Tracker, runs *atomic.Int64) *react.Agent {
	t.Helper()
	agent, err := react.NewAgent(context.Background(), &react.AgentConfig{
		ToolCallingModel: m,
		ToolsConfig: compose.ToolsNodeConfig{
			Tools:               []tool.BaseTool{lookupTool(t, runs)},
			ToolCallMiddlewares: []compose.ToolMiddleware{einoguard.Middleware(tracker)},
		},
		MaxStep: 40,
	})
	require.NoError(t, err)
	return agent
}

func TestReactAgentLoopIsStopped(t *testing.T) {
	var runs atomic.Int64
	tracker := toolguard.NewTracker(toolguard.Policy{})
	m := &loopModel{}
	agent := newAgent(t, m, tracker, &runs)

	_, err := agent.Generate(context.Background(), []*schema.Message{schema.UserMessage("Find record 1.")})

	require.Error(t, err)
	assert.ErrorIs(t, err, toolguard.ErrLoop)
	assert.EqualValues(t, 2, runs.Load())
	assert.Equal(t, 4, m.turns, "stopped at the fourth model turn, not at MaxStep")
}

func TestReactAgentFinishesAfterHint(t *testing.T) {
	var runs atomic.Int64
	tracker := toolguard.NewTracker(toolguard.Policy{})
	agent := newAgent(t, &loopModel{giveUp: true}, tracker, &runs)

	out, err := agent.Generate(context.Background(), []*schema.Message{schema.UserMessage("Find record 1.")})

	require.NoError(t, err)
	assert.Equal(t, "Record 1 is \"record 1\".", out.Content)
	assert.EqualValues(t, 2, runs.Load())
}
