package adkguard_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/adkguard"
)

const app = "test-app"

// scriptedModel is a model.LLM that answers each request with the next
// step of its script: a function call or a final text. It keeps every
// request so that tests can see what the model was sent.
type scriptedModel struct {
	mu       sync.Mutex
	next     func(n int, req *model.LLMRequest) *genai.Content
	requests []*model.LLMRequest
}

func (m *scriptedModel) Name() string { return "scripted" }

func (m *scriptedModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	m.mu.Lock()
	m.requests = append(m.requests, req)
	n := len(m.requests)
	m.mu.Unlock()
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(&model.LLMResponse{Content: m.next(n, req), TurnComplete: true}, nil)
	}
}

func (m *scriptedModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

func (m *scriptedModel) request(i int) *model.LLMRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[i]
}

func call(name string, args map[string]any) *genai.Content {
	return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Name: name, Args: args}}}}
}

func text(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleModel) }

// alwaysSearch calls search for "adk" forever.
func alwaysSearch(int, *model.LLMRequest) *genai.Content {
	return call("search", map[string]any{"query": "adk"})
}

type searchArgs struct {
	Query string `json:"query"`
}

type fixture struct {
	guard  *adkguard.Guard
	model  *scriptedModel
	runner *runner.Runner
	ran    atomic.Int64 // search runs
}

func newFixture(t *testing.T, p toolguard.Policy, script func(int, *model.LLMRequest) *genai.Content) *fixture {
	t.Helper()
	f := &fixture{guard: adkguard.New(p), model: &scriptedModel{next: script}}
	search, err := functiontool.New(functiontool.Config{Name: "search", Description: "Searches the docs."},
		func(_ agent.Context, in searchArgs) (string, error) {
			f.ran.Add(1)
			return "results for " + in.Query, nil
		})
	require.NoError(t, err)
	a, err := llmagent.New(llmagent.Config{
		Name:        "assistant",
		Model:       f.model,
		Instruction: "Answer with the search tool.",
		Tools:       []tool.Tool{search},
	})
	require.NoError(t, err)
	plug, err := f.guard.Plugin()
	require.NoError(t, err)
	f.runner, err = runner.New(runner.Config{
		AppName:           app,
		Agent:             a,
		SessionService:    session.InMemoryService(),
		PluginConfig:      runner.PluginConfig{Plugins: []*plugin.Plugin{plug}},
		AutoCreateSession: true,
	})
	require.NoError(t, err)
	return f
}

// run sends one user message and returns the function responses the
// model was given, in order, and the last event.
func (f *fixture) run(t *testing.T, sessionID, msg string) (responses []map[string]any, last *session.Event) {
	t.Helper()
	for ev, err := range f.runner.Run(context.Background(), "user", sessionID,
		genai.NewContentFromText(msg, genai.RoleUser), agent.RunConfig{}) {
		require.NoError(t, err)
		last = ev
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil {
				responses = append(responses, p.FunctionResponse.Response)
			}
		}
	}
	return responses, last
}

func errorText(r map[string]any) string {
	s, _ := r["error"].(string)
	return s
}

func TestHintIsTheToolResult(t *testing.T) {
	// Three identical searches, then an answer: the third is hinted, the
	// model reads the hint and answers.
	f := newFixture(t, toolguard.Policy{}, func(n int, _ *model.LLMRequest) *genai.Content {
		if n <= 3 {
			return call("search", map[string]any{"query": "adk"})
		}
		return text("done")
	})
	responses, last := f.run(t, "s1", "find adk")
	require.Len(t, responses, 3)
	assert.Equal(t, "results for adk", responses[0]["result"])
	assert.Equal(t, "results for adk", responses[1]["result"])
	hint := errorText(responses[2])
	assert.True(t, strings.HasPrefix(hint, toolguard.HintMarker), hint)
	assert.Contains(t, hint, "identical parameters")
	assert.EqualValues(t, 2, f.ran.Load(), "the hinted call did not run")
	assert.Equal(t, 4, f.model.calls(), "the model read the hint and answered")
	assert.Equal(t, "done", last.Content.Parts[0].Text)
	assert.NoError(t, f.guard.Err(app, "user", "s1"))

	// The model saw the hint in the request after it.
	assert.Contains(t, fmt.Sprint(lastFunctionResponse(f.model.request(3))), toolguard.HintMarker)
}

func lastFunctionResponse(req *model.LLMRequest) map[string]any {
	for i := len(req.Contents) - 1; i >= 0; i-- {
		for _, p := range req.Contents[i].Parts {
			if p.FunctionResponse != nil {
				return p.FunctionResponse.Response
			}
		}
	}
	return nil
}

func TestAbortEndsTheInvocation(t *testing.T) {
	// The model never stops calling: call 3 is hinted, call 4 aborts and
	// ADK ends the invocation without another model call.
	f := newFixture(t, toolguard.Policy{}, alwaysSearch)
	responses, last := f.run(t, "s1", "find adk")
	require.Len(t, responses, 4)
	assert.EqualValues(t, 2, f.ran.Load())
	assert.Equal(t, 4, f.model.calls(), "no model call after the abort")
	assert.True(t, strings.HasPrefix(errorText(responses[3]), toolguard.HintMarker))
	assert.True(t, last.IsFinalResponse(), "the abort's response event ends the invocation")
	assert.True(t, last.Actions.Escalate)

	err := f.guard.Err(app, "user", "s1")
	require.Error(t, err)
	assert.True(t, errors.Is(err, toolguard.ErrLoop), "%v", err)
	var le *toolguard.LoopError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "search", le.Tool)

	// The aborted call's response is in the session, so the next turn's
	// history pairs every function call with a response; the new user
	// message clears the abort and starts a new turn.
	f.model.next = func(n int, _ *model.LLMRequest) *genai.Content {
		if n == 5 {
			return call("search", map[string]any{"query": "adk"})
		}
		return text("ok")
	}
	responses, _ = f.run(t, "s1", "again")
	require.Len(t, responses, 1)
	assert.Equal(t, "results for adk", responses[0]["result"], "a new turn: the call runs")
	assert.NoError(t, f.guard.Err(app, "user", "s1"))
	calls, resps := 0, 0
	for _, c := range f.model.request(4).Contents {
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				calls++
			}
			if p.FunctionResponse != nil {
				resps++
			}
		}
	}
	assert.Equal(t, 4, calls)
	assert.Equal(t, calls, resps)
}

func TestOneTrackerPerSessionResetPerTurn(t *testing.T) {
	// Each turn: two identical searches, then an answer.
	f := newFixture(t, toolguard.Policy{}, func(_ int, req *model.LLMRequest) *genai.Content {
		if countResponsesSinceUser(req) < 2 {
			return call("search", map[string]any{"query": "adk"})
		}
		return text("done")
	})
	for _, sess := range []string{"a", "b", "a", "b"} {
		responses, _ := f.run(t, sess, "find adk")
		require.Len(t, responses, 2, sess)
		for _, r := range responses {
			assert.Equal(t, "results for adk", r["result"], "session %s", sess)
		}
	}
	assert.EqualValues(t, 8, f.ran.Load(), "no call was hinted: each session and turn counts on its own")
	ta, tb := f.guard.Tracker(app, "user", "a"), f.guard.Tracker(app, "user", "b")
	assert.NotSame(t, ta, tb)
	led := ta.Ledger()
	require.Len(t, led, 4, "the ledger holds the session's calls")
	assert.Equal(t, led[0].Turn, led[1].Turn)
	assert.Equal(t, led[0].Turn+1, led[2].Turn, "each user message is a new turn")

	f.guard.Forget(app, "user", "a")
	assert.NotSame(t, ta, f.guard.Tracker(app, "user", "a"))
}

// countResponsesSinceUser counts the function responses after the last
// user text in req.
func countResponsesSinceUser(req *model.LLMRequest) int {
	n := 0
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			switch {
			case p.FunctionResponse != nil:
				n++
			case c.Role == genai.RoleUser && p.Text != "":
				n = 0
			}
		}
	}
	return n
}

func TestWindDownRemovesTheTools(t *testing.T) {
	// A budget of 4 calls: the nudge comes at 3, the wind-down at 4; the
	// model keeps calling with distinct queries.
	f := newFixture(t, toolguard.Policy{MaxCallsPerTurn: 4}, func(n int, _ *model.LLMRequest) *genai.Content {
		return call("search", map[string]any{"query": fmt.Sprintf("q%d", n)})
	})
	responses, last := f.run(t, "s1", "research")
	assert.EqualValues(t, 4, f.ran.Load())
	require.Len(t, responses, 5)
	refused := errorText(responses[4])
	assert.Contains(t, refused, "tool calls", refused)
	assert.True(t, last.IsFinalResponse())
	assert.ErrorIs(t, f.guard.Err(app, "user", "s1"), toolguard.ErrBudgetExhausted)

	for i := 0; i < 5; i++ {
		req := f.model.request(i)
		lastText := req.Contents[len(req.Contents)-1].Parts[0].Text
		switch {
		case i < 3:
			assert.NotEmpty(t, req.Config.Tools, "request %d has tools", i)
			assert.NotContains(t, lastText, "wrapping up")
		case i == 3:
			assert.NotEmpty(t, req.Config.Tools, "the nudge keeps the tools")
			assert.Contains(t, lastText, "Start wrapping up")
		default:
			assert.Empty(t, req.Config.Tools, "the wind-down request has no tools")
			assert.Contains(t, lastText, "Summarize your work")
		}
	}
}

func TestParallelCallsOfOneResponse(t *testing.T) {
	// One response asks for three identical searches, which ADK runs
	// concurrently: exactly two run, one is hinted.
	f := newFixture(t, toolguard.Policy{}, func(n int, _ *model.LLMRequest) *genai.Content {
		if n > 1 {
			return text("done")
		}
		c := &genai.Content{Role: genai.RoleModel}
		for i := 0; i < 3; i++ {
			c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{
				ID: fmt.Sprintf("call-%d", i), Name: "search", Args: map[string]any{"query": "adk"}}})
		}
		return c
	})
	responses, _ := f.run(t, "s1", "find adk")
	require.Len(t, responses, 3)
	hinted := 0
	for _, r := range responses {
		if strings.HasPrefix(errorText(r), toolguard.HintMarker) {
			hinted++
		}
	}
	assert.Equal(t, 1, hinted)
	assert.EqualValues(t, 2, f.ran.Load())
	ids := map[string]bool{}
	for _, e := range f.guard.Tracker(app, "user", "s1").Ledger() {
		ids[e.CallID] = true
	}
	assert.Len(t, ids, 3, "each call is booked under its function call id")
}
