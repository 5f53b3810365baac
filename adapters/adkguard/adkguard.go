// Package adkguard guards the tool calls of an ADK Go agent
// (google.golang.org/adk/v2) with toolguard: a runner plugin that checks every
// tool call of every agent the runner runs, one toolguard.Tracker per
// session.
//
//	guard := adkguard.New(toolguard.Policy{})
//	plug, err := guard.Plugin()
//	r, err := runner.New(runner.Config{
//		AppName:        "support",
//		Agent:          rootAgent,
//		SessionService: session.InMemoryService(),
//		PluginConfig:   runner.PluginConfig{Plugins: []*plugin.Plugin{plug}},
//	})
//	for ev, err := range r.Run(ctx, userID, sessionID, msg, agent.RunConfig{}) { ... }
//	if err := guard.Err("support", userID, sessionID); err != nil { ... } // the turn was aborted
//
// What the plugin does, with ADK's own callbacks:
//
//   - A user message (OnUserMessageCallback) starts a new turn: the
//     session's tracker is Reset. A message that only answers a tool
//     request (function responses, such as a tool confirmation) continues
//     the turn.
//   - Before a tool runs (BeforeToolCallback) the call is checked as
//     toolguard.Call{ID: agent.Context.FunctionCallID(), Tool: the tool's
//     name, Args: the arguments as JSON}, with the callback's agent.Context
//     as the call's context.
//   - Allow: the tool runs, and AfterToolCallback records its result (as
//     JSON) or its error.
//   - Hint: the tool does not run; its function response is
//     {"error": hint}, so the model reads the hint (it starts with
//     toolguard.HintMarker) where it reads any tool failure, and the agent
//     goes on.
//   - Abort: the tool does not run; its function response is
//     {"error": message}, and the call's event actions end the invocation
//     the way ADK ends one after a tool: SkipSummarization makes the
//     response event final, so the LLM agent makes no further model call,
//     and Escalate stops an enclosing loop agent. The function response is
//     still stored in the session, so the next turn's history is whole.
//     Err returns the abort's error (a *toolguard.LoopError or
//     *toolguard.BudgetError) until the session's next user message.
//   - Before each model call (BeforeModelCallback) in the nudge phase the
//     tracker's Guidance text is added to the request as a user message;
//     from the wind-down on the request also goes without tool
//     declarations. A tool the model calls anyway is refused by the
//     tracker with the budget's own message.
//
// ADK gives every function call an id (it makes one when the model sends
// none), which pairs each AfterToolCallback with its check.
//
// ADK runs the tool calls of one model response concurrently; each is
// checked on its own (the Tracker is safe for that) and is its own round.
//
// Trackers are kept per (app, user, session) until Forget: call it when a
// session is deleted, or use Tracker to inspect one.
package adkguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/toolguard/toolguard"
)

// PluginName is the name of the plugin Plugin returns.
const PluginName = "toolguard"

// Guard holds one Tracker per ADK session.
type Guard struct {
	policy toolguard.Policy

	mu       sync.Mutex
	sessions map[sessionKey]*sessionState
}

type sessionKey struct{ app, user, session string }

// sessionState is what the guard keeps for one session.
type sessionState struct {
	tracker *toolguard.Tracker

	mu      sync.Mutex
	pending map[string]toolguard.Call // allowed calls by function call id
	aborted error                     // the abort of the current turn
}

// New returns a Guard whose trackers use p (see toolguard.NewTracker).
func New(p toolguard.Policy) *Guard {
	return &Guard{policy: p, sessions: make(map[sessionKey]*sessionState)}
}

// Plugin returns the runner plugin that guards every tool call. Pass it in
// runner.Config.PluginConfig.Plugins. Several plugins of one Guard share
// its trackers.
func (g *Guard) Plugin() (*plugin.Plugin, error) {
	return plugin.New(plugin.Config{
		Name:                  PluginName,
		OnUserMessageCallback: g.onUserMessage,
		BeforeModelCallback:   g.beforeModel,
		BeforeToolCallback:    g.beforeTool,
		AfterToolCallback:     g.afterTool,
	})
}

// Tracker returns the tracker of a session, creating it if needed.
func (g *Guard) Tracker(appName, userID, sessionID string) *toolguard.Tracker {
	return g.session(sessionKey{appName, userID, sessionID}).tracker
}

// Err returns the error of the abort that ended the session's current
// turn: a *toolguard.LoopError (errors.Is(err, toolguard.ErrLoop)) or a
// *toolguard.BudgetError (errors.Is(err, toolguard.ErrBudgetExhausted)).
// It is nil when no call of the turn was aborted, and is cleared by the
// session's next user message.
func (g *Guard) Err(appName, userID, sessionID string) error {
	g.mu.Lock()
	s := g.sessions[sessionKey{appName, userID, sessionID}]
	g.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

// Forget drops the tracker of a session. A later call of the session
// starts a new tracker.
func (g *Guard) Forget(appName, userID, sessionID string) {
	g.mu.Lock()
	delete(g.sessions, sessionKey{appName, userID, sessionID})
	g.mu.Unlock()
}

func (g *Guard) session(k sessionKey) *sessionState {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sessions[k]
	if s == nil {
		s = &sessionState{tracker: toolguard.NewTracker(g.policy), pending: make(map[string]toolguard.Call)}
		g.sessions[k] = s
	}
	return s
}

func sessionOf(ctx agent.ReadonlyContext) sessionKey {
	return sessionKey{ctx.AppName(), ctx.UserID(), ctx.SessionID()}
}

// onUserMessage starts a new turn for a message from the user.
func (g *Guard) onUserMessage(ic agent.InvocationContext, msg *genai.Content) (*genai.Content, error) {
	if msg == nil || onlyFunctionResponses(msg) {
		return nil, nil
	}
	sess := ic.Session()
	s := g.session(sessionKey{sess.AppName(), sess.UserID(), sess.ID()})
	s.tracker.Reset()
	s.mu.Lock()
	clear(s.pending)
	s.aborted = nil
	s.mu.Unlock()
	return nil, nil
}

// onlyFunctionResponses reports whether msg answers tool requests and
// holds nothing else.
func onlyFunctionResponses(msg *genai.Content) bool {
	found := false
	for _, p := range msg.Parts {
		if p == nil {
			continue
		}
		if p.FunctionResponse == nil {
			return false
		}
		found = true
	}
	return found
}

// beforeModel tells the model the budget's phase and strips the tool
// declarations from the wind-down on.
func (g *Guard) beforeModel(cc agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
	gd := g.session(sessionOf(cc)).tracker.Guidance()
	if gd.Message == "" || req == nil {
		return nil, nil
	}
	req.Contents = append(req.Contents, genai.NewContentFromText(gd.Message, genai.RoleUser))
	if gd.StripTools && req.Config != nil {
		// req.Tools stays: a call the model makes anyway must reach
		// beforeTool, where the tracker refuses it with its own message.
		req.Config.Tools = nil
		req.Config.ToolConfig = nil
	}
	return nil, nil
}

// beforeTool checks a call; a non-nil result replaces the tool's run.
func (g *Guard) beforeTool(tc agent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	c, err := callOf(tc, t, args)
	if err != nil {
		return map[string]any{"error": err.Error()}, nil
	}
	s := g.session(sessionOf(tc))
	d := s.tracker.ShouldSkipContext(tc, c)
	switch d.Verdict {
	case toolguard.Allow:
		if c.ID != "" {
			s.mu.Lock()
			s.pending[c.ID] = c
			s.mu.Unlock()
		}
		return nil, nil
	case toolguard.Hint:
		return map[string]any{"error": d.Message}, nil
	}
	abortErr := d.Err
	if abortErr == nil {
		abortErr = errors.New("toolguard/adkguard: call refused: " + d.Reason.String())
	}
	s.mu.Lock()
	if s.aborted == nil {
		s.aborted = abortErr
	}
	s.mu.Unlock()
	actions := tc.Actions()
	actions.SkipSummarization = true
	actions.Escalate = true
	msg := d.Message
	if msg == "" {
		msg = abortErr.Error()
	}
	return map[string]any{"error": msg}, nil
}

// afterTool records the outcome of an allowed call.
func (g *Guard) afterTool(tc agent.Context, t tool.Tool, args, result map[string]any, err error) (map[string]any, error) {
	s := g.session(sessionOf(tc))
	id := tc.FunctionCallID()
	s.mu.Lock()
	c, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if !ok {
		if id != "" {
			return nil, nil // skipped by beforeTool, or from before a Reset
		}
		// Without a call id the call cannot be told apart from a skipped
		// one by id; a result that is not ours was allowed.
		if isSkipResult(result) {
			return nil, nil
		}
		if c, err = callOf(tc, t, args); err != nil {
			return nil, nil
		}
	}
	out := toolguard.Outcome{Err: err}
	if result != nil {
		if b, merr := json.Marshal(result); merr == nil {
			out.Result = string(b)
		} else {
			out.Result = fmt.Sprint(len(result))
		}
	}
	s.tracker.RecordContext(tc, c, out)
	return nil, nil
}

// isSkipResult reports whether result is a skipped call's response.
func isSkipResult(result map[string]any) bool {
	msg, ok := result["error"].(string)
	return ok && len(result) == 1 && len(msg) >= len(toolguard.HintMarker) &&
		msg[:len(toolguard.HintMarker)] == toolguard.HintMarker
}

// callOf is the toolguard.Call of a tool call.
func callOf(tc agent.Context, t tool.Tool, args map[string]any) (toolguard.Call, error) {
	c := toolguard.Call{ID: tc.FunctionCallID()}
	if t != nil {
		c.Tool = t.Name()
	}
	if len(args) > 0 {
		b, err := json.Marshal(args)
		if err != nil {
			return c, fmt.Errorf("toolguard/adkguard: tool %q: encode arguments: %w", c.Tool, err)
		}
		c.Args = b
	}
	return c, nil
}
