package anthropicguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/anthropicguard"
)

// runnerServer is a Messages API server on loopback playing a model that,
// while it may call tools, asks for the weather in the cities of calls at
// every step, and otherwise answers with text. It keeps the request
// bodies.
type runnerServer struct {
	calls []string // the city of each tool_use block of a response

	mu        sync.Mutex
	requests  []map[string]any
	withTools bool // the message thread was created with tools
}

func (s *runnerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	// The runner sends its requests on a message thread: the tools come
	// with the request that creates it, later requests continue it.
	tools, _ := req["tools"].([]any)
	thread, _ := req["thread"].(map[string]any)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	if thread["type"] != "continue" {
		s.withTools = len(tools) > 0
	}
	if addsTools(req) { // AddTools: a system message with tool_addition blocks
		s.withTools = true
	}
	offered := s.withTools
	s.mu.Unlock()

	choice, _ := req["tool_choice"].(map[string]any)
	content := []any{}
	stop := "end_turn"
	if offered && choice["type"] != "none" {
		stop = "tool_use"
		for i, city := range s.calls {
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, i+1),
				"name": "get_weather", "input": map[string]any{"city": city}})
		}
	} else {
		content = append(content, map[string]any{"type": "text", "text": "Summary: it is sunny."})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "claude-test",
		"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1},
	})
}

func addsTools(req map[string]any) bool {
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			if block, _ := b.(map[string]any); msg["role"] == "system" && block["type"] == "tool_addition" {
				return true
			}
		}
	}
	return false
}

func (s *runnerServer) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

type weatherInput struct {
	City string `json:"city" jsonschema:"required"`
}

// weatherTool is a runner tool built with the SDK's toolrunner package.
func weatherTool(t *testing.T, result func(city string) string, ran *[]string, mu *sync.Mutex) anthropic.BetaTool {
	t.Helper()
	tool, err := toolrunner.NewBetaToolFromJSONSchema("get_weather", "The weather in a city.",
		func(_ context.Context, in weatherInput) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			mu.Lock()
			*ran = append(*ran, in.City)
			mu.Unlock()
			return anthropic.BetaToolResultBlockParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: result(in.City)}}, nil
		})
	require.NoError(t, err)
	return tool
}

func newRunnerClient(url string) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("test"), option.WithMaxRetries(0))
}

// toolResults returns the tool_result blocks of the last user message of a
// request: tool_use_id → its text.
func toolResults(t *testing.T, req map[string]any) map[string]string {
	t.Helper()
	msgs := req["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	require.Equal(t, "user", last["role"])
	out := map[string]string{}
	for _, b := range last["content"].([]any) {
		block := b.(map[string]any)
		if block["type"] != "tool_result" {
			continue
		}
		var texts []string
		for _, c := range block["content"].([]any) {
			texts = append(texts, c.(map[string]any)["text"].(string))
		}
		out[block["tool_use_id"].(string)] = strings.Join(texts, "|")
	}
	return out
}

func TestToolRunnerStopsALoop(t *testing.T) {
	model := &runnerServer{calls: []string{"Paris"}}
	srv := httptest.NewServer(model)
	defer srv.Close()
	client := newRunnerClient(srv.URL)

	var events []toolguard.Event
	var evMu sync.Mutex
	tracker := toolguard.NewTracker(toolguard.Policy{OnEvent: func(ev toolguard.Event) {
		evMu.Lock()
		events = append(events, ev)
		evMu.Unlock()
	}})
	var ran []string
	var mu sync.Mutex
	tool := weatherTool(t, func(string) string { return "sunny" }, &ran, &mu)
	runner := anthropicguard.NewToolRunner(tracker, &client.Beta.Messages, []anthropic.BetaTool{tool},
		anthropic.BetaToolRunnerParams{BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model:     "claude-test",
			MaxTokens: 1024,
			Messages:  []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Weather in Paris?"))},
		}})

	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "turn")
	msg, err := runner.RunToCompletion(ctx)
	require.ErrorIs(t, err, toolguard.ErrLoop)
	require.Nil(t, msg)
	var le *toolguard.LoopError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "get_weather", le.Tool)
	assert.Equal(t, []string{"Paris", "Paris"}, ran, "the hinted and the aborted calls did not run")

	reqs := model.Requests()
	require.Len(t, reqs, 4, "no request after the abort")
	assert.Equal(t, map[string]string{"toolu_1_1": "sunny"}, toolResults(t, reqs[1]))
	assert.Equal(t, map[string]string{"toolu_2_1": "sunny"}, toolResults(t, reqs[2]))
	hint := toolResults(t, reqs[3])["toolu_3_1"]
	assert.True(t, strings.HasPrefix(hint, toolguard.HintMarker), hint)
	assert.Contains(t, hint, "not executed")

	evMu.Lock()
	defer evMu.Unlock()
	var decisions []string
	for _, ev := range events {
		assert.Equal(t, "turn", ev.Context.Value(ctxKey{}), "every event carries the step's context")
		if ev.Kind == toolguard.EventDecision {
			decisions = append(decisions, ev.CallID+" "+ev.Decision.Verdict.String())
		}
	}
	assert.Equal(t, []string{"toolu_1_1 allow", "toolu_2_1 allow", "toolu_3_1 hint", "toolu_4_1 abort"}, decisions,
		"each call is checked under its tool_use id")
}

func TestToolRunnerParallelCallsAreOneRound(t *testing.T) {
	// Two calls per response, run in parallel by the SDK; a budget of 3
	// rounds counted by rounds lets three responses' calls run, all six of
	// them. The tool waits until both calls of its step are running, so
	// both are checked before either is recorded.
	model := &runnerServer{calls: []string{"Paris", "Rome"}}
	srv := httptest.NewServer(model)
	defer srv.Close()
	client := newRunnerClient(srv.URL)
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 3, CountRounds: true})
	var ran []string
	var mu sync.Mutex
	n := 0
	// pair holds each call until the other call of its step is running
	// too (or a second has passed, so a broken round fails, not hangs).
	var pairMu sync.Mutex
	waiting := make(chan struct{})
	inPair := 0
	tool := weatherTool(t, func(city string) string {
		pairMu.Lock()
		ch := waiting
		if inPair++; inPair == 2 {
			close(waiting)
			waiting, inPair = make(chan struct{}), 0
		}
		pairMu.Unlock()
		select {
		case <-ch:
		case <-time.After(time.Second):
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("%s reading %d", city, n) // always new: no repeat fires
	}, &ran, &mu)
	runner := anthropicguard.NewToolRunner(tracker, &client.Beta.Messages, []anthropic.BetaTool{tool},
		anthropic.BetaToolRunnerParams{BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model:     "claude-test",
			MaxTokens: 1024,
			Messages:  []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Watch the weather."))},
		}})
	msg, err := runner.RunToCompletion(context.Background())
	require.NoError(t, err)
	require.NotNil(t, msg)
	assert.Equal(t, "Summary: it is sunny.", msg.Content[0].Text)
	assert.Len(t, ran, 6)

	reqs := model.Requests()
	require.Len(t, reqs, 4)
	for i, req := range reqs {
		choice, _ := req["tool_choice"].(map[string]any)
		if i < 3 {
			assert.NotEqual(t, "none", choice["type"], "request %d", i+1)
		} else {
			assert.Equal(t, "none", choice["type"], "the wind-down strips the tools")
		}
	}
	// The nudge after round 2 (⌊0.75·3⌋ = 2) and the wind-down after round
	// 3 are added once each, to one tool result of their round.
	var guidance []string
	for _, req := range reqs[1:] {
		for _, text := range toolResults(t, req) {
			if _, g, ok := strings.Cut(text, "|"); ok {
				guidance = append(guidance, g)
			}
		}
	}
	assert.Equal(t, []string{"You have used 2 of 3 tool rounds. Start wrapping up.", tracker.Guidance().Message}, guidance)
}

func TestToolRunnerNilTracker(t *testing.T) {
	model := &runnerServer{calls: []string{"Paris"}}
	srv := httptest.NewServer(model)
	defer srv.Close()
	client := newRunnerClient(srv.URL)
	var ran []string
	var mu sync.Mutex
	tool := weatherTool(t, func(string) string { return "sunny" }, &ran, &mu)
	runner := anthropicguard.NewToolRunner(nil, &client.Beta.Messages, nil,
		anthropic.BetaToolRunnerParams{MaxIterations: 3, DisableThread: true, BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model: "claude-test", MaxTokens: 1024,
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("hi"))},
		}})
	runner.AddTools(tool)
	var steps int
	for _, err := range runner.All(context.Background()) {
		require.NoError(t, err)
		steps++
	}
	assert.Equal(t, 3, steps, "without a tracker only MaxIterations stops the loop")
	assert.Len(t, ran, 2)
}

func TestToolRunnerAddToolsWithoutThread(t *testing.T) {
	// Tools added later are guarded too; without a message thread every
	// request carries the tools.
	model := &runnerServer{calls: []string{"Paris"}}
	srv := httptest.NewServer(model)
	defer srv.Close()
	client := newRunnerClient(srv.URL)
	var ran []string
	var mu sync.Mutex
	tool := weatherTool(t, func(string) string { return "sunny" }, &ran, &mu)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	runner := anthropicguard.NewToolRunner(tracker, &client.Beta.Messages, nil,
		anthropic.BetaToolRunnerParams{DisableThread: true, BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model: "claude-test", MaxTokens: 1024,
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("hi"))},
		}})
	runner.AddTools(tool)
	_, err := runner.RunToCompletion(context.Background())
	require.ErrorIs(t, err, toolguard.ErrLoop)
	assert.Len(t, ran, 2)
	assert.Len(t, model.Requests(), 4)
}

func TestToolRunnerParallelCallPastTheBudget(t *testing.T) {
	// Two calls per response and a budget of 3 calls: the second response's
	// calls overrun it. The one past the budget is told so, the wind-down
	// follows, and the model answers without tools.
	model := &runnerServer{calls: []string{"Paris", "Rome"}}
	srv := httptest.NewServer(model)
	defer srv.Close()
	client := newRunnerClient(srv.URL)
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 3})
	var ran []string
	var mu sync.Mutex
	n := 0
	tool := weatherTool(t, func(city string) string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("%s reading %d", city, n)
	}, &ran, &mu)
	runner := anthropicguard.NewToolRunner(tracker, &client.Beta.Messages, []anthropic.BetaTool{tool},
		anthropic.BetaToolRunnerParams{BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model: "claude-test", MaxTokens: 1024,
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Watch the weather."))},
		}})
	msg, err := runner.RunToCompletion(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "Summary: it is sunny.", msg.Content[0].Text)
	assert.Len(t, ran, 3)

	reqs := model.Requests()
	require.Len(t, reqs, 3)
	results := toolResults(t, reqs[2])
	require.Len(t, results, 2)
	refused := 0
	for _, text := range results {
		if strings.HasPrefix(text, "[budget-exhausted]") { // a budget refusal, not a loop hint
			refused++
		}
	}
	assert.Equal(t, 1, refused, "the call past the budget is answered, not run")
	choice, _ := reqs[2]["tool_choice"].(map[string]any)
	assert.Equal(t, "none", choice["type"])
	// Which of the two parallel calls runs first decides whether the refusal
	// came before the wind-down or after it (then it exhausts the turn).
	assert.GreaterOrEqual(t, tracker.Guidance().Phase, toolguard.PhaseWindDown)
}
