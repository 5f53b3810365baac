// Command example runs Genkit's generate loop with a scripted model that
// keeps asking for the same tool call, guarded by toolguard. It runs
// offline: no plugin, no network.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/genkitguard"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// WeatherInput is the weather tool's input.
type WeatherInput struct {
	City string `json:"city"`
}

func run(w io.Writer) error {
	ctx := context.Background()
	g := genkit.Init(ctx)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	weather := genkitguard.DefineGuardedTool(g, tracker, "weather", "Current weather of a city.",
		func(_ *ai.ToolContext, in WeatherInput) (string, error) {
			return "sunny in " + in.City, nil
		})

	for i, stubborn := range []bool{false, true} {
		if i > 0 {
			tracker.Reset() // a new user input starts a new turn
		}
		m := &scriptedModel{w: w, stubborn: stubborn}
		model := genkit.DefineModelAction(g, fmt.Sprint("example/scripted-", i),
			&ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}}, m.generate)
		if stubborn {
			fmt.Fprintln(w, "== a model that ignores the hint")
		} else {
			fmt.Fprintln(w, "== a model that heeds the hint")
		}
		resp, err := genkit.Generate(ctx, g, ai.WithModel(model),
			ai.WithPrompt("Weather in Paris?"), ai.WithTools(weather), ai.WithMaxTurns(10))
		if err != nil {
			// Genkit flattens tool errors into its own; the ledger says why.
			l := tracker.Ledger()
			last := l[len(l)-1]
			fmt.Fprintf(w, "run stopped: %s %s by %s\n", last.Tool, last.Verdict, last.Reason)
			continue
		}
		fmt.Fprintf(w, "answer: %s\n", resp.Text())
	}
	fmt.Fprintln(w, "== ledger")
	for _, e := range tracker.Ledger() {
		fmt.Fprintf(w, "turn %d  %-7s %-5s %-9s %s\n", e.Turn, e.Tool, e.Verdict, e.Reason, e.Status())
	}
	return nil
}

// scriptedModel asks for the weather in Paris until a tool result is a
// toolguard hint; a stubborn one never stops asking.
type scriptedModel struct {
	w        io.Writer
	stubborn bool
}

func (m *scriptedModel) generate(_ context.Context, req *ai.ModelRequest, _ any, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	hinted := false
	for _, p := range last.Content {
		if p.IsToolResponse() {
			out := fmt.Sprint(p.ToolResponse.Output)
			fmt.Fprintf(m.w, "  tool result: %s\n", out)
			hinted = hinted || strings.HasPrefix(out, toolguard.HintMarker)
		}
	}
	if hinted && !m.stubborn {
		return &ai.ModelResponse{Message: ai.NewModelTextMessage("It is sunny in Paris.")}, nil
	}
	fmt.Fprintln(m.w, "  model calls weather(Paris)")
	return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{
		Name: "weather", Input: map[string]any{"city": "Paris"},
	}))}, nil
}
