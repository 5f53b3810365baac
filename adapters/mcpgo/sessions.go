package mcpgo

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/mcpguard"
	"github.com/toolguard/toolguard/internal/sessions"
)

// DefaultMaxSessions is the number of conversation trackers Sessions
// keeps when SessionOptions.MaxSessions is 0.
const DefaultMaxSessions = sessions.DefaultMax

// ErrNoKey is why Sessions refuses a tools/call for which it found no
// conversation (SessionOptions.Key, the client's MetaConversation, a
// session id, a trace) when SessionOptions.Unkeyed is UnkeyedRefuse: the
// call does not run, and its result is a tool error the model reads
// (mcpguard's NoKeyText, with _meta dev.toolguard/reason "no-key"), the
// same in both MCP adapters.
var ErrNoKey = mcpguard.ErrNoKey

// Unkeyed says what Sessions does with a tools/call that has no
// conversation: no key from SessionOptions.Key, no MetaConversation and no
// session id (a stateless streamable HTTP server, or a client of protocol
// 2026-07-28, which has no sessions).
type Unkeyed int

const (
	// UnkeyedDerive, the default, derives the conversation from the
	// request: the W3C trace id of its _meta "traceparent" (a host that
	// traces its agent runs sends one trace per run), one Tracker per
	// trace; without one, a Tracker of the call's own, under which the
	// per-call checks and the Policy's SharedQuotas still apply but loops
	// across calls go unnoticed. It never merges two conversations (a user,
	// an address or a token would merge a user's parallel chats) and never
	// lets a call pass unguarded. The first call without a trace logs a
	// warning (mcpguard's PerRequestWarning), once per Sessions.
	UnkeyedDerive Unkeyed = iota
	// UnkeyedRefuse answers a call without a conversation or a trace with
	// a tool error (ErrNoKey) without running it: a server that must not
	// run a call it cannot attribute finds out at its first call.
	UnkeyedRefuse
	// UnkeyedPerRequest is UnkeyedDerive.
	//
	// Deprecated: use UnkeyedDerive, which also keys calls by their trace
	// and warns once instead of at every call.
	UnkeyedPerRequest = UnkeyedDerive
)

// SessionOptions configures Sessions. The zero value means the defaults.
type SessionOptions struct {
	// Key returns the conversation key of a call, such as the
	// authenticated principal, a header (HeaderKey) or a conversation
	// handle the client sends in _meta (MetaKey). "" means the call has
	// none; then the client's MetaConversation, then the session id where
	// the transport has one. nil means those two only. Calls with equal keys share a Tracker, so a
	// key must tell apart the clients (and conversations) that must not
	// share one.
	Key func(ctx context.Context, req mcp.CallToolRequest) string
	// Unkeyed says what to do with a call with neither a key nor a
	// session id. The zero value is UnkeyedDerive.
	Unkeyed Unkeyed
	// Logger receives the warning of UnkeyedDerive. nil means
	// slog.Default().
	Logger *slog.Logger
	// MaxSessions is the number of conversation trackers kept. When a new
	// conversation would pass it, the tracker of the one that made no call
	// for the longest time is dropped; if that conversation calls again it
	// starts afresh. 0 means DefaultMaxSessions; negative means no limit.
	MaxSessions int
	// IdleReset starts a new turn (Tracker.Reset) for a conversation whose
	// previous call was at least this long ago. 0 means never: the whole
	// conversation is one turn.
	IdleReset time.Duration
}

// key is what Sessions keeps a Tracker under: a conversation key from
// SessionOptions.Key or MetaConversation, a session id, or a trace id; one
// of the three.
type key struct {
	conv, session, trace string
}

// Sessions keeps one toolguard.Tracker per conversation, each made from
// the same Policy: per key from SessionOptions.Key, else per MCP session
// id. It is safe for concurrent use. Create it with NewSessions.
type Sessions struct {
	policy toolguard.Policy
	opts   SessionOptions
	m      *sessions.Map[key]
	warned sync.Once // PerRequestWarning
}

// NewSessions returns an empty Sessions whose trackers are made with
// toolguard.NewTracker(p). The idle clock is p.Now (time.Now when nil).
func NewSessions(p toolguard.Policy, o SessionOptions) *Sessions {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	p = sessions.ShareBreaker(p) // one for the process: see sessions.New
	p = sessions.ShareStore(p)
	return &Sessions{policy: p, opts: o, m: sessions.New[key](p, o.MaxSessions, o.IdleReset)}
}

// Tracker returns the Tracker of the call's conversation, creating it on
// first use, and false when the call has no key, no session id and no
// trace.
func (s *Sessions) Tracker(ctx context.Context, req mcp.CallToolRequest) (*toolguard.Tracker, bool) {
	if s.opts.Key != nil {
		if k := s.opts.Key(ctx, req); k != "" {
			t, _ := s.m.Get(key{conv: k})
			return t, true
		}
	}
	if k := metaConversation(ctx, req); k != "" {
		t, _ := s.m.Get(key{conv: k})
		return t, true
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil && cs.SessionID() != "" {
		return s.TrackerFor(cs.SessionID()), true
	}
	if m := req.Params.Meta; m != nil {
		if k := mcpguard.TraceKey(m.AdditionalFields[mcpguard.MetaTraceparent]); k != "" {
			t, _ := s.m.Get(key{trace: k})
			return t, true
		}
	}
	return nil, false
}

// TrackerFor returns the Tracker of the session with the given id,
// creating it on first use.
func (s *Sessions) TrackerFor(id string) *toolguard.Tracker {
	t, _ := s.m.Get(key{session: id})
	return t
}

// Forget drops the Tracker of the session with the given id.
func (s *Sessions) Forget(id string) { s.m.Forget(key{session: id}) }

// ForgetKey drops the Tracker of the conversation key k.
func (s *Sessions) ForgetKey(k string) { s.m.Forget(key{conv: k}) }

// Len returns the number of conversation trackers kept.
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
// the Tracker of its conversation. A call without a conversation gets a
// Tracker of its own (UnkeyedDerive) or ErrNoKey (UnkeyedRefuse).
func (s *Sessions) Middleware() server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			t, ok := s.Tracker(ctx, req)
			if !ok {
				if s.opts.Unkeyed == UnkeyedRefuse {
					return noKey(), nil
				}
				s.warned.Do(func() {
					s.opts.Logger.WarnContext(ctx, mcpguard.PerRequestWarning, "gen_ai.tool.name", req.Params.Name)
				})
				t = toolguard.NewTracker(s.policy)
			}
			return guard(ctx, t, next, req)
		}
	}
}

// metaConversation is the conversation key every Sessions reads after
// SessionOptions.Key: the client's MetaConversation.
var metaConversation = MetaKey(MetaConversation)

// noKey is the result of a call refused with ErrNoKey: a tool result the
// model reads, the same in both MCP adapters.
func noKey() *mcp.CallToolResult {
	res := mcp.NewToolResultError(mcpguard.NoKeyText)
	res.Meta = mcp.NewMetaFromMap(map[string]any{MetaVerdict: "abort", MetaReason: mcpguard.MetaReasonNoKey})
	return res
}

// MetaKey returns a SessionOptions.Key that reads the string value of the
// request's _meta entry name, such as MetaConversation. A client that sets
// it keeps one Tracker per value, on every transport.
func MetaKey(name string) func(context.Context, mcp.CallToolRequest) string {
	return func(_ context.Context, req mcp.CallToolRequest) string {
		if m := req.Params.Meta; m != nil {
			if v, ok := m.AdditionalFields[name].(string); ok {
				return v
			}
		}
		return ""
	}
}

// HeaderKey returns a SessionOptions.Key that reads the HTTP header name of
// the request (streamable HTTP only), such as one an authenticating proxy
// sets to the user's identity.
func HeaderKey(name string) func(context.Context, mcp.CallToolRequest) string {
	return func(_ context.Context, req mcp.CallToolRequest) string {
		return req.Header.Get(name)
	}
}
