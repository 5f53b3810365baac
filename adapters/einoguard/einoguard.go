// Package einoguard guards the tool calls of a github.com/cloudwego/eino agent
// with a toolguard.Tracker.
//
// The usual way is the tools-node middleware: it guards every tool of a
// compose.ToolsNode (and of a ReAct agent, whose ToolsConfig is a
// compose.ToolsNodeConfig), invokable, streamable and enhanced alike:
//
//	tracker := toolguard.NewTracker(toolguard.Policy{})
//	conf := &compose.ToolsNodeConfig{
//		Tools:               []tool.BaseTool{search, fetch},
//		ToolCallMiddlewares: []compose.ToolMiddleware{einoguard.Middleware(tracker)},
//	}
//
// WrapInvokable guards a single tool.InvokableTool instead, for code that
// runs tools itself. Use one or the other for a tool, not both: a call
// checked twice counts twice.
//
// Before each call the tracker decides:
//
//   - Allow: the tool runs and its outcome is recorded. The outcome of a
//     streamed call is recorded when its stream ends.
//   - Hint: the tool does not run; the hint text (it starts with
//     toolguard.HintMarker) is the call's result, so the model reads it in
//     the tool message.
//   - Abort: the tool does not run and the call fails with Decision.Err, a
//     *toolguard.LoopError or *toolguard.BudgetError. A ToolsNode stops on
//     a tool error and wraps it, so errors.Is(err, toolguard.ErrLoop) or
//     toolguard.ErrBudgetExhausted holds for the error of the node, the
//     graph or the agent. With WithAbortAsResult the abort message is the
//     call's result instead.
//
// The call is checked as toolguard.Call{ID, Tool, Args}: the ID is the
// schema.ToolCall ID (compose.GetToolCallID for WrapInvokable), the tool is
// the name the model called, and Args is argumentsInJSON as it is.
//
// Eino runs the tool calls of one model message concurrently. Each call is
// checked on its own with Tracker.ShouldSkip, which is safe for concurrent
// use and reserves the call's budget slot atomically, so of n identical
// parallel calls exactly as many run as the policy allows, whichever they
// are. Each call is its own round: similar search queries within one
// message can be hinted as similar.
//
// When a call moves the turn into toolguard.PhaseNudge or
// toolguard.PhaseWindDown, the tracker's Guidance message is appended to
// that call's result after a blank line; WithoutGuidance turns this off.
//
// One Tracker holds one session: call its Reset before each new user input.
package einoguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/toolguard/toolguard"
)

// maxStreamText bounds how much of a streamed result is kept to tell
// whether it changed; the rest of the stream still reaches the reader.
const maxStreamText = 1 << 20

// Option changes how a tool is guarded.
type Option func(*options)

type options struct {
	abortAsResult bool
	noGuidance    bool
}

// WithAbortAsResult makes an Abort return its message (which starts with
// toolguard.HintMarker) as the call's result with a nil error, so the
// ToolsNode does not fail. Use it when something else, such as the graph's
// step limit, should end the run.
func WithAbortAsResult() Option {
	return func(o *options) { o.abortAsResult = true }
}

// WithoutGuidance stops the guard from appending the nudge and wind-down
// messages to the result of the call that entered those phases.
func WithoutGuidance() Option {
	return func(o *options) { o.noGuidance = true }
}

// guard holds what every guarded call needs.
type guard struct {
	t    *toolguard.Tracker
	opts options
}

func newGuard(t *toolguard.Tracker, opts []Option) *guard {
	g := &guard{t: t}
	for _, opt := range opts {
		if opt != nil {
			opt(&g.opts)
		}
	}
	return g
}

// check builds the call and asks the tracker.
func (g *guard) check(ctx context.Context, id, name, args string) (toolguard.Call, toolguard.Decision) {
	c := toolguard.Call{ID: id, Tool: name}
	if strings.TrimSpace(args) != "" {
		c.Args = json.RawMessage(args)
	}
	return c, g.t.ShouldSkipContext(ctx, c)
}

// skipped returns the result or error of a call that must not run.
func (g *guard) skipped(d toolguard.Decision) (string, error) {
	if d.Verdict == toolguard.Hint || g.opts.abortAsResult {
		return d.Message, nil
	}
	if d.Err == nil {
		return "", errors.New("toolguard/einoguard: call refused: " + d.Reason.String())
	}
	return "", d.Err
}

// record books the outcome and returns the guidance to append, if any.
func (g *guard) record(ctx context.Context, c toolguard.Call, d toolguard.Decision, result string, err error) string {
	phase := g.t.RecordContext(ctx, c, toolguard.Outcome{Result: result, Err: err})
	if err != nil || g.opts.noGuidance || phase == d.Phase ||
		(phase != toolguard.PhaseNudge && phase != toolguard.PhaseWindDown) {
		return ""
	}
	// A parallel call may have moved the phase on since; a later phase's
	// message then belongs to the call that reached it.
	gd := g.t.Guidance()
	if gd.Message == "" || (phase == toolguard.PhaseNudge && gd.Phase != toolguard.PhaseNudge) {
		return ""
	}
	return "\n\n" + gd.Message
}

// Middleware returns a compose.ToolMiddleware that guards every call of a
// ToolsNode with t. Add it to compose.ToolsNodeConfig.ToolCallMiddlewares
// (for a ReAct agent: AgentConfig.ToolsConfig.ToolCallMiddlewares). A nil t
// gives a middleware that changes nothing.
func Middleware(t *toolguard.Tracker, opts ...Option) compose.ToolMiddleware {
	if t == nil {
		return compose.ToolMiddleware{}
	}
	g := newGuard(t, opts)
	return compose.ToolMiddleware{
		Invokable:          g.invokable,
		Streamable:         g.streamable,
		EnhancedInvokable:  g.enhancedInvokable,
		EnhancedStreamable: g.enhancedStreamable,
	}
}

func (g *guard) invokable(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
		c, d := g.check(ctx, in.CallID, in.Name, in.Arguments)
		if d.Skip() {
			res, err := g.skipped(d)
			if err != nil {
				return nil, err
			}
			return &compose.ToolOutput{Result: res}, nil
		}
		out, err := next(ctx, in)
		var res string
		if out != nil {
			res = out.Result
		}
		extra := g.record(ctx, c, d, res, err)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = &compose.ToolOutput{}
		}
		out.Result += extra
		return out, nil
	}
}

func (g *guard) enhancedInvokable(next compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedInvokableToolOutput, error) {
		c, d := g.check(ctx, in.CallID, in.Name, in.Arguments)
		if d.Skip() {
			res, err := g.skipped(d)
			if err != nil {
				return nil, err
			}
			return &compose.EnhancedInvokableToolOutput{Result: textResult(res)}, nil
		}
		out, err := next(ctx, in)
		var res *schema.ToolResult
		if out != nil {
			res = out.Result
		}
		extra := g.record(ctx, c, d, resultText(res), err)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = &compose.EnhancedInvokableToolOutput{}
		}
		if extra != "" {
			out.Result = appendText(out.Result, extra)
		}
		return out, nil
	}
}

func (g *guard) streamable(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
		sr, err := guardStream(g, ctx, in, func(s string) string { return s }, func(s string) string { return s },
			func(ctx context.Context, in *compose.ToolInput) (*schema.StreamReader[string], error) {
				out, err := next(ctx, in)
				if err != nil || out == nil {
					return nil, err
				}
				return out.Result, nil
			})
		if err != nil {
			return nil, err
		}
		return &compose.StreamToolOutput{Result: sr}, nil
	}
}

func (g *guard) enhancedStreamable(next compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedStreamableToolOutput, error) {
		sr, err := guardStream(g, ctx, in, textResult, resultText,
			func(ctx context.Context, in *compose.ToolInput) (*schema.StreamReader[*schema.ToolResult], error) {
				out, err := next(ctx, in)
				if err != nil || out == nil {
					return nil, err
				}
				return out.Result, nil
			})
		if err != nil {
			return nil, err
		}
		return &compose.EnhancedStreamableToolOutput{Result: sr}, nil
	}
}

// guardStream checks a streamed call. An allowed call's stream is read
// through a converting reader, with no goroutine of its own: the outcome is
// recorded, in the reader's goroutine, when the stream ends or fails. When
// the reader is closed early or dropped without Close, what the call
// produced until then is recorded once the reader is garbage collected.
func guardStream[T any](g *guard, ctx context.Context, in *compose.ToolInput,
	fromText func(string) T, toText func(T) string,
	next func(context.Context, *compose.ToolInput) (*schema.StreamReader[T], error),
) (*schema.StreamReader[T], error) {
	c, d := g.check(ctx, in.CallID, in.Name, in.Arguments)
	if d.Skip() {
		res, err := g.skipped(d)
		if err != nil {
			return nil, err
		}
		return schema.StreamReaderFromArray([]T{fromText(res)}), nil
	}
	src, err := next(ctx, in)
	if err != nil {
		g.record(ctx, c, d, "", err)
		return nil, err
	}
	if src == nil {
		extra := g.record(ctx, c, d, "", nil)
		if extra == "" {
			return schema.StreamReaderFromArray([]T{}), nil
		}
		return schema.StreamReaderFromArray([]T{fromText(extra)}), nil
	}
	st := &streamOutcome{g: g, ctx: context.WithoutCancel(ctx), c: c, d: d}
	dst := schema.StreamReaderWithConvert(src,
		func(chunk T) (T, error) {
			st.add(toText(chunk))
			return chunk, nil
		},
		schema.WithErrWrapper(func(err error) error {
			st.finish(err)
			return err
		}),
		schema.WithOnEOF(func() (any, error) {
			if extra := st.finish(nil); extra != "" {
				return fromText(extra), nil
			}
			return nil, io.EOF
		}))
	runtime.AddCleanup(dst, func(st *streamOutcome) { st.finish(nil) }, st)
	return dst, nil
}

// streamOutcome collects what a streamed call produced and records it
// once.
type streamOutcome struct {
	g    *guard
	ctx  context.Context
	c    toolguard.Call
	d    toolguard.Decision
	once sync.Once

	mu   sync.Mutex
	text strings.Builder
}

// add keeps up to maxStreamText bytes of the result to tell whether it
// changed; the rest of the stream still reaches the reader.
func (s *streamOutcome) add(chunk string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if room := maxStreamText - s.text.Len(); room > 0 {
		if len(chunk) > room {
			chunk = chunk[:room]
		}
		s.text.WriteString(chunk)
	}
}

// finish records the outcome the first time it is called and returns the
// guidance to append, if any.
func (s *streamOutcome) finish(err error) (extra string) {
	s.once.Do(func() {
		s.mu.Lock()
		text := s.text.String()
		s.mu.Unlock()
		extra = s.g.record(s.ctx, s.c, s.d, text, err)
	})
	return extra
}

// textResult is a ToolResult holding one text part.
func textResult(s string) *schema.ToolResult {
	return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: s}}}
}

// appendText adds s to the last text part of r, or as a new text part.
func appendText(r *schema.ToolResult, s string) *schema.ToolResult {
	if r == nil {
		return textResult(s)
	}
	if n := len(r.Parts); n > 0 && r.Parts[n-1].Type == schema.ToolPartTypeText {
		r.Parts[n-1].Text += s
		return r
	}
	r.Parts = append(r.Parts, schema.ToolOutputPart{Type: schema.ToolPartTypeText, Text: s})
	return r
}

// resultText is what the tracker compares of a multimodal result: the text
// parts, and the other parts as JSON so that a changed image is progress.
func resultText(r *schema.ToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range r.Parts {
		if p.Type == schema.ToolPartTypeText {
			b.WriteString(p.Text)
			continue
		}
		if j, err := json.Marshal(p); err == nil {
			b.Write(j)
		}
	}
	return b.String()
}

// WrapInvokable returns a tool.InvokableTool with the Info of it whose
// InvokableRun is checked by t before it runs and recorded after. The call
// ID is compose.GetToolCallID(ctx), set when a ToolsNode runs the tool. A
// nil t or it is returned as it is.
func WrapInvokable(t *toolguard.Tracker, it tool.InvokableTool, opts ...Option) tool.InvokableTool {
	if t == nil || it == nil {
		return it
	}
	return &guardedTool{g: newGuard(t, opts), next: it}
}

// guardedTool is an InvokableTool checked by a Tracker.
type guardedTool struct {
	g    *guard
	next tool.InvokableTool
	name atomic.Pointer[string] // from the first successful Info
}

var (
	_ tool.InvokableTool = (*guardedTool)(nil)
	_ components.Typer   = (*guardedTool)(nil)
	_ components.Checker = (*guardedTool)(nil)
)

// Info returns the wrapped tool's Info.
func (w *guardedTool) Info(ctx context.Context) (*schema.ToolInfo, error) {
	info, err := w.next.Info(ctx)
	if err == nil && info != nil && w.name.Load() == nil {
		name := info.Name
		w.name.Store(&name)
	}
	return info, err
}

// InvokableRun checks the call, runs the wrapped tool if it is allowed and
// records its outcome.
func (w *guardedTool) InvokableRun(ctx context.Context, argumentsInJSON string, opts ...tool.Option) (string, error) {
	name, err := w.toolName(ctx)
	if err != nil {
		return "", err
	}
	c, d := w.g.check(ctx, compose.GetToolCallID(ctx), name, argumentsInJSON)
	if d.Skip() {
		return w.g.skipped(d)
	}
	res, err := w.next.InvokableRun(ctx, argumentsInJSON, opts...)
	extra := w.g.record(ctx, c, d, res, err)
	return res + extra, err
}

func (w *guardedTool) toolName(ctx context.Context) (string, error) {
	if p := w.name.Load(); p != nil {
		return *p, nil
	}
	info, err := w.Info(ctx)
	if err != nil {
		return "", fmt.Errorf("toolguard/einoguard: tool info: %w", err)
	}
	if info == nil {
		return "", errors.New("toolguard/einoguard: tool info is nil")
	}
	return info.Name, nil
}

// GetType returns the wrapped tool's component type, so that callbacks
// name it as before.
func (w *guardedTool) GetType() string {
	if typ, ok := components.GetType(w.next); ok {
		return typ
	}
	t := reflect.TypeOf(w.next)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// IsCallbacksEnabled reports whether the wrapped tool runs eino's
// callbacks itself.
func (w *guardedTool) IsCallbacksEnabled() bool {
	return components.IsCallbacksEnabled(w.next)
}
