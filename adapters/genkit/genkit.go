// Package genkit guards the tools of a Firebase Genkit for Go
// (github.com/firebase/genkit/go) application with a toolguard.Tracker.
//
// Define a tool with DefineGuardedTool instead of genkit.DefineTool (or
// NewGuardedTool instead of ai.NewTool, or wrap the function with Guard):
//
//	tracker := toolguard.NewTracker(toolguard.Policy{})
//	search := tggenkit.DefineGuardedTool(g, tracker, "search", "Searches the web.",
//		func(ctx *ai.ToolContext, in SearchInput) (string, error) { ... })
//	tracker.Reset() // before each new user input
//	resp, err := genkit.Generate(ctx, g, ai.WithPrompt(question), ai.WithTools(search))
//
// Before each call the tracker decides:
//
//   - Allow: the function runs and its outcome is recorded.
//   - Hint: the function does not run. The model must read the hint text
//     (it starts with toolguard.HintMarker) as the tool's output, so it
//     is returned as the output when Out can hold it: Out's kind is
//     string, or Out is an interface type such as any, or WithHintOutput
//     gave a function that turns the text into an Out. For any other Out
//     the call fails with an error holding the hint text: Genkit v1.4
//     turns every tool error into a failure of the whole Generate call
//     and never shows it to the model, so then a Hint stops the run like
//     an Abort.
//   - Abort: the function does not run and the call fails with
//     Decision.Err. Genkit ends Generate with a *core.GenkitError (status
//     INTERNAL) whose message includes that error's text but does not wrap
//     it, so errors.Is(err, toolguard.ErrLoop) is false for the error of
//     Generate; the tracker's Ledger (an entry with Verdict Abort) or
//     Phase (PhaseExhausted) tells why the run stopped. With
//     WithAbortAsResult an Abort is returned like a Hint instead, and
//     Genkit's own turn limit (ai.WithMaxTurns) ends the run.
//
// The call is checked as toolguard.Call{Tool: name, Args: JSON of the
// input}. Genkit does not hand a tool the model's call reference, so calls
// carry no ID. Genkit runs the tool requests of one model response
// concurrently; the Tracker is safe for that, and each call is its own
// round.
//
// When a call moves the turn into toolguard.PhaseNudge or
// toolguard.PhaseWindDown and Out's kind is string, the tracker's Guidance
// message is appended to the output after a blank line; WithoutGuidance
// turns this off.
package genkit

import (
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
// it runs and records its outcome after. name must be the tool's name. A
// nil t or fn is returned as it is.
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
			return zero, fmt.Errorf("toolguard/genkit: tool %q: encode input: %w", name, err)
		}
		c := toolguard.Call{Tool: name, Args: args}
		d := t.ShouldSkip(c)
		if d.Skip() {
			if d.Verdict == toolguard.Abort && !o.abortAsResult {
				if d.Err != nil {
					return zero, d.Err
				}
				return zero, fmt.Errorf("toolguard/genkit: tool %q was not executed: %s", name, d.Message)
			}
			if out, ok := toText(d.Message); ok {
				return out, nil
			}
			return zero, fmt.Errorf("toolguard/genkit: tool %q was not executed and its output type cannot carry the hint: %s",
				name, d.Message)
		}
		out, err := fn(ctx, in)
		phase := t.Record(c, toolguard.Outcome{Result: resultText(out), Err: err})
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
) *ai.ToolDef[In, Out] {
	return genkit.DefineTool(g, name, description, Guard(t, name, fn, opts...))
}

// NewGuardedTool is ai.NewTool with its function guarded by t: a tool that
// is not registered in g, to pass to genkit.Generate with ai.WithTools.
func NewGuardedTool[In, Out any](t *toolguard.Tracker, name, description string,
	fn ai.ToolFunc[In, Out], opts ...Option,
) *ai.ToolDef[In, Out] {
	return ai.NewTool(name, description, Guard(t, name, fn, opts...))
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
