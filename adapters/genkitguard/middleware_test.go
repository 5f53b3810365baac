package genkitguard_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/genkitguard"
)

// defineLookup defines an unguarded lookup tool whose output is a struct:
// the middleware must hint it all the same.
func defineLookup(g *genkit.Genkit, runs *atomic.Int64) *ai.ToolAction[lookupIn, record] {
	return genkit.DefineTool(g, "lookup", "Looks a record up by id.",
		func(_ *ai.ToolContext, in lookupIn) (record, error) {
			runs.Add(1)
			return record{ID: in.ID, Name: "Ada"}, nil
		})
}

func TestMiddlewareHintsAnyOutputType(t *testing.T) {
	m := &loopModel{tool: "lookup", giveUp: true}
	g, model := newGenkit(t, m)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	var runs atomic.Int64
	lookup := defineLookup(g, &runs)

	resp, err := genkit.Generate(context.Background(), g, ai.WithModel(model), ai.WithPrompt("Find record 1."),
		ai.WithTools(lookup), ai.WithMaxTurns(20), ai.WithUse(genkitguard.Middleware(tracker)))

	require.NoError(t, err)
	assert.Equal(t, "Record 1 is Ada.", resp.Text())
	assert.EqualValues(t, 2, runs.Load())
	require.Len(t, m.outputs, 3)
	hint, _ := m.outputs[2].(string)
	assert.True(t, strings.HasPrefix(hint, toolguard.HintMarker), "%v", m.outputs[2])
	var ids []string
	for _, e := range tracker.Ledger() {
		ids = append(ids, e.CallID)
	}
	assert.Equal(t, []string{"call_1", "call_2", "call_3"}, ids, "the tool request refs are the call ids")

	// The next Generate is a new turn: the lookup runs again.
	m.requests = 0
	_, err = genkit.Generate(context.Background(), g, ai.WithModel(model), ai.WithPrompt("Again."),
		ai.WithTools(lookup), ai.WithMaxTurns(20), ai.WithUse(genkitguard.Middleware(tracker)))
	require.NoError(t, err)
	assert.EqualValues(t, 4, runs.Load())
}

func TestMiddlewareAbortEndsGenerate(t *testing.T) {
	m := &loopModel{tool: "lookup"}
	g, model := newGenkit(t, m)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	var runs atomic.Int64
	lookup := defineLookup(g, &runs)

	_, err := genkit.Generate(context.Background(), g, ai.WithModel(model), ai.WithPrompt("Find record 1."),
		ai.WithTools(lookup), ai.WithMaxTurns(20), ai.WithUse(genkitguard.Middleware(tracker)))

	require.Error(t, err)
	assert.ErrorIs(t, err, toolguard.ErrLoop, "the typed error survives Generate")
	var le *toolguard.LoopError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "lookup", le.Tool)
	assert.EqualValues(t, 2, runs.Load())
	assert.Equal(t, 4, m.requests, "stopped at the fourth model request, not at the turn limit")
}

// budgetModel calls lookup with a new id each request until it is told to
// summarize; it keeps the tools and last message of every request.
type budgetModel struct {
	mu    sync.Mutex
	tools [][]string
	last  []string
}

func (b *budgetModel) generate(_ context.Context, req *ai.ModelRequest, _ any, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var names []string
	for _, td := range req.Tools {
		names = append(names, td.Name)
	}
	b.tools = append(b.tools, names)
	last := req.Messages[len(req.Messages)-1]
	b.last = append(b.last, last.Text())
	if strings.Contains(last.Text(), "Summarize your work") {
		return &ai.ModelResponse{Message: ai.NewModelTextMessage("summary")}, nil
	}
	n := len(b.tools)
	return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{
		Name: "lookup", Ref: fmt.Sprint("call_", n), Input: map[string]any{"id": n},
	}))}, nil
}

func TestMiddlewareWindDownDropsTools(t *testing.T) {
	t.Setenv("GENKIT_ENV", "prod")
	g := genkit.Init(context.Background(), genkit.WithPromptDir(t.TempDir()))
	b := &budgetModel{}
	model := genkit.DefineModelAction(g, "test/budget", &ai.ModelOptions{
		Supports: &ai.ModelSupports{Tools: true, Multiturn: true},
	}, b.generate)
	var runs atomic.Int64
	lookup := defineLookup(g, &runs)
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4})

	resp, err := genkit.Generate(context.Background(), g, ai.WithModel(model), ai.WithPrompt("Look everything up."),
		ai.WithTools(lookup), ai.WithMaxTurns(20), ai.WithUse(genkitguard.Middleware(tracker)))

	require.NoError(t, err)
	assert.Equal(t, "summary", resp.Text())
	assert.EqualValues(t, 4, runs.Load())
	require.Len(t, b.tools, 5)
	for i := 0; i < 5; i++ {
		switch {
		case i < 3:
			assert.Equal(t, []string{"lookup"}, b.tools[i], "request %d", i)
			assert.NotContains(t, b.last[i], "wrapping up")
		case i == 3:
			assert.Equal(t, []string{"lookup"}, b.tools[i], "the nudge keeps the tools")
			assert.Contains(t, b.last[i], "Start wrapping up")
		default:
			assert.Empty(t, b.tools[i], "the wind-down request has no tools")
			assert.Contains(t, b.last[i], "Summarize your work")
		}
	}
}
