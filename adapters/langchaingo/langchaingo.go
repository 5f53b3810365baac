// Package langchaingo guards the tools of a github.com/tmc/langchaingo agent
// with a toolguard.Tracker.
//
// Wrap a tool (or WrapAll a slice) and give the wrapped tools to the agent:
//
//	tracker := toolguard.NewTracker(toolguard.Policy{})
//	guarded := langchaingo.WrapAll(tracker, []tools.Tool{tools.Calculator{}})
//	agent := agents.NewOpenAIFunctionsAgent(model, guarded)
//	executor := agents.NewExecutor(agent)
//
// Before each call the tracker decides:
//
//   - Allow: the tool runs and its outcome is recorded.
//   - Hint: the tool does not run; its output is the hint text (it starts
//     with toolguard.HintMarker) and its error is nil, so the agent goes on
//     and the model reads the hint as the tool's observation.
//   - Abort: the tool does not run and Call returns Decision.Err, a
//     *toolguard.LoopError or *toolguard.BudgetError. A langchaingo
//     agents.Executor treats every tool error as fatal, so the run stops
//     with that error: that is what Abort means. With WithAbortAsResult the
//     abort message is returned as the output with a nil error instead, and
//     the run goes on until the agent finishes or reaches its iteration
//     limit.
//
// langchaingo tools take one string. A string that is a JSON object is the
// call's arguments as it is; any other string s is checked as the arguments
// {"input": s}, so identical inputs are identical calls. The tool name is
// Name(). The provider's tool call ID does not reach a tools.Tool, so calls
// carry no ID.
//
// When a call moves the turn into toolguard.PhaseNudge or
// toolguard.PhaseWindDown, the tracker's Guidance message is appended to the
// tool's output after a blank line, since the executor offers no other way
// to tell the model to wrap up; WithoutGuidance turns this off.
//
// One Tracker holds one session: call its Reset before each new user input
// (each Executor run).
package langchaingo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard"
)

// Option changes how Wrap guards a tool.
type Option func(*options)

type options struct {
	abortAsResult bool
	noGuidance    bool
}

// WithAbortAsResult makes an Abort return its message (which starts with
// toolguard.HintMarker) as the tool's output with a nil error, so the agent
// run goes on instead of stopping. Use it when the executor's MaxIterations,
// not the tracker, should end the run.
func WithAbortAsResult() Option {
	return func(o *options) { o.abortAsResult = true }
}

// WithoutGuidance stops Wrap from appending the nudge and wind-down
// messages to the output of the call that entered those phases.
func WithoutGuidance() Option {
	return func(o *options) { o.noGuidance = true }
}

// Wrap returns a tool with the name and description of tool whose Call is
// checked by t before it runs and recorded after. A nil t or tool is
// returned as it is.
func Wrap(t *toolguard.Tracker, tool tools.Tool, opts ...Option) tools.Tool {
	if t == nil || tool == nil {
		return tool
	}
	g := &guarded{tracker: t, next: tool}
	for _, opt := range opts {
		if opt != nil {
			opt(&g.opts)
		}
	}
	return g
}

// WrapAll wraps every tool of ts with Wrap and returns them in a new slice
// in the same order.
func WrapAll(t *toolguard.Tracker, ts []tools.Tool, opts ...Option) []tools.Tool {
	out := make([]tools.Tool, len(ts))
	for i, tool := range ts {
		out[i] = Wrap(t, tool, opts...)
	}
	return out
}

// guarded is a tools.Tool checked by a Tracker.
type guarded struct {
	tracker *toolguard.Tracker
	next    tools.Tool
	opts    options
}

var _ tools.Tool = (*guarded)(nil)

// Name returns the wrapped tool's name.
func (g *guarded) Name() string { return g.next.Name() }

// Description returns the wrapped tool's description.
func (g *guarded) Description() string { return g.next.Description() }

// Call checks the call, runs the wrapped tool if it is allowed and records
// its outcome.
func (g *guarded) Call(ctx context.Context, input string) (string, error) {
	c := toolguard.Call{Tool: g.next.Name(), Args: Args(input)}
	d := g.tracker.ShouldSkipContext(ctx, c)
	switch d.Verdict {
	case toolguard.Allow:
	case toolguard.Hint:
		return d.Message, nil
	default:
		if g.opts.abortAsResult {
			return d.Message, nil
		}
		if d.Err == nil {
			return "", errors.New("toolguard/langchaingo: call refused: " + d.Reason.String())
		}
		return "", d.Err
	}
	out, err := g.next.Call(ctx, input)
	phase := g.tracker.RecordContext(ctx, c, toolguard.Outcome{Result: out, Err: err})
	if err == nil && !g.opts.noGuidance && phase != d.Phase &&
		(phase == toolguard.PhaseNudge || phase == toolguard.PhaseWindDown) {
		// A concurrent call may have moved the phase on since; a later
		// phase's message then belongs to the call that reached it.
		gd := g.tracker.Guidance()
		if gd.Message != "" && (phase != toolguard.PhaseNudge || gd.Phase == toolguard.PhaseNudge) {
			out += "\n\n" + gd.Message
		}
	}
	return out, err
}

// Args returns the arguments a langchaingo tool input is checked as: the
// input itself when it is a JSON object, otherwise {"input": input}.
func Args(input string) json.RawMessage {
	trimmed := strings.TrimSpace(input)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	b, err := json.Marshal(map[string]string{"input": input})
	if err != nil {
		return nil // cannot happen for a map of strings
	}
	return b
}
