package einoguard_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	einoguard "github.com/toolguard/toolguard/adapters/einoguard"
)

// scriptedModel answers each request with next(n, messages), and keeps
// what it was sent: the messages and the tools bound for that request.
type scriptedModel struct {
	next  func(n int, in []*schema.Message) *schema.Message
	mu    sync.Mutex
	sent  [][]*schema.Message
	tools [][]*schema.ToolInfo
	bound []*schema.ToolInfo
}

func (m *scriptedModel) Generate(_ context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, in)
	m.tools = append(m.tools, model.GetCommonOptions(&model.Options{Tools: m.bound}, opts...).Tools)
	return m.next(len(m.sent), in), nil
}

func (m *scriptedModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *scriptedModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sent)
}

// boundModel is the scriptedModel as a model.ToolCallingChatModel whose
// WithTools binds the tools in place, so one record holds every request.
type boundModel struct{ *scriptedModel }

func (b boundModel) WithTools(ts []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	b.mu.Lock()
	b.bound = ts
	b.mu.Unlock()
	return b, nil
}

func lookupCall(n, id int) *schema.Message {
	return schema.AssistantMessage("", []schema.ToolCall{toolCall(fmt.Sprint("call_", n), "lookup", fmt.Sprintf(`{"id":%d}`, id))})
}

func newChatAgent(t *testing.T, m *scriptedModel, tracker *toolguard.Tracker, runs *atomic.Int64) *adk.Runner {
	t.Helper()
	agent, err := adk.NewChatModelAgent(context.Background(), &adk.ChatModelAgentConfig{
		Name:          "assistant",
		Description:   "Looks records up.",
		Instruction:   "Use the lookup tool.",
		Model:         boundModel{m},
		ToolsConfig:   adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{lookupTool(t, runs)}}},
		MaxIterations: 40,
		Handlers:      []adk.ChatModelAgentMiddleware{einoguard.AgentMiddleware(tracker)},
	})
	require.NoError(t, err)
	return adk.NewRunner(context.Background(), adk.RunnerConfig{Agent: agent})
}

// drain runs a query and returns the tool messages and the first error.
func drain(r *adk.Runner, query string) (toolMsgs []*schema.Message, err error) {
	it := r.Query(context.Background(), query)
	for {
		ev, ok := it.Next()
		if !ok {
			return toolMsgs, err
		}
		if ev.Err != nil && err == nil {
			err = ev.Err
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil {
			if msg, e := ev.Output.MessageOutput.GetMessage(); e == nil && msg != nil && msg.Role == schema.Tool {
				toolMsgs = append(toolMsgs, msg)
			}
		}
	}
}

func TestChatModelAgentHintThenAnswer(t *testing.T) {
	var runs atomic.Int64
	tracker := toolguard.NewTracker(toolguard.Policy{})
	m := &scriptedModel{next: func(n int, in []*schema.Message) *schema.Message {
		if last := in[len(in)-1]; last.Role == schema.Tool && strings.HasPrefix(last.Content, toolguard.HintMarker) {
			return schema.AssistantMessage("record 1", nil)
		}
		return lookupCall(n, 1)
	}}
	r := newChatAgent(t, m, tracker, &runs)

	msgs, err := drain(r, "Find record 1.")
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	assert.True(t, strings.HasPrefix(msgs[2].Content, toolguard.HintMarker), msgs[2].Content)
	assert.Equal(t, "call_3", msgs[2].ToolCallID)
	assert.EqualValues(t, 2, runs.Load())
	assert.Equal(t, 4, m.calls())
	ids := []string{}
	for _, e := range tracker.Ledger() {
		ids = append(ids, e.CallID)
	}
	assert.Equal(t, []string{"call_1", "call_2", "call_3"}, ids, "the tool call ids")

	// A new run is a new turn: the same lookup runs again.
	msgs, err = drain(r, "Again.")
	require.NoError(t, err)
	assert.Equal(t, "record 1", msgs[0].Content)
	assert.EqualValues(t, 4, runs.Load())
}

func TestChatModelAgentAbortEndsTheRun(t *testing.T) {
	var runs atomic.Int64
	tracker := toolguard.NewTracker(toolguard.Policy{})
	m := &scriptedModel{next: func(n int, _ []*schema.Message) *schema.Message { return lookupCall(n, 1) }}
	r := newChatAgent(t, m, tracker, &runs)

	_, err := drain(r, "Find record 1.")
	require.Error(t, err)
	assert.ErrorIs(t, err, toolguard.ErrLoop)
	var le *toolguard.LoopError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "lookup", le.Tool)
	assert.EqualValues(t, 2, runs.Load())
	assert.Equal(t, 4, m.calls(), "stopped at the fourth model call, not at MaxIterations")
}

func TestChatModelAgentWindDownDropsTools(t *testing.T) {
	var runs atomic.Int64
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4})
	m := &scriptedModel{next: func(n int, in []*schema.Message) *schema.Message {
		if strings.Contains(in[len(in)-1].Content, "Summarize your work") {
			return schema.AssistantMessage("summary", nil)
		}
		return lookupCall(n, n) // a new record each time: no repeats
	}}
	r := newChatAgent(t, m, tracker, &runs)

	msgs, err := drain(r, "Look everything up.")
	require.NoError(t, err)
	assert.Len(t, msgs, 4)
	assert.EqualValues(t, 4, runs.Load())
	require.Equal(t, 5, m.calls())
	for i := 0; i < 5; i++ {
		last := m.sent[i][len(m.sent[i])-1]
		switch {
		case i < 3:
			assert.Len(t, m.tools[i], 1, "request %d has the tool", i)
			assert.NotContains(t, last.Content, "wrapping up")
		case i == 3:
			assert.Len(t, m.tools[i], 1, "the nudge keeps the tools")
			assert.Equal(t, schema.User, last.Role)
			assert.Contains(t, last.Content, "Start wrapping up")
		default:
			assert.Empty(t, m.tools[i], "the wind-down request has no tools")
			assert.Equal(t, schema.User, last.Role)
			assert.Contains(t, last.Content, "Summarize your work")
		}
	}
	// The nudge was said once, though two requests were made in that phase.
	nudges := 0
	for _, msg := range m.sent[4] {
		if strings.Contains(msg.Content, "Start wrapping up") {
			nudges++
		}
	}
	assert.Equal(t, 1, nudges)
}
