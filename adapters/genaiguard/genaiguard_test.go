package genaiguard_test

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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/genaiguard"
)

// geminiServer is a Gemini API server on loopback playing a model that
// calls get_weather (with an id when withIDs) while function calling is
// allowed and answers with text once its mode is NONE. It keeps the
// request bodies.
type geminiServer struct {
	withIDs bool

	mu       sync.Mutex
	requests []map[string]any
	paths    []string
}

func (s *geminiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req map[string]any
	if r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil {
		http.Error(w, `{"error":{"code":400,"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.paths = append(s.paths, r.URL.Path)
	n := len(s.requests)
	s.mu.Unlock()

	mode := ""
	if tc, ok := req["toolConfig"].(map[string]any); ok {
		if fc, ok := tc["functionCallingConfig"].(map[string]any); ok {
			mode, _ = fc["mode"].(string)
		}
	}
	var part map[string]any
	if _, hasTools := req["tools"]; hasTools && mode != "NONE" {
		call := map[string]any{"name": "get_weather", "args": map[string]any{"city": "Paris"}}
		if s.withIDs {
			call["id"] = fmt.Sprintf("fc_%d", n)
		}
		part = map[string]any{"functionCall": call}
	} else {
		part = map[string]any{"text": "It is sunny in Paris."}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP"}},
	})
}

func (s *geminiServer) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

func newClient(t testing.TB, url string) *genai.Client {
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      "test",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: url},
	})
	require.NoError(t, err)
	return client
}

// generate runs one user turn and returns the model's answer.
func generate(ctx context.Context, client *genai.Client, tracker *toolguard.Tracker, exec func(context.Context, toolguard.Call) (string, error), log func(string)) (string, error) {
	config := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name:        "get_weather",
		Description: "The weather in a city.",
		Parameters:  &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString}}},
	}}}}}
	contents := []*genai.Content{genai.NewContentFromText("What is the weather in Paris?", genai.RoleUser)}
	told := toolguard.PhaseNormal
	for step := 0; step < 20; step++ {
		if tracker.Guidance().StripTools {
			genaiguard.StripTools(config)
		}
		resp, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, config)
		if err != nil {
			return "", err
		}
		round := genaiguard.Check(ctx, tracker, resp)
		if len(round.Calls) == 0 {
			return resp.Text(), nil
		}
		contents = append(contents, resp.Candidates[0].Content)
		parts := round.Run(ctx, exec)
		for i, d := range round.Decisions {
			log(fmt.Sprintf("%s: %s %s", round.Calls[i].Tool, d.Verdict, d.Reason))
		}
		if g := tracker.Guidance(); g.Phase != told {
			told = g.Phase
			if p, ok := genaiguard.GuidancePart(g); ok {
				parts = append(parts, p)
			}
		}
		contents = append(contents, genai.NewContentFromParts(parts, genai.RoleUser))
		if err := round.Err(); err != nil {
			return "", err
		}
	}
	return "", errors.New("too many steps")
}

// ExampleCheck runs a Gemini function calling loop against a server on
// loopback whose model keeps calling the same function.
func ExampleCheck() {
	srv := httptest.NewServer(&geminiServer{})
	defer srv.Close()
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "test", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	tracker := toolguard.NewTracker(toolguard.Policy{})
	sunny := func(context.Context, toolguard.Call) (string, error) { return "sunny, 21 °C", nil }
	_, err = generate(context.Background(), client, tracker, sunny, func(s string) { fmt.Println(s) })
	fmt.Println("stopped:", errors.Is(err, toolguard.ErrLoop))
	// Output:
	// get_weather: allow none
	// get_weather: allow none
	// get_weather: hint duplicate
	// get_weather: abort duplicate
	// stopped: true
}

// functionResponses returns the function responses of a request's last
// content, and its text parts.
func functionResponses(t *testing.T, req map[string]any) (responses []map[string]any, texts []string) {
	t.Helper()
	contents := req["contents"].([]any)
	last := contents[len(contents)-1].(map[string]any)
	require.Equal(t, "user", last["role"])
	for _, p := range last["parts"].([]any) {
		part := p.(map[string]any)
		if fr, ok := part["functionResponse"].(map[string]any); ok {
			responses = append(responses, fr)
		}
		if text, ok := part["text"].(string); ok {
			texts = append(texts, text)
		}
	}
	return responses, texts
}

func TestLoopRequests(t *testing.T) {
	model := &geminiServer{withIDs: true}
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
	var args []string
	exec := func(_ context.Context, c toolguard.Call) (string, error) {
		args = append(args, c.ID+" "+string(c.Args))
		return "sunny", nil
	}
	_, err := generate(ctx, newClient(t, srv.URL), tracker, exec, func(string) {})
	require.ErrorIs(t, err, toolguard.ErrLoop)
	assert.Equal(t, []string{`fc_1 {"city":"Paris"}`, `fc_2 {"city":"Paris"}`}, args)

	reqs := model.Requests()
	require.Len(t, reqs, 4, "the abort stops the loop before a fifth request")
	hint, _ := functionResponses(t, reqs[3])
	require.Len(t, hint, 1)
	assert.Equal(t, "fc_3", hint[0]["id"])
	assert.True(t, strings.HasPrefix(hint[0]["response"].(map[string]any)["error"].(string), toolguard.HintMarker))
	for i, req := range reqs[1:3] {
		frs, _ := functionResponses(t, req)
		require.Len(t, frs, 1)
		assert.Equal(t, fmt.Sprintf("fc_%d", i+1), frs[0]["id"], "the response names its call")
		assert.Equal(t, "get_weather", frs[0]["name"])
		assert.Equal(t, map[string]any{"output": "sunny"}, frs[0]["response"])
	}
	assert.True(t, strings.HasSuffix(model.paths[0], "/models/gemini-2.5-flash:generateContent"), model.paths[0])
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 6, "4 decisions, 2 records")
	for _, v := range seen {
		assert.Equal(t, "turn", v, "every event carries the loop's context")
	}
}

func TestHintAndBudget(t *testing.T) {
	model := &geminiServer{} // the Gemini API sets no call ids
	srv := httptest.NewServer(model)
	defer srv.Close()
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4})
	n := 0
	exec := func(context.Context, toolguard.Call) (string, error) {
		n++
		if n == 2 {
			return "", errors.New("service unavailable")
		}
		return fmt.Sprint(n, " °C"), nil
	}
	answer, err := generate(context.Background(), newClient(t, srv.URL), tracker, exec, func(string) {})
	require.NoError(t, err)
	assert.Equal(t, "It is sunny in Paris.", answer)

	reqs := model.Requests()
	require.Len(t, reqs, 5)
	var texts []string
	for i, req := range reqs[1:] {
		frs, ts := functionResponses(t, req)
		require.Len(t, frs, 1)
		assert.NotContains(t, frs[0], "id")
		if i == 1 {
			assert.Equal(t, map[string]any{"error": "error: service unavailable"}, frs[0]["response"])
		}
		texts = append(texts, ts...)
	}
	assert.Equal(t, []string{"You have used 3 of 4 tool calls. Start wrapping up.", tracker.Guidance().Message}, texts)
	last := reqs[4]["toolConfig"].(map[string]any)["functionCallingConfig"].(map[string]any)
	assert.Equal(t, "NONE", last["mode"], "the wind-down stops function calling")
	_, hasTools := reqs[4]["tools"]
	assert.True(t, hasTools, "the declarations stay")
}

func TestSkipParts(t *testing.T) {
	resp := &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{Content: genai.NewContentFromParts([]*genai.Part{
		genai.NewPartFromText("Looking."),
		genai.NewPartFromFunctionCall("read", map[string]any{"path": "a"}),
		genai.NewPartFromFunctionCall("read", map[string]any{"path": "a"}),
		genai.NewPartFromFunctionCall("list", nil),
	}, genai.RoleModel)}}}
	calls := genaiguard.Calls(resp)
	require.Len(t, calls, 3)
	assert.Equal(t, `{"path":"a"}`, string(calls[0].Args))
	assert.Nil(t, calls[2].Args)

	tr := toolguard.NewTracker(toolguard.Policy{MaxRepeats: 1})
	r := genaiguard.Check(context.Background(), tr, resp)
	require.Equal(t, 1, r.Skipped(), "the second identical read in the round")
	skips := r.SkipParts()
	require.Len(t, skips, 1)
	assert.Equal(t, "read", skips[0].FunctionResponse.Name)
	assert.True(t, strings.HasPrefix(skips[0].FunctionResponse.Response["error"].(string), toolguard.HintMarker))

	assert.Nil(t, genaiguard.Calls(nil))
	assert.Nil(t, genaiguard.Calls(&genai.GenerateContentResponse{}))
	genaiguard.StripTools(nil)
	_, ok := genaiguard.GuidancePart(toolguard.Guidance{})
	assert.False(t, ok)
	none := genaiguard.Check(context.Background(), nil, resp)
	out := none.Run(context.Background(), nil)
	require.Len(t, out, 3)
	assert.Equal(t, "list", out[2].FunctionResponse.Name)
	assert.Equal(t, map[string]any{"error": "error: genaiguard: no executor"}, out[2].FunctionResponse.Response)
}
