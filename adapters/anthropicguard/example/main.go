// Command example runs an agent loop with the anthropic-sdk-go client and
// toolguard. The model is a fake Messages API server on loopback that
// keeps asking for the same tool call, so the program runs offline:
//
//	go run ./example
//
// The first conversation shows a loop stopped (the third identical call
// gets a hint, the fourth is aborted); the second shows the turn budget:
// a nudge, then tool_choice "none" and a request to summarize.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolguard/toolguard"
	anthropicguard "github.com/toolguard/toolguard/adapters/anthropicguard"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run plays both conversations and prints what happens.
func run(ctx context.Context, w io.Writer) error {
	fmt.Fprintln(w, "== a model that repeats the same call")
	srv := httptest.NewServer(newFakeModel(sameCall(false)))
	defer srv.Close()
	tracker := toolguard.NewTracker(toolguard.Policy{})
	answer, err := chat(ctx, newClient(srv.URL), tracker, "What is the weather in Paris?", sunny, w)
	report(w, answer, err)

	fmt.Fprintln(w, "== a turn that runs out of tool calls")
	srv2 := httptest.NewServer(newFakeModel(sameCall(false)))
	defer srv2.Close()
	tracker = toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4})
	answer, err = chat(ctx, newClient(srv2.URL), tracker, "Watch the weather in Paris.", changing(), w)
	report(w, answer, err)
	return nil
}

func report(w io.Writer, answer string, err error) {
	switch {
	case errors.Is(err, toolguard.ErrLoop):
		fmt.Fprintf(w, "stopped: %v\n", err)
	case err != nil:
		fmt.Fprintf(w, "failed: %v\n", err)
	default:
		fmt.Fprintf(w, "answer: %s\n", answer)
	}
}

// newClient returns the real anthropic-sdk-go client, pointed at the fake
// server.
func newClient(baseURL string) anthropic.Client {
	return anthropic.NewClient(
		option.WithBaseURL(baseURL+"/"),
		option.WithAPIKey("sk-ant-fake"),
		option.WithMaxRetries(0),
	)
}

// weatherTool is the one tool the model is offered.
var weatherTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "get_weather",
	Description: anthropic.String("The current weather in a city."),
	InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}},
		Required:   []string{"city"},
	},
}}

// sunny is a tool that always returns the same result.
func sunny(context.Context, toolguard.Call) (string, error) {
	return "sunny, 21 °C", nil
}

// changing returns a tool whose result changes at every call, so the
// repeats make progress and only the turn budget stops them.
func changing() func(context.Context, toolguard.Call) (string, error) {
	var mu sync.Mutex
	n := 0
	return func(context.Context, toolguard.Call) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("reading %d: %d °C", n, 18+n), nil
	}
}

// maxSteps bounds the loop whatever the model does.
const maxSteps = 20

// chat runs one user turn: it sends the conversation, runs the tool calls
// the model asks for through the tracker, and returns the model's answer.
// It stops with the error of an aborted call.
func chat(ctx context.Context, client anthropic.Client, tracker *toolguard.Tracker, prompt string, exec func(context.Context, toolguard.Call) (string, error), w io.Writer) (string, error) {
	// A harness that keeps one tracker for a session calls tracker.Reset()
	// here, on new user input; never for its own nudges.
	messages := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}
	told := toolguard.PhaseNormal
	for step := 0; step < maxSteps; step++ {
		g := tracker.Guidance()
		params := anthropic.MessageNewParams{
			Model:     anthropic.ModelClaudeHaiku4_5,
			MaxTokens: 1024,
			Messages:  messages,
			Tools:     []anthropic.ToolUnionParam{weatherTool},
		}
		if g.StripTools {
			anthropicguard.StripTools(&params)
		}
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			return "", err
		}
		messages = append(messages, msg.ToParam())
		round := anthropicguard.Check(ctx, tracker, *msg)
		if len(round.Calls) == 0 {
			return text(msg), nil
		}

		blocks := round.Run(ctx, exec)
		for i, c := range round.Calls {
			d := round.Decisions[i]
			if d.Skip() {
				fmt.Fprintf(w, "%s %s: %s, not run: %s\n", c.ID, c.Tool, d.Verdict, d.Reason)
			} else {
				fmt.Fprintf(w, "%s %s: ran\n", c.ID, c.Tool)
			}
		}
		if g := tracker.Guidance(); g.Phase != told {
			told = g.Phase
			if b, ok := anthropicguard.GuidanceBlock(g); ok {
				blocks = append(blocks, b)
				fmt.Fprintf(w, "harness (%s): %s\n", g.Phase, g.Message)
			}
		}
		messages = append(messages, anthropic.NewUserMessage(blocks...))
		// A budget refusal while tools were allowed is a parallel batch that
		// overran the budget: the wind-down follows. Anything else aborted
		// stops the turn.
		if err := round.Err(); err != nil && (g.StripTools || !errors.Is(err, toolguard.ErrBudgetExhausted)) {
			return "", err
		}
	}
	return "", errors.New("example: too many steps")
}

// text returns the text blocks of a message.
func text(msg *anthropic.Message) string {
	var b strings.Builder
	for _, c := range msg.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// fakeModel is a Messages API server that plays a model by a script. It
// keeps the request bodies it was sent.
type fakeModel struct {
	script func(step int, toolsAllowed bool) []fakeCall

	mu       sync.Mutex
	requests [][]byte
}

// fakeCall is a tool call the fake model asks for.
type fakeCall struct {
	Tool  string
	Input string
}

func newFakeModel(script func(step int, toolsAllowed bool) []fakeCall) *fakeModel {
	return &fakeModel{script: script}
}

// sameCall is a model that asks for the same weather lookup at every step.
// Once tool_choice is "none" it answers with a summary, unless stubborn,
// in which case it asks for the tool anyway.
func sameCall(stubborn bool) func(int, bool) []fakeCall {
	return func(_ int, toolsAllowed bool) []fakeCall {
		if !toolsAllowed && !stubborn {
			return nil
		}
		return []fakeCall{{Tool: "get_weather", Input: `{"city":"Paris"}`}}
	}
}

// Requests returns the bodies of the requests received so far.
func (m *fakeModel) Requests() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.requests...)
}

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	var req struct {
		Tools      []json.RawMessage `json:"tools"`
		ToolChoice struct {
			Type string `json:"type"`
		} `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, body)
	step := len(m.requests)
	m.mu.Unlock()

	var content []any
	stop := "tool_use"
	if calls := m.script(step, len(req.Tools) > 0 && req.ToolChoice.Type != "none"); len(calls) > 0 {
		for i, c := range calls {
			content = append(content, map[string]any{
				"type":  "tool_use",
				"id":    fmt.Sprintf("toolu_%d_%d", step, i+1),
				"name":  c.Tool,
				"input": json.RawMessage(c.Input),
			})
		}
	} else {
		stop = "end_turn"
		content = append(content, map[string]any{"type": "text", "text": "Summary: " + summarize(body)})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id":            fmt.Sprintf("msg_%d", step),
		"type":          "message",
		"role":          "assistant",
		"model":         "fake-model",
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage":         map[string]any{"input_tokens": 1, "output_tokens": 1},
	})
}

// summarize plays the model's answer: the last tool result it was given.
func summarize(body []byte) string {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type    string `json:"type"`
				IsError bool   `json:"is_error"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	for i := len(req.Messages) - 1; i >= 0; i-- {
		blocks := req.Messages[i].Content
		for j := len(blocks) - 1; j >= 0; j-- {
			if b := blocks[j]; b.Type == "tool_result" && !b.IsError && len(b.Content) > 0 {
				return "the last reading was " + b.Content[0].Text + "."
			}
		}
	}
	return "no readings."
}
