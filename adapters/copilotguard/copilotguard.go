// Package copilotguard guards the tool calls of GitHub Copilot SDK sessions
// (github.com/github/copilot-sdk/go) with toolguard, through the session
// hooks the Copilot runtime calls: one toolguard.Tracker per session.
//
//	guard := copilotguard.New(toolguard.Policy{})
//	session, err := client.CreateSession(ctx, &copilot.SessionConfig{
//		Hooks: guard.Hooks(nil), // or guard.Hooks(yourHooks) to chain them
//	})
//	_, err = session.SendAndWait(ctx, copilot.MessageOptions{Prompt: question})
//	if err := guard.Err(session.SessionID); err != nil { ... } // a call was aborted
//
// What the hooks do:
//
//   - OnUserPromptSubmitted: a new turn: the session's tracker is Reset and
//     its abort cleared.
//   - OnPreToolUse: the call is checked as toolguard.Call{Tool: toolName,
//     Args: toolArgs as JSON} (the runtime gives pre-tool hooks no call id).
//     Allow: the runtime's own permission flow goes on (the hook gives no
//     decision of its own, so it never approves what the user would be
//     asked about). Hint: the permission decision is "deny" with the hint as
//     its reason (it starts with toolguard.HintMarker); the tool does not
//     run and the model reads the reason. Abort: "deny" with the abort's
//     message; Err returns the abort's error (a *toolguard.LoopError or
//     *toolguard.BudgetError) until the session's next prompt, so the
//     harness can end the turn (Session.Abort).
//   - OnPostToolUse and OnPostToolUseFailure record the outcome of an
//     allowed call: its result as JSON, or the failure's message. A call is
//     paired with its check by tool name and arguments, first in first out.
//     When the call moved the turn into the nudge or the wind-down, the
//     tracker's Guidance text is returned as additional context for the
//     model.
//   - OnSessionEnd: the session's tracker is dropped.
//
// Hooks passed to Hooks(next) run first; a pre-tool "deny" of theirs stands
// and the call is not checked (it does not run, so it is not counted).
package copilotguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	copilot "github.com/github/copilot-sdk/go"

	"github.com/toolguard/toolguard"
)

// Guard holds one Tracker per Copilot session.
type Guard struct {
	policy toolguard.Policy

	mu       sync.Mutex
	sessions map[string]*session
}

type session struct {
	tracker *toolguard.Tracker

	mu      sync.Mutex
	pending map[string][]toolguard.Call // allowed calls by tool and arguments
	aborted error
}

// New returns a Guard whose trackers use p (see toolguard.NewTracker).
func New(p toolguard.Policy) *Guard {
	return &Guard{policy: p, sessions: make(map[string]*session)}
}

func (g *Guard) session(id string) *session {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sessions[id]
	if s == nil {
		s = &session{tracker: toolguard.NewTracker(g.policy), pending: make(map[string][]toolguard.Call)}
		g.sessions[id] = s
	}
	return s
}

// Tracker returns the tracker of a session, creating it if needed.
func (g *Guard) Tracker(sessionID string) *toolguard.Tracker {
	return g.session(sessionID).tracker
}

// Err returns the error of the first abort of the session's current turn:
// a *toolguard.LoopError (errors.Is(err, toolguard.ErrLoop)) or a
// *toolguard.BudgetError (errors.Is(err, toolguard.ErrBudgetExhausted)),
// or nil.
func (g *Guard) Err(sessionID string) error {
	g.mu.Lock()
	s := g.sessions[sessionID]
	g.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

// Forget drops the tracker of a session.
func (g *Guard) Forget(sessionID string) {
	g.mu.Lock()
	delete(g.sessions, sessionID)
	g.mu.Unlock()
}

// Hooks returns session hooks that guard every tool call of the session,
// with next's hooks chained (nil for none). next's other hooks are kept.
func (g *Guard) Hooks(next *copilot.SessionHooks) *copilot.SessionHooks {
	var h copilot.SessionHooks
	if next != nil {
		h = *next
	}
	var n copilot.SessionHooks
	if next != nil {
		n = *next
	}
	h.OnUserPromptSubmitted = func(in copilot.UserPromptSubmittedHookInput, inv copilot.HookInvocation) (*copilot.UserPromptSubmittedHookOutput, error) {
		s := g.session(inv.SessionID)
		s.tracker.Reset()
		s.mu.Lock()
		s.aborted = nil
		s.pending = make(map[string][]toolguard.Call)
		s.mu.Unlock()
		if n.OnUserPromptSubmitted != nil {
			return n.OnUserPromptSubmitted(in, inv)
		}
		return nil, nil
	}
	h.OnPreToolUse = func(in copilot.PreToolUseHookInput, inv copilot.HookInvocation) (*copilot.PreToolUseHookOutput, error) {
		var out *copilot.PreToolUseHookOutput
		if n.OnPreToolUse != nil {
			var err error
			if out, err = n.OnPreToolUse(in, inv); err != nil {
				return out, err
			}
			if out != nil && out.PermissionDecision == "deny" {
				return out, nil
			}
		}
		return g.preToolUse(in, inv, out)
	}
	h.OnPostToolUse = func(in copilot.PostToolUseHookInput, inv copilot.HookInvocation) (*copilot.PostToolUseHookOutput, error) {
		guidance := g.record(inv.SessionID, in.ToolName, in.ToolArgs, toolguard.Outcome{Result: resultText(in.ToolResult)})
		var out *copilot.PostToolUseHookOutput
		if n.OnPostToolUse != nil {
			var err error
			if out, err = n.OnPostToolUse(in, inv); err != nil {
				return out, err
			}
		}
		if guidance != "" {
			if out == nil {
				out = &copilot.PostToolUseHookOutput{}
			}
			out.AdditionalContext = joinContext(out.AdditionalContext, guidance)
		}
		return out, nil
	}
	h.OnPostToolUseFailure = func(in copilot.PostToolUseFailureHookInput, inv copilot.HookInvocation) (*copilot.PostToolUseFailureHookOutput, error) {
		msg := in.Error
		if msg == "" {
			msg = "the tool failed"
		}
		guidance := g.record(inv.SessionID, in.ToolName, in.ToolArgs, toolguard.Outcome{Result: in.Error, Err: errors.New(msg)})
		var out *copilot.PostToolUseFailureHookOutput
		if n.OnPostToolUseFailure != nil {
			var err error
			if out, err = n.OnPostToolUseFailure(in, inv); err != nil {
				return out, err
			}
		}
		if guidance != "" {
			if out == nil {
				out = &copilot.PostToolUseFailureHookOutput{}
			}
			out.AdditionalContext = joinContext(out.AdditionalContext, guidance)
		}
		return out, nil
	}
	h.OnSessionEnd = func(in copilot.SessionEndHookInput, inv copilot.HookInvocation) (*copilot.SessionEndHookOutput, error) {
		g.Forget(inv.SessionID)
		if n.OnSessionEnd != nil {
			return n.OnSessionEnd(in, inv)
		}
		return nil, nil
	}
	return &h
}

func (g *Guard) preToolUse(in copilot.PreToolUseHookInput, inv copilot.HookInvocation, out *copilot.PreToolUseHookOutput) (*copilot.PreToolUseHookOutput, error) {
	c, key, err := callOf(in.ToolName, in.ToolArgs)
	if err != nil {
		return deny(out, err.Error()), nil
	}
	s := g.session(inv.SessionID)
	d := s.tracker.ShouldSkip(c)
	switch d.Verdict {
	case toolguard.Allow:
		s.mu.Lock()
		s.pending[key] = append(s.pending[key], c)
		s.mu.Unlock()
		return out, nil
	case toolguard.Hint:
		return deny(out, d.Message), nil
	}
	abortErr := d.Err
	if abortErr == nil {
		abortErr = errors.New("toolguard/copilotguard: call refused: " + d.Reason.String())
	}
	s.mu.Lock()
	if s.aborted == nil {
		s.aborted = abortErr
	}
	s.mu.Unlock()
	msg := d.Message
	if msg == "" {
		msg = abortErr.Error()
	}
	return deny(out, msg), nil
}

// record books the outcome of a call and returns the guidance text when
// the call moved the turn into the nudge or the wind-down.
func (g *Guard) record(sessionID, tool string, args any, o toolguard.Outcome) string {
	c, key, err := callOf(tool, args)
	if err != nil {
		return ""
	}
	s := g.session(sessionID)
	s.mu.Lock()
	if q := s.pending[key]; len(q) > 0 {
		c = q[0]
		if len(q) == 1 {
			delete(s.pending, key)
		} else {
			s.pending[key] = q[1:]
		}
	}
	s.mu.Unlock()
	before := s.tracker.Guidance().Phase
	phase := s.tracker.Record(c, o)
	if phase == before || (phase != toolguard.PhaseNudge && phase != toolguard.PhaseWindDown) {
		return ""
	}
	return s.tracker.Guidance().Message
}

// deny turns out into a denial with reason.
func deny(out *copilot.PreToolUseHookOutput, reason string) *copilot.PreToolUseHookOutput {
	if out == nil {
		out = &copilot.PreToolUseHookOutput{}
	}
	out.PermissionDecision = "deny"
	out.PermissionDecisionReason = reason
	out.ModifiedArgs = nil
	return out
}

// callOf is the toolguard.Call of a tool call, and its pairing key.
func callOf(tool string, args any) (toolguard.Call, string, error) {
	c := toolguard.Call{Tool: tool}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return c, "", fmt.Errorf("toolguard/copilotguard: tool %q: encode arguments: %w", tool, err)
		}
		c.Args = b
	}
	return c, tool + "\x00" + string(c.Args), nil
}

// resultText is what the tracker compares of a tool result: a string as it
// is, anything else as JSON.
func resultText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	return string(b)
}

func joinContext(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}
