// Package fantasyguard guards the tool calls of a Charm fantasy agent
// (charm.land/fantasy) with a toolguard.Tracker, through fantasy's own
// extension points: each fantasy.AgentTool is wrapped, the agent's
// PrepareStep tells the model the budget's phase and takes the tools away in
// the wind-down, and a StopCondition ends the run after an abort.
//
//	guard := fantasyguard.New(toolguard.NewTracker(toolguard.Policy{}))
//	agent := fantasy.NewAgent(model,
//		fantasy.WithTools(guard.Tools(search, fetch)...),
//		fantasy.WithPrepareStep(guard.PrepareStep(nil)),
//		fantasy.WithStopConditions(guard.StopCondition()),
//	)
//	result, err := agent.Generate(ctx, fantasy.AgentCall{Prompt: question})
//	if err := guard.Err(); err != nil { ... } // the turn was aborted
//
// What happens to a call (the wrapped tool's Run):
//
//   - It is checked as toolguard.Call{ID: the tool call id, Tool: the
//     tool's name, Args: the call's input JSON}, with the step's context,
//     in which the calls of one model response are one round
//     (toolguard.Tracker.WithRound, set by PrepareStep).
//   - Allow: the tool runs; its response's Content, and its error (a Go
//     error, or a response with IsError), are recorded.
//   - Hint: the tool does not run; its response is an error response whose
//     text is the hint (it starts with toolguard.HintMarker), which the
//     model reads as the tool's result, and the run goes on.
//   - Abort: the tool does not run; its response is an error response with
//     the abort's message and StopTurn set, so fantasy answers every tool
//     call of the step and makes no further model request. Err returns the
//     abort's error (a *toolguard.LoopError or *toolguard.BudgetError) until
//     the next turn, and StopCondition reports true.
//
// PrepareStep starts a new turn (toolguard.Tracker.Reset) at the first step
// of every Generate or Stream call, unless WithoutReset was given; from the
// nudge on it adds the tracker's Guidance text to the step's messages as a
// user message, and from the wind-down on it sets DisableAllTools, so the
// request goes without tools. A tool the model calls anyway is still run
// through the wrapped tool, which refuses it with the budget's message.
package fantasyguard

import (
	"context"
	"errors"
	"sync"

	"charm.land/fantasy"

	"github.com/toolguard/toolguard"
)

// Guard connects one Tracker to the tools and steps of a fantasy agent.
// Use one Guard per conversation, like its Tracker.
type Guard struct {
	tracker *toolguard.Tracker
	noReset bool

	mu      sync.Mutex
	aborted error // the first abort of the current turn
}

// Option changes a Guard.
type Option func(*Guard)

// WithoutReset stops PrepareStep from resetting the tracker at the first
// step of each Generate or Stream call; the caller calls Reset before each
// new user input instead (for a turn that spans several calls).
func WithoutReset() Option {
	return func(g *Guard) { g.noReset = true }
}

// New returns a Guard for t. A nil t gets a tracker of the zero Policy.
func New(t *toolguard.Tracker, opts ...Option) *Guard {
	if t == nil {
		t = toolguard.NewTracker(toolguard.Policy{})
	}
	g := &Guard{tracker: t}
	for _, opt := range opts {
		if opt != nil {
			opt(g)
		}
	}
	return g
}

// Tracker returns the guard's tracker.
func (g *Guard) Tracker() *toolguard.Tracker { return g.tracker }

// Reset starts a new turn: the tracker's per-turn state and the turn's
// abort are cleared.
func (g *Guard) Reset() {
	g.tracker.Reset()
	g.mu.Lock()
	g.aborted = nil
	g.mu.Unlock()
}

// Err returns the error of the first abort of the current turn: a
// *toolguard.LoopError (errors.Is(err, toolguard.ErrLoop)) or a
// *toolguard.BudgetError (errors.Is(err, toolguard.ErrBudgetExhausted)),
// or nil.
func (g *Guard) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.aborted
}

// StopCondition reports true once a call of the current turn was aborted.
func (g *Guard) StopCondition() fantasy.StopCondition {
	return func([]fantasy.StepResult) bool { return g.Err() != nil }
}

// PrepareStep returns a fantasy.PrepareStepFunction that runs next (when
// not nil) and then applies the tracker's turn and phase to the step: a
// Reset at the first step (see WithoutReset), the calls of the step as one
// round, the guidance text as a user message from the nudge on, and no
// tools from the wind-down on.
func (g *Guard) PrepareStep(next fantasy.PrepareStepFunction) fantasy.PrepareStepFunction {
	return func(ctx context.Context, opts fantasy.PrepareStepFunctionOptions) (context.Context, fantasy.PrepareStepResult, error) {
		if opts.StepNumber == 0 && !g.noReset {
			g.Reset()
		}
		var prepared fantasy.PrepareStepResult
		if next != nil {
			var err error
			ctx, prepared, err = next(ctx, opts)
			if err != nil {
				return ctx, prepared, err
			}
		}
		if ctx == nil {
			ctx = context.Background()
		}
		ctx = g.tracker.WithRound(ctx)
		gd := g.tracker.Guidance()
		if gd.Message != "" {
			msgs := prepared.Messages
			if msgs == nil {
				msgs = opts.Messages
			}
			// A new slice: the agent keeps the step's input messages.
			prepared.Messages = append(append(make([]fantasy.Message, 0, len(msgs)+1), msgs...),
				fantasy.NewUserMessage(gd.Message))
		}
		if gd.StripTools {
			prepared.DisableAllTools = true
		}
		return ctx, prepared, nil
	}
}

// Tools wraps each tool (see Tool).
func (g *Guard) Tools(tools ...fantasy.AgentTool) []fantasy.AgentTool {
	out := make([]fantasy.AgentTool, len(tools))
	for i, t := range tools {
		out[i] = g.Tool(t)
	}
	return out
}

// Tool returns t guarded: its Run checks each call with the tracker before
// it runs t and records the outcome after. A nil t is returned as it is.
func (g *Guard) Tool(t fantasy.AgentTool) fantasy.AgentTool {
	if t == nil {
		return nil
	}
	return &guardedTool{AgentTool: t, g: g}
}

type guardedTool struct {
	fantasy.AgentTool
	g *Guard
}

func (t *guardedTool) Run(ctx context.Context, call fantasy.ToolCall) (fantasy.ToolResponse, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	name := call.Name
	if name == "" {
		name = t.Info().Name
	}
	c := toolguard.Call{ID: call.ID, Tool: name}
	if call.Input != "" {
		c.Args = []byte(call.Input) // not JSON: the tracker's documented fallback
	}
	tr := t.g.tracker
	d := tr.ShouldSkipContext(ctx, c)
	switch d.Verdict {
	case toolguard.Allow:
		resp, err := t.AgentTool.Run(ctx, call)
		out := toolguard.Outcome{Result: resp.Content, Err: err}
		if err == nil && resp.IsError {
			out.Err = errors.New(resp.Content)
		}
		tr.RecordContext(ctx, c, out)
		return resp, err
	case toolguard.Hint:
		return fantasy.NewTextErrorResponse(d.Message), nil
	}
	abortErr := d.Err
	if abortErr == nil {
		abortErr = errors.New("toolguard/fantasyguard: call refused: " + d.Reason.String())
	}
	t.g.mu.Lock()
	if t.g.aborted == nil {
		t.g.aborted = abortErr
	}
	t.g.mu.Unlock()
	msg := d.Message
	if msg == "" {
		msg = abortErr.Error()
	}
	resp := fantasy.NewTextErrorResponse(msg)
	resp.StopTurn = true
	return resp, nil
}
