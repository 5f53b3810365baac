package genkitguard_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core/status"
	"github.com/firebase/genkit/go/genkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/genkitguard"
)

type lookupIn struct {
	ID int `json:"id"`
}

type record struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Note string `json:"note,omitempty"`
}

// loopModel is a Genkit model that asks for the same lookup on every turn;
// with giveUp it answers once the last tool output it was sent is a hint.
type loopModel struct {
	tool   string
	giveUp bool

	mu       sync.Mutex
	requests int
	outputs  []any // the tool outputs of the last request
}

func (m *loopModel) generate(_ context.Context, req *ai.ModelRequest, _ any, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests++
	m.outputs = m.outputs[:0]
	for _, msg := range req.Messages {
		for _, p := range msg.Content {
			if p.IsToolResponse() {
				m.outputs = append(m.outputs, p.ToolResponse.Output)
			}
		}
	}
	if m.giveUp && len(m.outputs) > 0 {
		if s, ok := m.outputs[len(m.outputs)-1].(string); ok && strings.HasPrefix(s, toolguard.HintMarker) {
			return &ai.ModelResponse{Message: ai.NewModelTextMessage("Record 1 is Ada.")}, nil
		}
	}
	return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{
		Name:  m.tool,
		Ref:   fmt.Sprint("call_", m.requests),
		Input: map[string]any{"id": 1},
	}))}, nil
}

func newGenkit(t *testing.T, m *loopModel) (*genkit.Genkit, ai.Model) {
	t.Helper()
	t.Setenv("GENKIT_ENV", "prod") // no reflection server
	g := genkit.Init(context.Background(), genkit.WithPromptDir(t.TempDir()))
	model := genkit.DefineModelAction(g, "test/loop", &ai.ModelOptions{
		Supports: &ai.ModelSupports{Tools: true, Multiturn: true},
	}, m.generate)
	return g, model
}

func TestGenerateLoopIsStopped(t *testing.T) {
	m := &loopModel{tool: "lookup"}
	g, model := newGenkit(t, m)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	var runs atomic.Int64
	lookup := genkitguard.DefineGuardedTool(g, tracker, "lookup", "Looks a record up by id.",
		func(_ *ai.ToolContext, in lookupIn) (string, error) {
			runs.Add(1)
			return fmt.Sprintf("record %d: Ada", in.ID), nil
		})

	_, err := genkit.Generate(context.Background(), g,
		ai.WithModel(model), ai.WithPrompt("Find record 1."), ai.WithTools(lookup), ai.WithMaxTurns(20))

	require.Error(t, err)
	assert.ErrorIs(t, err, toolguard.ErrLoop, "the typed error survives Generate")
	assert.EqualValues(t, 2, runs.Load())
	assert.Equal(t, 4, m.requests, "stopped at the fourth model request, not at the turn limit")
	require.Len(t, m.outputs, 3)
	assert.Equal(t, "record 1: Ada", m.outputs[0])
	hint, _ := m.outputs[2].(string)
	assert.True(t, strings.HasPrefix(hint, toolguard.HintMarker), hint)

	ledger := tracker.Ledger()
	require.Len(t, ledger, 4)
	last := ledger[3]
	assert.Equal(t, toolguard.Abort, last.Verdict)
	assert.Equal(t, toolguard.ReasonDuplicate, last.Reason)
}

type ctxKey struct{}

// The guarded tool checks and records each call with the tool context
// Genkit passes: the events of the calls carry the Generate caller's
// context values.
func TestGuardPassesContext(t *testing.T) {
	m := &loopModel{tool: "lookup", giveUp: true}
	g, model := newGenkit(t, m)
	var mu sync.Mutex
	var seen []any
	tracker := toolguard.NewTracker(toolguard.Policy{OnEvent: func(e toolguard.Event) {
		if e.Kind != toolguard.EventDecision && e.Kind != toolguard.EventRecord {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, e.Context.Value(ctxKey{}))
	}})
	lookup := genkitguard.DefineGuardedTool(g, tracker, "lookup", "Looks a record up by id.",
		func(_ *ai.ToolContext, in lookupIn) (string, error) { return fmt.Sprintf("record %d: Ada", in.ID), nil })

	ctx := context.WithValue(context.Background(), ctxKey{}, "request-7")
	_, err := genkit.Generate(ctx, g,
		ai.WithModel(model), ai.WithPrompt("Find record 1."), ai.WithTools(lookup), ai.WithMaxTurns(20))
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	for i, v := range seen {
		assert.Equal(t, "request-7", v, "event %d", i)
	}

	// A function called directly with no tool context still runs.
	fn := genkitguard.Guard(toolguard.NewTracker(toolguard.Policy{}), "step",
		func(_ *ai.ToolContext, in lookupIn) (string, error) { return "ok", nil })
	out, err := fn(nil, lookupIn{ID: 1})
	require.NoError(t, err)
	assert.Equal(t, "ok", out)
}

func TestGenerateFinishesAfterHint(t *testing.T) {
	m := &loopModel{tool: "lookup", giveUp: true}
	g, model := newGenkit(t, m)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	var runs atomic.Int64
	lookup := genkitguard.DefineGuardedTool(g, tracker, "lookup", "Looks a record up by id.",
		func(_ *ai.ToolContext, in lookupIn) (string, error) {
			runs.Add(1)
			return fmt.Sprintf("record %d: Ada", in.ID), nil
		})

	resp, err := genkit.Generate(context.Background(), g,
		ai.WithModel(model), ai.WithPrompt("Find record 1."), ai.WithTools(lookup), ai.WithMaxTurns(20))

	require.NoError(t, err)
	assert.Equal(t, "Record 1 is Ada.", resp.Text())
	assert.EqualValues(t, 2, runs.Load())
}

// A struct output cannot hold the hint without help: WithHintOutput puts
// it in a field the model reads.
func TestStructOutputWithHintOutput(t *testing.T) {
	m := &loopModel{tool: "fetch"}
	g, model := newGenkit(t, m)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	var runs atomic.Int64
	fetch := genkitguard.DefineGuardedTool(g, tracker, "fetch", "Fetches a record.",
		func(_ *ai.ToolContext, in lookupIn) (record, error) {
			runs.Add(1)
			return record{ID: in.ID, Name: "Ada"}, nil
		},
		genkitguard.WithHintOutput(func(msg string) record { return record{Note: msg} }))

	_, err := genkit.Generate(context.Background(), g,
		ai.WithModel(model), ai.WithPrompt("Find record 1."), ai.WithTools(fetch), ai.WithMaxTurns(20))

	require.Error(t, err)
	assert.EqualValues(t, 2, runs.Load())
	require.Len(t, m.outputs, 3)
	third, ok := m.outputs[2].(map[string]any)
	require.True(t, ok, "%T", m.outputs[2])
	assert.True(t, strings.HasPrefix(fmt.Sprint(third["note"]), toolguard.HintMarker), third)
}

// Without WithHintOutput a struct output cannot carry the hint, so the
// Hint fails the call (and Genkit's Generate) with the hint's text.
func TestStructOutputWithoutHintOutput(t *testing.T) {
	m := &loopModel{tool: "fetch"}
	g, model := newGenkit(t, m)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	fetch := genkitguard.DefineGuardedTool(g, tracker, "fetch", "Fetches a record.",
		func(_ *ai.ToolContext, in lookupIn) (record, error) {
			return record{ID: in.ID, Name: "Ada"}, nil
		})

	_, err := genkit.Generate(context.Background(), g,
		ai.WithModel(model), ai.WithPrompt("Find record 1."), ai.WithTools(fetch), ai.WithMaxTurns(20))

	require.Error(t, err)
	assert.Contains(t, err.Error(), "toolguard/genkitguard: tool \"fetch\" was not executed")
	assert.Contains(t, err.Error(), toolguard.HintMarker)
	var se *status.Error
	assert.ErrorAs(t, err, &se)
	assert.Equal(t, 3, m.requests)
}

func TestAbortAsResultUntilMaxTurns(t *testing.T) {
	m := &loopModel{tool: "lookup"}
	g, model := newGenkit(t, m)
	tracker := toolguard.NewTracker(toolguard.Policy{})
	var runs atomic.Int64
	lookup := genkitguard.NewGuardedTool(tracker, "lookup", "Looks a record up by id.",
		func(_ *ai.ToolContext, in lookupIn) (string, error) {
			runs.Add(1)
			return "record", nil
		}, genkitguard.WithAbortAsResult())

	_, err := genkit.Generate(context.Background(), g,
		ai.WithModel(model), ai.WithPrompt("Find record 1."), ai.WithTools(lookup), ai.WithMaxTurns(6))

	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeded maximum tool call iterations")
	assert.EqualValues(t, 2, runs.Load())
	for _, o := range m.outputs[2:] {
		assert.True(t, strings.HasPrefix(fmt.Sprint(o), toolguard.HintMarker), o)
	}
}

// Guard unit tests call the guarded function directly.
func TestGuard(t *testing.T) {
	ctx := &ai.ToolContext{Context: context.Background()}
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4, NudgeRatio: 0.5})
	var runs int
	fn := genkitguard.Guard(tracker, "step", func(_ *ai.ToolContext, in lookupIn) (string, error) {
		runs++
		return "ok", nil
	})

	var outs []string
	for i := 0; i < 4; i++ {
		out, err := fn(ctx, lookupIn{ID: i})
		require.NoError(t, err)
		outs = append(outs, out)
	}
	assert.Equal(t, "ok", outs[0])
	assert.Equal(t, "ok\n\nYou have used 2 of 4 tool calls. Start wrapping up.", outs[1])
	assert.Equal(t, "ok", outs[2])
	assert.True(t, strings.HasPrefix(outs[3], "ok\n\nYou have used all 4 tool calls"), outs[3])

	_, err := fn(ctx, lookupIn{ID: 9})
	assert.ErrorIs(t, err, toolguard.ErrBudgetExhausted, "the guarded function itself keeps the error chain")
	assert.Equal(t, 4, runs)
}

type answer string

func TestGuardOutputKinds(t *testing.T) {
	ctx := &ai.ToolContext{Context: context.Background()}
	policy := toolguard.Policy{MaxRepeats: 1}

	named := genkitguard.Guard(toolguard.NewTracker(policy), "named",
		func(*ai.ToolContext, lookupIn) (answer, error) { return "x", nil })
	_, _ = named(ctx, lookupIn{})
	out, err := named(ctx, lookupIn{})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), toolguard.HintMarker))

	anyOut := genkitguard.Guard(toolguard.NewTracker(policy), "any",
		func(*ai.ToolContext, lookupIn) (any, error) { return map[string]int{"a": 1}, nil })
	_, _ = anyOut(ctx, lookupIn{})
	v, err := anyOut(ctx, lookupIn{})
	require.NoError(t, err)
	assert.IsType(t, "", v)

	ptr := genkitguard.Guard(toolguard.NewTracker(policy), "ptr",
		func(*ai.ToolContext, lookupIn) (*record, error) { return &record{}, nil },
		genkitguard.WithHintOutput(func(string) string { return "wrong type, ignored" }))
	_, _ = ptr(ctx, lookupIn{})
	p, err := ptr(ctx, lookupIn{})
	assert.Nil(t, p)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "toolguard/genkitguard: "), err.Error())

	// Abort keeps the typed error.
	_, err = ptr(ctx, lookupIn{})
	assert.ErrorIs(t, err, toolguard.ErrLoop)
}

func TestGuardNil(t *testing.T) {
	assert.Nil(t, genkitguard.Guard[lookupIn, string](toolguard.NewTracker(toolguard.Policy{}), "x", nil))
	fn := func(*ai.ToolContext, lookupIn) (string, error) { return "", nil }
	assert.NotNil(t, genkitguard.Guard(nil, "x", fn))
}

func TestGuardUnencodableInput(t *testing.T) {
	fn := genkitguard.Guard(toolguard.NewTracker(toolguard.Policy{}), "ch",
		func(*ai.ToolContext, chan int) (string, error) { return "ran", nil })
	_, err := fn(&ai.ToolContext{Context: context.Background()}, make(chan int))
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "toolguard/genkitguard: "), err.Error())
}

// Parallel tool requests of one model response run concurrently in
// Genkit; run with -race.
func TestParallelToolRequests(t *testing.T) {
	t.Setenv("GENKIT_ENV", "prod")
	g := genkit.Init(context.Background(), genkit.WithPromptDir(t.TempDir()))
	tracker := toolguard.NewTracker(toolguard.Policy{})
	var runs atomic.Int64
	lookup := genkitguard.DefineGuardedTool(g, tracker, "lookup", "Looks a record up by id.",
		func(_ *ai.ToolContext, in lookupIn) (string, error) {
			runs.Add(1)
			return fmt.Sprint("record ", in.ID), nil
		})
	var turn atomic.Int64
	var seen []any
	model := genkit.DefineModelAction(g, "test/parallel", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		func(_ context.Context, req *ai.ModelRequest, _ any, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			if turn.Add(1) > 1 {
				last := req.Messages[len(req.Messages)-1]
				for _, p := range last.Content {
					seen = append(seen, p.ToolResponse.Output)
				}
				return &ai.ModelResponse{Message: ai.NewModelTextMessage("done")}, nil
			}
			var parts []*ai.Part
			for i, id := range []int{1, 1, 1, 2, 2, 3} {
				parts = append(parts, ai.NewToolRequestPart(&ai.ToolRequest{
					Name: "lookup", Ref: fmt.Sprint("r", i), Input: map[string]any{"id": id},
				}))
			}
			return &ai.ModelResponse{Message: ai.NewModelMessage(parts...)}, nil
		})

	resp, err := genkit.Generate(context.Background(), g, ai.WithModel(model), ai.WithPrompt("go"), ai.WithTools(lookup))
	require.NoError(t, err)
	assert.Equal(t, "done", resp.Text())
	assert.EqualValues(t, 5, runs.Load())
	var hints int
	for _, o := range seen {
		if strings.HasPrefix(fmt.Sprint(o), toolguard.HintMarker) {
			hints++
		}
	}
	assert.Equal(t, 1, hints)
	assert.Len(t, seen, 6)
}
