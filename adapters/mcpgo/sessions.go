package mcpgo

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/sessions"
)

// DefaultMaxSessions is the number of session trackers Sessions keeps when
// SessionOptions.MaxSessions is 0.
const DefaultMaxSessions = sessions.DefaultMax

// SessionOptions configures Sessions. The zero value means the defaults.
type SessionOptions struct {
	// MaxSessions is the number of session trackers kept. When a new
	// session would pass it, the tracker of the session that made no call
	// for the longest time is dropped; if that session calls again it
	// starts afresh. 0 means DefaultMaxSessions; negative means no limit.
	MaxSessions int
	// IdleReset starts a new turn (Tracker.Reset) for a session whose
	// previous call was at least this long ago. 0 means never: the whole
	// session is one turn.
	IdleReset time.Duration
}

// Sessions keeps one toolguard.Tracker per MCP client session, each made
// from the same Policy. It is safe for concurrent use. Create it with
// NewSessions.
type Sessions struct {
	m *sessions.Map[string]
}

// NewSessions returns an empty Sessions whose trackers are made with
// toolguard.NewTracker(p). The idle clock is p.Now (time.Now when nil).
func NewSessions(p toolguard.Policy, o SessionOptions) *Sessions {
	return &Sessions{m: sessions.New[string](p, o.MaxSessions, o.IdleReset)}
}

// Tracker returns the Tracker of the client session in ctx, creating it on
// first use. Calls without a session (server.ClientSessionFromContext is
// nil) share the Tracker of the empty session id.
func (s *Sessions) Tracker(ctx context.Context) *toolguard.Tracker {
	var id string
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		id = cs.SessionID()
	}
	return s.TrackerFor(id)
}

// TrackerFor returns the Tracker of the session with the given id,
// creating it on first use.
func (s *Sessions) TrackerFor(id string) *toolguard.Tracker {
	t, _ := s.m.Get(id)
	return t
}

// Forget drops the Tracker of the session with the given id.
func (s *Sessions) Forget(id string) { s.m.Forget(id) }

// Len returns the number of session trackers kept.
func (s *Sessions) Len() int { return s.m.Len() }

// ForgetOnUnregister adds a hook to h that forgets a session's Tracker
// when the server unregisters the session. Pass the Hooks given to the
// server with server.WithHooks.
func (s *Sessions) ForgetOnUnregister(h *server.Hooks) {
	if h == nil {
		return
	}
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		if cs != nil {
			s.Forget(cs.SessionID())
		}
	})
}

// Middleware returns a tool handler middleware that guards each call with
// the Tracker of its client session.
func (s *Sessions) Middleware() server.ToolHandlerMiddleware {
	return MiddlewareFunc(func(ctx context.Context, _ mcp.CallToolRequest) *toolguard.Tracker {
		return s.Tracker(ctx)
	})
}
