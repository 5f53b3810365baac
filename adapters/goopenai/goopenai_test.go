package goopenai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/goopenai"
)

// chatServer is a Chat Completions server on loopback playing a model that
// asks for the same weather lookup while tools are offered and answers with
// text once they are gone. It keeps the request bodies.
type chatServer struct {
	mu       sync.Mutex
	requests []map[string]any
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	s.mu.Unlock()

	message := map[string]any{"role": "assistant", "content": ""}
	finish := "stop"
	if tools, _ := req["tools"].([]any); len(tools) > 0 {
		finish = "tool_calls"
		message["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}
	} else {
		message["content"] = "It is sunny in Paris."
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 0, "model": "gpt-5.4-mini",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": message}},
	})
}

func (s *chatServer) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

func newClient(url string) *openai.Client {
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = url + "/v1"
	return openai.NewClientWithConfig(cfg)
}

var weatherTool = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
	Name:       "get_weather",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`),
}}

// chat runs one user turn and returns the model's answer.
func chat(ctx context.Context, client *openai.Client, tracker *toolguard.Tracker, exec func(context.Context, toolguard.Call) (string, error), log func(string)) (string, error) {
	req := openai.ChatCompletionRequest{
		Model:    openai.GPT5Dot4Mini,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "What is the weather in Paris?"}},
		Tools:    []openai.Tool{weatherTool},
	}
	told := toolguard.PhaseNormal
	for step := 0; step < 20; step++ {
		if tracker.Guidance().StripTools {
			goopenai.StripTools(&req)
		}
		resp, err := client.CreateChatCompletion(ctx, req)
		if err != nil {
			return "", err
		}
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		req.Messages = append(req.Messages, msg)
		round := goopenai.Check(ctx, tracker, msg)
		req.Messages = append(req.Messages, round.Run(ctx, exec)...)
		for i, d := range round.Decisions {
			log(fmt.Sprintf("%s %s: %s %s", round.Calls[i].ID, round.Calls[i].Tool, d.Verdict, d.Reason))
		}
		if err := round.Err(); err != nil {
			return "", err
		}
		if g := tracker.Guidance(); g.Phase != told {
			told = g.Phase
			if m, ok := goopenai.GuidanceMessage(g); ok {
				req.Messages = append(req.Messages, m)
			}
		}
	}
	return "", errors.New("too many steps")
}

// ExampleCheck runs a go-openai loop against a server on loopback whose
// model keeps asking for the same tool call.
func ExampleCheck() {
	srv := httptest.NewServer(&chatServer{})
	defer srv.Close()
	tracker := toolguard.NewTracker(toolguard.Policy{})
	sunny := func(context.Context, toolguard.Call) (string, error) { return "sunny, 21 °C", nil }
	_, err := chat(context.Background(), newClient(srv.URL), tracker, sunny, func(s string) { fmt.Println(s) })
	fmt.Println("stopped:", errors.Is(err, toolguard.ErrLoop))
	// Output:
	// call_1 get_weather: allow none
	// call_2 get_weather: allow none
	// call_3 get_weather: hint duplicate
	// call_4 get_weather: abort duplicate
	// stopped: true
}

// toolMessages returns the tool messages of a request: tool_call_id → content.
func toolMessages(req map[string]any) map[string]string {
	out := map[string]string{}
	for _, m := range req["messages"].([]any) {
		msg := m.(map[string]any)
		if msg["role"] == "tool" {
			out[msg["tool_call_id"].(string)] = msg["content"].(string)
		}
	}
	return out
}

func TestLoopRequests(t *testing.T) {
	model := &chatServer{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "turn")
	var mu sync.Mutex
	var seen []any
	tracker := toolguard.NewTracker(toolguard.Policy{OnEvent: func(ev toolguard.Event) {
		mu.Lock()
		seen = append(seen, ev.Context.Value(ctxKey{}))
		mu.Unlock()
	}})
	var ran int
	exec := func(context.Context, toolguard.Call) (string, error) { ran++; return "sunny", nil }
	_, err := chat(ctx, newClient(srv.URL), tracker, exec, func(string) {})
	require.ErrorIs(t, err, toolguard.ErrLoop)
	assert.Equal(t, 2, ran)

	reqs := model.Requests()
	require.Len(t, reqs, 4, "no request after the abort")
	tools := toolMessages(reqs[3])
	assert.Equal(t, "sunny", tools["call_1"])
	assert.Equal(t, "sunny", tools["call_2"])
	assert.True(t, strings.HasPrefix(tools["call_3"], toolguard.HintMarker), tools["call_3"])
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 6, "4 decisions, 2 records")
	for _, v := range seen {
		assert.Equal(t, "turn", v, "every event carries the loop's context")
	}
}

func TestBudget(t *testing.T) {
	model := &chatServer{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4})
	n := 0
	exec := func(context.Context, toolguard.Call) (string, error) { n++; return fmt.Sprint(n, " °C"), nil }
	answer, err := chat(context.Background(), newClient(srv.URL), tracker, exec, func(string) {})
	require.NoError(t, err)
	assert.Equal(t, "It is sunny in Paris.", answer)

	reqs := model.Requests()
	require.Len(t, reqs, 5)
	for i, req := range reqs {
		_, hasTools := req["tools"]
		assert.Equal(t, i < 4, hasTools, "request %d: tools until the wind-down", i+1)
	}
	var users []string
	for _, m := range reqs[4]["messages"].([]any) {
		if msg := m.(map[string]any); msg["role"] == "user" {
			users = append(users, msg["content"].(string))
		}
	}
	assert.Equal(t, []string{"What is the weather in Paris?", "You have used 3 of 4 tool calls. Start wrapping up.",
		tracker.Guidance().Message}, users, "the nudge and the wind-down once each")
}

func TestCallsAndRun(t *testing.T) {
	msg := openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{
		{ID: "a", Type: "function", Function: openai.FunctionCall{Name: "search", Arguments: `{"query":"go"}`}},
		{ID: "b", Type: "function", Function: openai.FunctionCall{Name: "list"}},
		{ID: "c", Type: "function", Function: openai.FunctionCall{Name: "fail", Arguments: `{}`}},
	}}
	calls := goopenai.Calls(msg)
	assert.Equal(t, []toolguard.Call{
		{ID: "a", Tool: "search", Args: json.RawMessage(`{"query":"go"}`)},
		{ID: "b", Tool: "list"},
		{ID: "c", Tool: "fail", Args: json.RawMessage(`{}`)},
	}, calls)
	assert.Nil(t, goopenai.Calls(openai.ChatCompletionMessage{Role: "assistant", Content: "hi",
		FunctionCall: &openai.FunctionCall{Name: "legacy"}}))

	tr := toolguard.NewTracker(toolguard.Policy{})
	r := goopenai.Check(context.Background(), tr, msg)
	out := r.Run(context.Background(), func(_ context.Context, c toolguard.Call) (string, error) {
		switch c.Tool {
		case "list":
			return "", nil
		case "fail":
			return "", errors.New("denied")
		}
		return "found", nil
	})
	assert.Equal(t, []openai.ChatCompletionMessage{
		{Role: "tool", ToolCallID: "a", Content: "found"},
		{Role: "tool", ToolCallID: "b", Content: "(no output)"},
		{Role: "tool", ToolCallID: "c", Content: "error: denied"},
	}, out)
	assert.Len(t, tr.Ledger(), 3)
	assert.Empty(t, r.SkipMessages())
	assert.Zero(t, r.Skipped())

	none := goopenai.Check(context.Background(), nil, msg)
	assert.Equal(t, "error: goopenai: no executor", none.Run(context.Background(), nil)[0].Content)
	goopenai.StripTools(nil)
	_, ok := goopenai.GuidanceMessage(toolguard.Guidance{})
	assert.False(t, ok)
}
