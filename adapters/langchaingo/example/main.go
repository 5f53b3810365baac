// Command example runs a langchaingo agent whose model keeps asking for the
// same calculator call, guarded by toolguard. It runs offline: the model is
// scripted.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard"
	tglc "github.com/toolguard/toolguard/adapters/langchaingo"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run asks the question twice: once with a model that heeds the hint, once
// with one that ignores it and is stopped.
func run(w io.Writer) error {
	ctx := context.Background()
	tracker := toolguard.NewTracker(toolguard.Policy{})
	guarded := tglc.WrapAll(tracker, []tools.Tool{tools.Calculator{}})

	for i, stubborn := range []bool{false, true} {
		if i > 0 {
			tracker.Reset() // a new user input starts a new turn
		}
		agent := agents.NewOpenAIFunctionsAgent(&scriptedModel{w: w, stubborn: stubborn}, guarded)
		executor := agents.NewExecutor(agent, agents.WithMaxIterations(10))

		if stubborn {
			fmt.Fprintln(w, "== a model that ignores the hint")
		} else {
			fmt.Fprintln(w, "== a model that heeds the hint")
		}
		answer, err := chains.Run(ctx, executor, "What is 6*7?")
		switch {
		case errors.Is(err, toolguard.ErrLoop):
			fmt.Fprintf(w, "run stopped: %v\n", err)
		case err != nil:
			return err
		default:
			fmt.Fprintf(w, "answer: %s\n", answer)
		}
	}

	fmt.Fprintln(w, "== ledger")
	for _, e := range tracker.Ledger() {
		fmt.Fprintf(w, "turn %d  %-10s %-5s %-9s %s\n", e.Turn, e.Tool, e.Verdict, e.Reason, e.Status())
	}
	return nil
}

// scriptedModel is an llms.Model that asks for calculator("6*7") until a
// tool result is a toolguard hint; a stubborn one never stops asking.
type scriptedModel struct {
	w        io.Writer
	stubborn bool
	n        int
}

func (m *scriptedModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	var last string
	for _, mc := range msgs {
		for _, p := range mc.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				last = r.Content
			}
		}
	}
	if last != "" {
		fmt.Fprintf(m.w, "  tool result: %s\n", last)
	}
	if !m.stubborn && strings.HasPrefix(last, toolguard.HintMarker) {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "6*7 is 42."}}}, nil
	}
	m.n++
	args, _ := json.Marshal(map[string]string{"__arg1": "6*7"})
	fmt.Fprintf(m.w, "  model calls calculator(6*7)\n")
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		ToolCalls: []llms.ToolCall{{
			ID: fmt.Sprint("call_", m.n), Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "calculator", Arguments: string(args)},
		}},
	}}}, nil
}

func (m *scriptedModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}
