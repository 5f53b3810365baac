package genkitguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/firebase/genkit/go/ai"
	"github.com/toolguard/toolguard"
)

// MiddlewareName is the name the middleware reports to Genkit.
const MiddlewareName = "toolguard"

// Middleware returns an ai.Middleware that guards every tool of a
// Generate call with t: tools defined with genkit.DefineTool or
// ai.NewTool, tools of MCP servers and of .prompt files alike. Pass it
// with ai.WithUse:
//
//	resp, err := genkit.Generate(ctx, g, ai.WithPrompt(question),
//		ai.WithTools(search), ai.WithUse(genkitguard.Middleware(tracker)))
//
// Each Generate call is a new turn: the middleware calls t.Reset when
// Genkit sets it up for the call (WithoutReset leaves turns to the
// caller, for example when a Generate resumes an interrupted one). Each
// tool request is checked as toolguard.Call{ID: the request's Ref, Tool:
// its name, Args: its input as JSON}, with the tool's context:
//
//   - Allow: the tool runs and its output (as JSON, with any extra
//     content parts) or its error is recorded.
//   - Hint: the tool does not run; the hint text (it starts with
//     toolguard.HintMarker) is the tool response's output, whatever the
//     tool's output type, so the model reads it and the loop goes on.
//   - Abort: the tool does not run and the tool call fails with
//     Decision.Err, which ends Generate: errors.Is(err, toolguard.ErrLoop)
//     or toolguard.ErrBudgetExhausted holds for its error. With
//     WithAbortAsResult the abort message is the output instead.
//
// In the nudge and wind-down phases every model request of the turn also
// carries the tracker's Guidance text as a last user message (unless
// WithoutGuidance), and from the wind-down on the model is sent no tools;
// a tool it calls anyway is refused by the tracker with the budget's own
// message. Genkit runs the tool requests of one response concurrently;
// the Tracker is safe for that, and each call is its own round.
//
// A nil t gives a middleware that changes nothing.
func Middleware(t *toolguard.Tracker, opts ...Option) ai.Middleware {
	m := &middleware{t: t}
	for _, opt := range opts {
		if opt != nil {
			opt(&m.opts)
		}
	}
	return m
}

type middleware struct {
	t    *toolguard.Tracker
	opts options
}

func (m *middleware) Name() string { return MiddlewareName }

// New is called by Genkit once per Generate call.
func (m *middleware) New(context.Context) (*ai.Hooks, error) {
	if m.t == nil {
		return &ai.Hooks{}, nil
	}
	if !m.opts.noReset {
		m.t.Reset()
	}
	return &ai.Hooks{WrapModel: m.wrapModel, WrapTool: m.wrapTool}, nil
}

func (m *middleware) wrapModel(ctx context.Context, p *ai.ModelParams, next ai.ModelNext) (*ai.ModelResponse, error) {
	gd := m.t.Guidance()
	if p == nil || p.Request == nil || (gd.Message == "" && !gd.StripTools) {
		return next(ctx, p)
	}
	req := *p.Request // the loop keeps its own request; change only this call's
	if gd.Message != "" && !m.opts.noGuidance {
		req.Messages = append(slices.Clip(req.Messages), ai.NewUserTextMessage(gd.Message))
	}
	if gd.StripTools {
		req.Tools = nil
		req.ToolChoice = ""
	}
	return next(ctx, &ai.ModelParams{Request: &req, Callback: p.Callback})
}

func (m *middleware) wrapTool(ctx context.Context, p *ai.ToolParams, next ai.ToolNext) (*ai.MultipartToolResponse, error) {
	if p == nil || p.Request == nil {
		return next(ctx, p)
	}
	c := toolguard.Call{ID: p.Request.Ref, Tool: p.Request.Name}
	if p.Request.Input != nil {
		args, err := json.Marshal(p.Request.Input)
		if err != nil {
			return nil, fmt.Errorf("toolguard/genkitguard: tool %q: encode input: %w", c.Tool, err)
		}
		c.Args = args
	}
	d := m.t.ShouldSkipContext(ctx, c)
	if d.Skip() {
		if d.Verdict == toolguard.Hint || m.opts.abortAsResult {
			return &ai.MultipartToolResponse{Output: d.Message}, nil
		}
		if d.Err != nil {
			return nil, d.Err
		}
		return nil, errors.New("toolguard/genkitguard: call refused: " + d.Reason.String())
	}
	resp, err := next(ctx, p)
	var out toolguard.Outcome
	out.Err = err
	if resp != nil {
		out.Result = resultText(struct {
			Output  any        `json:"output,omitempty"`
			Content []*ai.Part `json:"content,omitempty"`
		}{resp.Output, resp.Content})
	}
	m.t.RecordContext(ctx, c, out)
	return resp, err
}
