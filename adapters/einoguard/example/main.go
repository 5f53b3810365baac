// Command example runs an eino ReAct agent whose model keeps asking for the
// same lookups, several at a time, guarded by toolguard's tools-node
// middleware. It runs offline: the model is scripted.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/toolguard/toolguard"
	einoguard "github.com/toolguard/toolguard/adapters/einoguard"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type weatherIn struct {
	City string `json:"city"`
}

func run(w io.Writer) error {
	ctx := context.Background()
	weather, err := utils.InferTool("weather", "Current weather of a city.",
		func(_ context.Context, in weatherIn) (string, error) {
			return "sunny in " + in.City, nil
		})
	if err != nil {
		return err
	}

	tracker := toolguard.NewTracker(toolguard.Policy{})
	for i, stubborn := range []bool{false, true} {
		if i > 0 {
			tracker.Reset() // a new user input starts a new turn
		}
		agent, err := react.NewAgent(ctx, &react.AgentConfig{
			ToolCallingModel: &scriptedModel{w: w, stubborn: stubborn},
			ToolsConfig: compose.ToolsNodeConfig{
				Tools:               []tool.BaseTool{weather},
				ToolCallMiddlewares: []compose.ToolMiddleware{einoguard.Middleware(tracker)},
				ExecuteSequentially: true, // a stable transcript; parallel works the same
			},
			MaxStep: 40,
		})
		if err != nil {
			return err
		}
		if stubborn {
			fmt.Fprintln(w, "== a model that ignores the hint")
		} else {
			fmt.Fprintln(w, "== a model that heeds the hint")
		}
		msg, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage("Weather in Paris and London?")})
		switch {
		case errors.Is(err, toolguard.ErrLoop):
			var loop *toolguard.LoopError
			if errors.As(err, &loop) {
				fmt.Fprintf(w, "run stopped, loop error: tool %s, reason %s\n", loop.Tool, loop.Reason)
			}
		case err != nil:
			return err
		default:
			fmt.Fprintf(w, "answer: %s\n", msg.Content)
		}
	}
	fmt.Fprintln(w, "== ledger")
	for _, e := range tracker.Ledger() {
		fmt.Fprintf(w, "turn %d  %-5s %-7s %-5s %-9s %s\n", e.Turn, e.CallID, e.Tool, e.Verdict, e.Reason, e.Status())
	}
	return nil
}

// scriptedModel asks for the weather in Paris and in London in each
// message until a tool result is a toolguard hint; a stubborn one never
// stops asking.
type scriptedModel struct {
	w        io.Writer
	stubborn bool
	mu       sync.Mutex
	n        int
}

func (m *scriptedModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	first := len(in)
	for first > 0 && in[first-1].Role == schema.Tool {
		first--
	}
	hinted := false
	for _, msg := range in[first:] {
		fmt.Fprintf(m.w, "  %s -> %s\n", msg.ToolCallID, msg.Content)
		hinted = hinted || strings.HasPrefix(msg.Content, toolguard.HintMarker)
	}
	if hinted && !m.stubborn {
		return schema.AssistantMessage("It is sunny in Paris and in London.", nil), nil
	}
	var calls []schema.ToolCall
	for _, city := range []string{"Paris", "London"} {
		m.n++
		calls = append(calls, schema.ToolCall{
			ID: fmt.Sprint("c", m.n), Type: "function",
			Function: schema.FunctionCall{Name: "weather", Arguments: fmt.Sprintf(`{"city":%q}`, city)},
		})
	}
	fmt.Fprintf(m.w, "  model calls weather(Paris) as %s and weather(London) as %s\n", calls[0].ID, calls[1].ID)
	return schema.AssistantMessage("", calls), nil
}

func (m *scriptedModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *scriptedModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}
