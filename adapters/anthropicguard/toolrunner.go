package anthropicguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/round"
)

// ToolRunner is anthropic-sdk-go's tool runner (Beta.Messages.NewToolRunner)
// with every tool call checked and recorded by a Tracker. It embeds the
// SDK's *anthropic.BetaToolRunner, so Params, Messages, LastMessage and the
// rest work as documented there; NextMessage, RunToCompletion, All and
// AddTools are replaced by guarded versions.
//
// A tool called outside a ToolRunner step (through the SDK runner's own
// methods) is still checked and recorded, as its own round and without the
// tool_use id.
//
// Each step (one NextMessage) runs the tool calls of one model response,
// in parallel as the SDK does, and they are checked as one round with the
// step's context (Tracker.WithRound, ShouldSkipContext, RecordContext), each
// under the tool_use block's id:
//
//   - Allow: the tool runs and its outcome is recorded.
//   - Hint: the tool does not run; its tool_result is Decision.Message,
//     which starts with toolguard.HintMarker and says it was not executed.
//   - Abort: the tool does not run, the step's context is cancelled with the
//     decision's error so the SDK sends no further request, and NextMessage
//     returns that error (errors.Is ErrLoop or ErrBudgetExhausted). The one
//     exception is a parallel call past the budget of a response the model
//     gave while it still had tools: it is answered with Decision.Message,
//     like a hint, and the wind-down follows. After an abort the turn is
//     over: the last assistant message's tool calls stay
//     unanswered, so start the next turn from Messages() without it or
//     with a new runner.
//
// The nudge and the request to summarize are added as a text block to the
// tool_result of the call whose Record changed the phase, so the model
// reads them with the results; from the wind-down on, the runner's requests
// set tool_choice to "none" (StripTools). Both come from the harness, not
// from the user: call Tracker.Reset only for new user input.
//
// Where the SDK records its own execute_tool spans for the tools
// (anthropic.custom_tool_use), use otelguard's WithToolSpanFromContext so
// each call gets one span, not two.
type ToolRunner struct {
	*anthropic.BetaToolRunner
	guard *runnerGuard
}

// NewToolRunner creates the SDK's tool runner for svc (&client.Beta.Messages)
// with tools wrapped by the Tracker t; params and opts are those of
// BetaMessageService.NewToolRunner. A nil t allows every call.
func NewToolRunner(t *toolguard.Tracker, svc *anthropic.BetaMessageService, tools []anthropic.BetaTool, params anthropic.BetaToolRunnerParams, opts ...option.RequestOption) *ToolRunner {
	g := &runnerGuard{tracker: t}
	r := &ToolRunner{BetaToolRunner: svc.NewToolRunner(g.wrap(tools), params, opts...), guard: g}
	g.runner = r.BetaToolRunner
	return r
}

// AddTools adds tools to the runner, wrapped like those given to
// NewToolRunner.
func (r *ToolRunner) AddTools(tools ...anthropic.BetaTool) {
	r.BetaToolRunner.AddTools(r.guard.wrap(tools)...)
}

// NextMessage runs one step: the tool calls of the last response, checked
// as one round, then the next request. It returns what the SDK's
// NextMessage returns, except that a step with an aborted call returns
// (nil, the call's error) and sends no request.
func (r *ToolRunner) NextMessage(ctx context.Context) (*anthropic.BetaMessage, error) {
	stepCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := &step{pending: pendingCalls(r.LastMessage()), cancel: cancel, toolsOffered: r.Params.ToolChoice.OfNone == nil}
	if r.guard.tracker != nil {
		stepCtx = r.guard.tracker.WithRound(stepCtx)
	}
	msg, err := r.BetaToolRunner.NextMessage(context.WithValue(stepCtx, stepKey{}, s))
	if abortErr := s.abortErr(); abortErr != nil {
		return nil, abortErr
	}
	return msg, err
}

// RunToCompletion calls NextMessage until the conversation is complete, a
// call is aborted or a request fails, and returns the last assistant
// message (nil with the error of an abort or a failure).
func (r *ToolRunner) RunToCompletion(ctx context.Context) (*anthropic.BetaMessage, error) {
	for {
		msg, err := r.NextMessage(ctx)
		if err != nil {
			return nil, err
		}
		if msg == nil {
			return r.LastMessage(), nil
		}
	}
}

// All returns an iterator over the messages of NextMessage until the
// conversation is complete; an abort or a failure is yielded as the last
// error.
func (r *ToolRunner) All(ctx context.Context) iter.Seq2[*anthropic.BetaMessage, error] {
	return func(yield func(*anthropic.BetaMessage, error) bool) {
		for {
			msg, err := r.NextMessage(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			if msg == nil || !yield(msg, nil) {
				return
			}
		}
	}
}

// runnerGuard is what the wrapped tools of one runner share.
type runnerGuard struct {
	tracker *toolguard.Tracker
	runner  *anthropic.BetaToolRunner

	mu   sync.Mutex
	told toolguard.Phase // the phase whose guidance was last sent
}

func (g *runnerGuard) wrap(tools []anthropic.BetaTool) []anthropic.BetaTool {
	out := make([]anthropic.BetaTool, len(tools))
	for i, t := range tools {
		out[i] = guardedTool{BetaTool: t, guard: g}
	}
	return out
}

// guidance returns the text of the tracker's phase when it was not sent
// yet and send is true (the SDK replaces a failed call's result with its
// error text, so the text waits for the next result), and strips the
// runner's tools from the wind-down on. The runner's
// main goroutine waits for the tools of a step before it reads Params, so
// setting it here is safe.
func (g *runnerGuard) guidance(send bool) string {
	gd := g.tracker.Guidance()
	g.mu.Lock()
	defer g.mu.Unlock()
	if gd.StripTools && g.runner != nil {
		g.runner.Params.ToolChoice = anthropic.BetaToolChoiceUnionParam{OfNone: &anthropic.BetaToolChoiceNoneParam{}}
	}
	if !send || gd.Phase == g.told {
		return ""
	}
	g.told = gd.Phase
	return gd.Message
}

// stepKey is the context key of the current step.
type stepKey struct{}

// step is one NextMessage: the tool calls it answers, to find each call's
// id, and how to stop it.
type step struct {
	cancel       context.CancelCauseFunc
	toolsOffered bool // the response was asked for with tools (before any wind-down)

	mu      sync.Mutex
	pending []pendingCall
	aborted error
}

type pendingCall struct {
	id, name string
	input    []byte // as the runner marshals it for Execute
	taken    bool
}

// pendingCalls returns the tool_use blocks of msg, whose calls the next
// step runs.
func pendingCalls(msg *anthropic.BetaMessage) []pendingCall {
	if msg == nil {
		return nil
	}
	var out []pendingCall
	for _, b := range msg.Content {
		if b.Type != "tool_use" {
			continue
		}
		tu := b.AsToolUse()
		input, err := json.Marshal(tu.Input)
		if err != nil {
			continue
		}
		out = append(out, pendingCall{id: tu.ID, name: tu.Name, input: input})
	}
	return out
}

// claim returns the id of the first unclaimed tool_use block with this
// name and input. Identical calls of one response are told apart by order
// of arrival: they are the same call, so which gets which id matters to
// nothing but the id.
func (s *step) claim(name string, input []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.pending {
		p := &s.pending[i]
		if !p.taken && p.name == name && bytes.Equal(p.input, input) {
			p.taken = true
			return p.id
		}
	}
	return ""
}

func (s *step) abort(err error) {
	s.mu.Lock()
	if s.aborted == nil {
		s.aborted = err
	}
	s.mu.Unlock()
	s.cancel(err)
}

func (s *step) abortErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

// guardedTool is a runner tool behind the Tracker.
type guardedTool struct {
	anthropic.BetaTool
	guard *runnerGuard
}

func (t guardedTool) Execute(ctx context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	tr := t.guard.tracker
	if tr == nil {
		return t.BetaTool.Execute(ctx, input)
	}
	c := toolguard.Call{Tool: t.Name()}
	if len(input) > 0 {
		c.Args = input
	}
	s, _ := ctx.Value(stepKey{}).(*step)
	if s != nil {
		c.ID = s.claim(c.Tool, input)
	}
	d := tr.ShouldSkipContext(ctx, c)
	switch d.Verdict {
	case toolguard.Hint:
		return []anthropic.BetaToolResultBlockParamContentUnion{textResult(round.SkipText(d))}, nil
	case toolguard.Abort:
		err := d.Err
		if err == nil {
			err = toolguard.ErrLoop
		}
		if s != nil && s.toolsOffered && errors.Is(err, toolguard.ErrBudgetExhausted) {
			// A parallel call past the budget: the model was allowed
			// tools, so it is told and the wind-down follows.
			t.guard.guidance(false)
			return []anthropic.BetaToolResultBlockParamContentUnion{textResult(round.SkipText(d))}, nil
		}
		if s != nil {
			s.abort(err)
		}
		return nil, err
	}
	content, err := t.BetaTool.Execute(ctx, input)
	tr.RecordContext(ctx, c, toolguard.Outcome{Result: resultText(content), Err: err})
	if msg := t.guard.guidance(err == nil); msg != "" {
		content = append(content, textResult(msg))
	}
	return content, err
}

func textResult(text string) anthropic.BetaToolResultBlockParamContentUnion {
	return anthropic.BetaToolResultBlockParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: text}}
}

// resultText is the text of a tool's result blocks, what the Tracker
// compares between calls; other blocks count by their JSON.
func resultText(content []anthropic.BetaToolResultBlockParamContentUnion) string {
	var b strings.Builder
	for _, c := range content {
		if c.OfText != nil {
			b.WriteString(c.OfText.Text)
		} else if raw, err := json.Marshal(c); err == nil {
			b.Write(raw)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
