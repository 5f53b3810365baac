package openaiguard_test

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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/openaiguard"
)

// responsesServer is a Responses API server on loopback that plays a
// model asking for the same weather lookup while tools are offered, and
// answers with text once they are gone. It keeps the request bodies.
type responsesServer struct {
	mu       sync.Mutex
	requests []map[string]any
}

func (s *responsesServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
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

	var output []any
	if tools, _ := req["tools"].([]any); len(tools) > 0 {
		output = []any{
			map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_%d", n), "summary": []any{}},
			map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "call_id": fmt.Sprintf("call_%d", n),
				"name": "get_weather", "arguments": `{"city":"Paris"}`, "status": "completed"},
		}
	} else {
		output = []any{map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "It is sunny in Paris.", "annotations": []any{}}}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": 0, "status": "completed",
		"model": "gpt-5.4-mini", "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
	})
}

func (s *responsesServer) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

// respond runs one user turn through the Responses API, chaining the
// requests with previous_response_id, and returns the model's answer.
func respond(ctx context.Context, client openai.Client, tracker *toolguard.Tracker, exec func(context.Context, toolguard.Call) (string, error), log func(string)) (string, error) {
	params := responses.ResponseNewParams{
		Model: openai.ChatModelGPT5_4Mini,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris?")},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
			Name:       "get_weather",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		}}},
	}
	told := toolguard.PhaseNormal
	for step := 0; step < 20; step++ {
		if tracker.Guidance().StripTools {
			openaiguard.StripResponseTools(&params)
		}
		resp, err := client.Responses.New(ctx, params)
		if err != nil {
			return "", err
		}
		round := openaiguard.CheckResponse(ctx, tracker, resp)
		if len(round.Calls) == 0 {
			return resp.OutputText(), nil
		}
		input := round.Run(ctx, exec)
		for i, d := range round.Decisions {
			log(fmt.Sprintf("%s %s: %s %s", round.Calls[i].ID, round.Calls[i].Tool, d.Verdict, d.Reason))
		}
		if err := round.Err(); err != nil {
			return "", err
		}
		if g := tracker.Guidance(); g.Phase != told {
			told = g.Phase
			if item, ok := openaiguard.GuidanceItem(g); ok {
				input = append(input, item)
				log("harness: " + g.Message)
			}
		}
		params.PreviousResponseID = openai.String(resp.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	}
	return "", errors.New("too many steps")
}

func newResponsesClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

// ExampleCheckResponse runs a Responses API loop against a server on
// loopback whose model keeps asking for the same function call.
func ExampleCheckResponse() {
	srv := httptest.NewServer(&responsesServer{})
	defer srv.Close()
	tracker := toolguard.NewTracker(toolguard.Policy{})
	sunny := func(context.Context, toolguard.Call) (string, error) { return "sunny, 21 °C", nil }
	_, err := respond(context.Background(), newResponsesClient(srv.URL), tracker, sunny, func(s string) { fmt.Println(s) })
	fmt.Println("stopped:", errors.Is(err, toolguard.ErrLoop))
	// Output:
	// call_1 get_weather: allow none
	// call_2 get_weather: allow none
	// call_3 get_weather: hint duplicate
	// call_4 get_weather: abort duplicate
	// stopped: true
}

func TestResponsesLoopRequests(t *testing.T) {
	model := &responsesServer{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	tracker := toolguard.NewTracker(toolguard.Policy{})
	var ran []string
	exec := func(_ context.Context, c toolguard.Call) (string, error) {
		ran = append(ran, c.ID)
		return "sunny", nil
	}
	_, err := respond(context.Background(), newResponsesClient(srv.URL), tracker, exec, func(string) {})
	require.ErrorIs(t, err, toolguard.ErrLoop)
	assert.Equal(t, []string{"call_1", "call_2"}, ran)

	reqs := model.Requests()
	require.Len(t, reqs, 4, "the abort stops the loop before a fifth request")
	for i, req := range reqs[1:] {
		assert.Equal(t, fmt.Sprintf("resp_%d", i+1), req["previous_response_id"])
		items := req["input"].([]any)
		require.Len(t, items, 1)
		item := items[0].(map[string]any)
		assert.Equal(t, "function_call_output", item["type"])
		assert.Equal(t, fmt.Sprintf("call_%d", i+1), item["call_id"], "each output answers the call of the response before")
		if i == 2 {
			out := item["output"].(string)
			assert.True(t, strings.HasPrefix(out, toolguard.HintMarker), out)
			assert.Contains(t, out, "not executed")
		} else {
			assert.Equal(t, "sunny", item["output"])
		}
	}
}

func TestResponsesBudget(t *testing.T) {
	model := &responsesServer{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4})
	n := 0
	changing := func(context.Context, toolguard.Call) (string, error) { n++; return fmt.Sprint(n, " °C"), nil }
	answer, err := respond(context.Background(), newResponsesClient(srv.URL), tracker, changing, func(string) {})
	require.NoError(t, err)
	assert.Equal(t, "It is sunny in Paris.", answer)

	reqs := model.Requests()
	require.Len(t, reqs, 5)
	var userTexts []string
	for i, req := range reqs {
		_, hasTools := req["tools"]
		assert.Equal(t, i < 4, hasTools, "request %d: tools until the wind-down", i+1)
		_, hasChoice := req["tool_choice"]
		assert.False(t, hasChoice && i == 4)
		items, _ := req["input"].([]any)
		for _, it := range items {
			if m := it.(map[string]any); m["role"] == "user" {
				userTexts = append(userTexts, m["content"].(string))
			}
		}
	}
	assert.Equal(t, []string{
		"You have used 3 of 4 tool calls. Start wrapping up.",
		tracker.Guidance().Message,
	}, userTexts, "the nudge and the wind-down, once each, as user messages")
}

func TestResponseCalls(t *testing.T) {
	var resp responses.Response
	require.NoError(t, json.Unmarshal([]byte(`{"id":"r","output":[
		{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"hi"}]},
		{"type":"function_call","call_id":"c1","name":"search","arguments":"{\"query\":\"go\"}"},
		{"type":"web_search_call","id":"ws","status":"completed"},
		{"type":"function_call","call_id":"c2","name":"list","arguments":""},
		{"type":"custom_tool_call","call_id":"c3","name":"patch","input":"*** raw"}]}`), &resp))
	calls := openaiguard.ResponseCalls(&resp)
	assert.Equal(t, []toolguard.Call{
		{ID: "c1", Tool: "search", Args: json.RawMessage(`{"query":"go"}`)},
		{ID: "c2", Tool: "list"},
		{ID: "c3", Tool: "patch", Args: json.RawMessage(`"*** raw"`)},
	}, calls)
	assert.Nil(t, openaiguard.ResponseCalls(nil))

	r := openaiguard.CheckResponse(context.Background(), nil, &resp)
	items := r.Run(context.Background(), func(_ context.Context, c toolguard.Call) (string, error) {
		if c.Tool == "list" {
			return "", errors.New("denied")
		}
		return "ok " + c.ID, nil
	})
	var got []map[string]any
	for _, it := range items {
		b, err := json.Marshal(it)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		got = append(got, m)
	}
	assert.Equal(t, []map[string]any{
		{"type": "function_call_output", "call_id": "c1", "output": "ok c1"},
		{"type": "function_call_output", "call_id": "c2", "output": "error: denied"},
		{"type": "custom_tool_call_output", "call_id": "c3", "output": "ok c3"},
	}, got)
	assert.Empty(t, r.SkipItems())
	assert.Zero(t, r.Skipped())
}

func TestStripResponseTools(t *testing.T) {
	p := responses.ResponseNewParams{
		Model:             openai.ChatModelGPT5_4Mini,
		Tools:             []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "f"}}},
		ToolChoice:        responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)},
		ParallelToolCalls: openai.Bool(false),
	}
	openaiguard.StripResponseTools(&p)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	assert.NotContains(t, got, "tools")
	assert.NotContains(t, got, "tool_choice")
	assert.NotContains(t, got, "parallel_tool_calls")
	openaiguard.StripResponseTools(nil)
}
