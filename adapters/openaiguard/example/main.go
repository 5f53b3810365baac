// Command example runs an agent loop with the openai-go client and
// toolguard. The model is a fake Chat Completions server on loopback that
// keeps asking for the same tool call, so the program runs offline:
//
//	go run ./example
//
// The first conversation shows a loop stopped (the third identical call
// gets a hint, the fourth is aborted); the second shows the turn budget:
// a nudge, then the tools are stripped and the model is asked for a
// summary.
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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolguard/toolguard"
	openaiguard "github.com/toolguard/toolguard/adapters/openaiguard"
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
	model := newFakeModel(sameCall(false))
	srv := httptest.NewServer(model)
	defer srv.Close()
	tracker := toolguard.NewTracker(toolguard.Policy{})
	answer, err := chat(ctx, newClient(srv.URL), tracker, "What is the weather in Paris?", sunny, w)
	report(w, answer, err)

	fmt.Fprintln(w, "== a turn that runs out of tool calls")
	model2 := newFakeModel(sameCall(false))
	srv2 := httptest.NewServer(model2)
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

// newClient returns the real openai-go client, pointed at the fake server.
func newClient(baseURL string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(baseURL+"/v1/"),
		option.WithAPIKey("sk-fake"),
		option.WithMaxRetries(0),
	)
}

// weatherTool is the one tool the model is offered.
var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("The current weather in a city."),
	Parameters: shared.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []string{"city"},
	},
})

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
func chat(ctx context.Context, client openai.Client, tracker *toolguard.Tracker, prompt string, exec func(context.Context, toolguard.Call) (string, error), w io.Writer) (string, error) {
	// A harness that keeps one tracker for a session calls tracker.Reset()
	// here, on new user input; never for its own nudges.
	messages := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}
	told := toolguard.PhaseNormal
	for step := 0; step < maxSteps; step++ {
		g := tracker.Guidance()
		params := openai.ChatCompletionNewParams{
			Model:    openai.ChatModelGPT5_4Mini,
			Messages: messages,
			Tools:    []openai.ChatCompletionToolUnionParam{weatherTool},
		}
		if g.StripTools {
			openaiguard.StripTools(&params)
		}
		completion, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return "", err
		}
		if len(completion.Choices) == 0 {
			return "", errors.New("example: the model returned no choices")
		}
		msg := completion.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}

		messages = append(messages, msg.ToParam())
		round := openaiguard.Check(ctx, tracker, msg)
		messages = append(messages, round.Run(ctx, exec)...)
		for i, c := range round.Calls {
			d := round.Decisions[i]
			if d.Skip() {
				fmt.Fprintf(w, "%s %s: %s, not run: %s\n", c.ID, c.Tool, d.Verdict, d.Reason)
			} else {
				fmt.Fprintf(w, "%s %s: ran\n", c.ID, c.Tool)
			}
		}
		// A budget refusal while tools were offered is a parallel batch that
		// overran the budget: the wind-down below follows. Anything else
		// aborted stops the turn.
		if err := round.Err(); err != nil && (g.StripTools || !errors.Is(err, toolguard.ErrBudgetExhausted)) {
			return "", err
		}
		if g := tracker.Guidance(); g.Phase != told {
			told = g.Phase
			if m, ok := openaiguard.GuidanceMessage(g); ok {
				messages = append(messages, m)
				fmt.Fprintf(w, "harness (%s): %s\n", g.Phase, g.Message)
			}
		}
	}
	return "", errors.New("example: too many steps")
}

// fakeModel is a Chat Completions server that plays a model by a script.
// It keeps the request bodies it was sent.
type fakeModel struct {
	script func(step int, toolsOffered bool) []fakeCall

	mu       sync.Mutex
	requests [][]byte
}

// fakeCall is a tool call the fake model asks for.
type fakeCall struct {
	Tool string
	Args string
}

func newFakeModel(script func(step int, toolsOffered bool) []fakeCall) *fakeModel {
	return &fakeModel{script: script}
}

// sameCall is a model that asks for the same weather lookup at every step.
// Once the tools are stripped it answers with a summary, unless stubborn,
// in which case it asks for the tool anyway.
func sameCall(stubborn bool) func(int, bool) []fakeCall {
	return func(_ int, toolsOffered bool) []fakeCall {
		if !toolsOffered && !stubborn {
			return nil
		}
		return []fakeCall{{Tool: "get_weather", Args: `{"city":"Paris"}`}}
	}
}

// Requests returns the bodies of the requests received so far.
func (m *fakeModel) Requests() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.requests...)
}

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	var req struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, body)
	step := len(m.requests)
	m.mu.Unlock()

	message := map[string]any{"role": "assistant", "content": nil}
	finish := "tool_calls"
	if calls := m.script(step, len(req.Tools) > 0); len(calls) > 0 {
		var tcs []map[string]any
		for i, c := range calls {
			tcs = append(tcs, map[string]any{
				"id":       fmt.Sprintf("call_%d_%d", step, i+1),
				"type":     "function",
				"function": map[string]any{"name": c.Tool, "arguments": c.Args},
			})
		}
		message["tool_calls"] = tcs
	} else {
		finish = "stop"
		message["content"] = "Summary: " + summarize(body)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id":      fmt.Sprintf("chatcmpl-%d", step),
		"object":  "chat.completion",
		"created": 0,
		"model":   "fake-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": message}},
	})
}

// summarize plays the model's answer: the last tool result it was given.
func summarize(body []byte) string {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if s, ok := req.Messages[i].Content.(string); ok && req.Messages[i].Role == "tool" && !strings.HasPrefix(s, toolguard.HintMarker) {
			return "the last reading was " + s + "."
		}
	}
	return "no readings."
}
