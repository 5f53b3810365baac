// Package genkitguard guards the tools of a Firebase Genkit for Go
// (github.com/firebase/genkit/go) application with a toolguard.Tracker.
//
// The usual form is Middleware, passed to genkit.Generate with ai.WithUse:
// it guards every tool of the Generate call, whatever its output type and
// wherever it was defined, uses the tool request's ref as the call id,
// starts a new turn per Generate and removes the tools in the wind-down.
//
// Guard (and DefineGuardedTool, NewGuardedTool) guards one tool function
// instead, so that the tool is guarded wherever it runs, also outside
// Generate (a flow calling tool.RunRaw, another framework running the
// tool). It cannot see the request's ref, so its calls carry no ID, and a
// hint can be the tool's output only when Out can hold text: Out's kind is
// string, Out is an interface type such as any, or WithHintOutput gave a
// function that turns the text into an Out; for any other Out a hint
// fails the call. Use one form or the other for a tool, not both: a call
// checked twice counts twice.
//
// With either form, an Abort fails the tool call with Decision.Err, which
// ends Generate with an error for which errors.Is(err, toolguard.ErrLoop)
// or errors.Is(err, toolguard.ErrBudgetExhausted) holds; WithAbortAsResult
// makes the abort message the tool's output instead, and Genkit's own
// turn limit (ai.WithMaxTurns) ends the run. Genkit runs the tool requests
// of one model response concurrently; the Tracker is safe for that, and
// each call is its own round.
//
// With Guard, when a call moves the turn into toolguard.PhaseNudge or
// toolguard.PhaseWindDown and Out's kind is string, the tracker's Guidance
// message is appended to the output after a blank line; with Middleware
// it is added to each model request of the phase. WithoutGuidance turns
// both off.
package genkitguard

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/toolguard/toolguard"
)

// Option changes how a tool is guarded.
type Option func(*options)

type options struct {
	abortAsResult bool
	noGuidance    bool
	noReset       bool
	hintOutput    any // func(string) Out
}

// WithAbortAsResult makes an Abort return its message as the tool's output
// (under the same rules as a Hint) instead of failing the call.
func WithAbortAsResult() Option {
	return func(o *options) { o.abortAsResult = true }
}

// WithoutGuidance stops the guard from appending the nudge and wind-down
// messages to the output of the call that entered those phases.
func WithoutGuidance() Option {
	return func(o *options) { o.noGuidance = true }
}

// WithoutReset stops Middleware from resetting the tracker at the start of
// each Generate call; the caller calls Tracker.Reset before each new user
// input instead.
func WithoutReset() Option {
	return func(o *options) { o.noReset = true }
}

// WithHintOutput sets how a skipped call's message becomes the tool's
// output when Out cannot hold text itself, for example a struct with a
// field for notes. It applies only to tools whose output type is Out;
// for other tools it is ignored.
func WithHintOutput[Out any](fn func(message string) Out) Option {
	return func(o *options) {
		if fn != nil {
			o.hintOutput = fn
		}
	}
}

// Guard returns a tool function that checks each call of fn with t before
// it runs and records its outcome after, both with the call's tool context
// (so a Store, the events and a toolguard.WithRound round see it). name must
// be the tool's name. A nil t or fn is returned as it is.
func Guard[In, Out any](t *toolguard.Tracker, name string, fn ai.ToolFunc[In, Out], opts ...Option) ai.ToolFunc[In, Out] {
	if t == nil || fn == nil {
		return fn
	}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	toText := textSetter[Out](o.hintOutput)
	return func(ctx *ai.ToolContext, in In) (Out, error) {
		var zero Out
		args, err := json.Marshal(in)
		if err != nil {
			return zero, fmt.Errorf("toolguard/genkitguard: tool %q: encode input: %w", name, err)
		}
		cctx := callContext(ctx)
		c := toolguard.Call{Tool: name, Args: args}
		d := t.ShouldSkipContext(cctx, c)
		if d.Skip() {
			if d.Verdict == toolguard.Abort && !o.abortAsResult {
				if d.Err != nil {
					return zero, d.Err
				}
				return zero, fmt.Errorf("toolguard/genkitguard: tool %q was not executed: %s", name, d.Message)
			}
			if out, ok := toText(d.Message); ok {
				return out, nil
			}
			return zero, fmt.Errorf("toolguard/genkitguard: tool %q was not executed and its output type cannot carry the hint: %s",
				name, d.Message)
		}
		out, err := fn(ctx, in)
		phase := t.RecordContext(cctx, c, toolguard.Outcome{Result: resultText(out), Err: err})
		if err != nil || o.noGuidance || phase == d.Phase ||
			(phase != toolguard.PhaseNudge && phase != toolguard.PhaseWindDown) {
			return out, err
		}
		// A concurrent call may have moved the phase on since; a later
		// phase's message then belongs to the call that reached it.
		gd := t.Guidance()
		if gd.Message == "" || (phase == toolguard.PhaseNudge && gd.Phase != toolguard.PhaseNudge) {
			return out, nil
		}
		if v := reflect.ValueOf(&out).Elem(); v.Kind() == reflect.String {
			v.SetString(v.String() + "\n\n" + gd.Message)
		}
		return out, nil
	}
}

// DefineGuardedTool defines a tool in g like genkit.DefineTool, with its
// function guarded by t (see Guard). For Genkit's tool options, call
// genkit.DefineTool with Guard yourself.
func DefineGuardedTool[In, Out any](g *genkit.Genkit, t *toolguard.Tracker, name, description string,
	fn ai.ToolFunc[In, Out], opts ...Option,
) *ai.ToolAction[In, Out] {
	return genkit.DefineTool(g, name, description, Guard(t, name, fn, opts...))
}

// NewGuardedTool is ai.NewTool with its function guarded by t: a tool that
// is not registered in g, to pass to genkit.Generate with ai.WithTools.
func NewGuardedTool[In, Out any](t *toolguard.Tracker, name, description string,
	fn ai.ToolFunc[In, Out], opts ...Option,
) *ai.ToolAction[In, Out] {
	return ai.NewTool(name, description, Guard(t, name, fn, opts...))
}

// callContext is the context a tool call is checked and recorded with:
// the tool context Genkit passes (its trace, deadline and cancellation, and
// a round from toolguard.WithRound), or context.Background for a function
// called with none.
func callContext(tc *ai.ToolContext) context.Context {
	if tc == nil || tc.Context == nil {
		return context.Background()
	}
	return tc
}

// textSetter returns how a message becomes an Out, if it can.
func textSetter[Out any](custom any) func(string) (Out, bool) {
	if fn, ok := custom.(func(string) Out); ok {
		return func(s string) (Out, bool) { return fn(s), true }
	}
	typ := reflect.TypeFor[Out]()
	switch {
	case typ.Kind() == reflect.String:
		return func(s string) (Out, bool) {
			var out Out
			reflect.ValueOf(&out).Elem().SetString(s)
			return out, true
		}
	case typ.Kind() == reflect.Interface && reflect.TypeFor[string]().Implements(typ):
		return func(s string) (Out, bool) {
			var out Out
			reflect.ValueOf(&out).Elem().Set(reflect.ValueOf(s))
			return out, true
		}
	}
	return func(string) (Out, bool) {
		var zero Out
		return zero, false
	}
}

// resultText is what the tracker compares of an output: a string as it
// is, anything else as JSON.
func resultText(out any) string {
	if s, ok := out.(string); ok {
		return s
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Sprintf("%T", out)
	}
	return string(b)
}
