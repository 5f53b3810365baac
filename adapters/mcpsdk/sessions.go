package mcpsdk

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/mcpguard"
	"github.com/toolguard/toolguard/internal/sessions"
)

// DefaultMaxSessions is the number of conversation trackers Sessions
// keeps when SessionOptions.MaxSessions is 0.
const DefaultMaxSessions = sessions.DefaultMax

// ErrNoKey is why Sessions refuses a tools/call for which it found no
// conversation (SessionOptions.Key, the client's MetaConversation, a
// session, a trace) when SessionOptions.Unkeyed is UnkeyedRefuse: the call
// does not run, and its result is a tool error the model reads (mcpguard's
// NoKeyText, with _meta dev.toolguard/reason "no-key"), the same in both
// MCP adapters.
var ErrNoKey = mcpguard.ErrNoKey

// Unkeyed says what Sessions does with a tools/call that has no
// conversation: no key from SessionOptions.Key, no MetaConversation, no
// session that identifies a client (a stateless streamable HTTP server makes
// a new session for every request, and revision 2026-07-28 has none).
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
	// authenticated principal (TokenInfo of req.Extra), a header
	// (HeaderKey) or a conversation handle the client sends in _meta
	// (MetaKey). "" means the call has none; then the client's
	// MetaConversation, then the session where it identifies a client. nil
	// means those two only. Calls with
	// equal keys share a Tracker, so a key must tell apart the clients
	// (and conversations) that must not share one.
	Key func(ctx context.Context, req *mcp.CallToolRequest) string
	// Unkeyed says what to do with a call that has neither a key nor a
	// session that identifies a client. The zero value is UnkeyedDerive.
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
// SessionOptions.Key or MetaConversation, a session id, a session without
// one (a stdio or other single-client connection), or a trace id; one of
// the four.
type key struct {
	conv, id, trace string
	conn            *mcp.ServerSession
}

// Sessions keeps one toolguard.Tracker per conversation, each made from
// the same Policy: per key from SessionOptions.Key, else per session where
// the session identifies a client (it has an id, or it is a connection
// that is not HTTP, such as stdio). It is safe for concurrent use. Create
// it with NewSessions.
//
// When it makes the tracker of a session, Sessions starts one goroutine
// that waits for the session to end (ServerSession.Wait) and then forgets
// the tracker; the goroutine ends with the session. Trackers of keys from
// SessionOptions.Key stay until they are evicted or forgotten.
type Sessions struct {
	policy toolguard.Policy
	opts   SessionOptions
	m      *sessions.Map[key]

	mu       sync.Mutex
	watching map[*mcp.ServerSession]struct{}
	warned   sync.Once // PerRequestWarning
}

// NewSessions returns an empty Sessions whose trackers are made with
// toolguard.NewTracker(p). The idle clock is p.Now (time.Now when nil).
func NewSessions(p toolguard.Policy, o SessionOptions) *Sessions {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	p = sessions.ShareBreaker(p) // one for the process: see sessions.New
	p = sessions.ShareStore(p)
	return &Sessions{
		policy:   p,
		opts:     o,
		m:        sessions.New[key](p, o.MaxSessions, o.IdleReset),
		watching: make(map[*mcp.ServerSession]struct{}),
	}
}

// Tracker returns the Tracker of the call's conversation, creating it on
// first use, and false when the call has no conversation: no key, no
// MetaConversation, no session that identifies a client, no trace.
func (s *Sessions) Tracker(ctx context.Context, req *mcp.CallToolRequest) (*toolguard.Tracker, bool) {
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
	ss := req.Session
	if ss == nil {
		return s.traced(req)
	}
	if id := ss.ID(); id != "" {
		return s.get(key{id: id}, ss), true
	}
	if req.Extra == nil || req.Extra.Header == nil {
		return s.TrackerFor(ss), true
	}
	return s.traced(req)
}

// traced returns the Tracker of the call's trace (UnkeyedDerive), if it
// has one.
func (s *Sessions) traced(req *mcp.CallToolRequest) (*toolguard.Tracker, bool) {
	k := mcpguard.TraceKey(req.Params.GetMeta()[mcpguard.MetaTraceparent])
	if k == "" {
		return nil, false
	}
	t, _ := s.m.Get(key{trace: k})
	return t, true
}

// TrackerFor returns the Tracker of the session ss, creating it on first
// use. Use it for sessions that are one client each (stdio, in-memory); a
// session of a stateless HTTP server lasts one request.
func (s *Sessions) TrackerFor(ss *mcp.ServerSession) *toolguard.Tracker {
	return s.get(key{conn: ss}, ss)
}

// get returns the Tracker of k and watches ss, the session it belongs to.
func (s *Sessions) get(k key, ss *mcp.ServerSession) *toolguard.Tracker {
	t, created := s.m.Get(k)
	if created && ss != nil {
		s.mu.Lock()
		if _, ok := s.watching[ss]; !ok {
			s.watching[ss] = struct{}{}
			go s.watch(ss, k)
		}
		s.mu.Unlock()
	}
	return t
}

// watch forgets the tracker k of ss when the session ends.
func (s *Sessions) watch(ss *mcp.ServerSession, k key) {
	defer func() {
		// A ServerSession that was not made by Server.Connect cannot be
		// waited for: its tracker stays until it is evicted or forgotten.
		if recover() != nil {
			s.unwatch(ss)
		}
	}()
	_ = ss.Wait()
	// Stop watching before forgetting: a tracker made for ss after this
	// point starts a new watch, which ends at once and forgets it.
	s.unwatch(ss)
	s.m.Forget(k)
}

func (s *Sessions) unwatch(ss *mcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watching, ss)
}

// Forget drops the Tracker of the session ss.
func (s *Sessions) Forget(ss *mcp.ServerSession) {
	s.m.Forget(key{conn: ss})
	if ss != nil && ss.ID() != "" {
		s.m.Forget(key{id: ss.ID()})
	}
}

// ForgetKey drops the Tracker of the conversation key k.
func (s *Sessions) ForgetKey(k string) { s.m.Forget(key{conv: k}) }

// Len returns the number of conversation trackers kept.
func (s *Sessions) Len() int { return s.m.Len() }

// Middleware returns a receiving middleware that guards each tools/call
// with the Tracker of its conversation. A call without a conversation gets
// a Tracker of its own (UnkeyedDerive) or ErrNoKey (UnkeyedRefuse).
func (s *Sessions) Middleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctr, ok := req.(*mcp.CallToolRequest)
			if method != methodCallTool || !ok || ctr == nil || ctr.Params == nil {
				return next(ctx, method, req)
			}
			t, ok := s.Tracker(ctx, ctr)
			if !ok {
				if s.opts.Unkeyed == UnkeyedRefuse {
					if speaksStateless(ctr) {
						return complete(noKey()), nil
					}
					return noKey(), nil
				}
				s.warned.Do(func() {
					s.opts.Logger.WarnContext(ctx, mcpguard.PerRequestWarning, "gen_ai.tool.name", ctr.Params.Name)
				})
				t = toolguard.NewTracker(s.policy)
			}
			return guard(ctx, t, next, method, ctr)
		}
	}
}

// metaConversation is the conversation key every Sessions reads after
// SessionOptions.Key: the client's MetaConversation.
var metaConversation = MetaKey(MetaConversation)

// noKey is the result of a call refused with ErrNoKey: a tool result the
// model reads, the same in both MCP adapters.
func noKey() *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: mcpguard.NoKeyText}},
		Meta:    mcp.Meta{MetaVerdict: "abort", MetaReason: mcpguard.MetaReasonNoKey},
	}
}

// MetaKey returns a SessionOptions.Key that reads the string value of the
// request's _meta entry name, such as MetaConversation. A client that sets
// it keeps one Tracker per value, on every transport.
func MetaKey(name string) func(context.Context, *mcp.CallToolRequest) string {
	return func(_ context.Context, req *mcp.CallToolRequest) string {
		v, _ := req.Params.GetMeta()[name].(string)
		return v
	}
}

// HeaderKey returns a SessionOptions.Key that reads the HTTP header name of
// the request (streamable HTTP only), such as one an authenticating proxy
// sets to the user's identity.
func HeaderKey(name string) func(context.Context, *mcp.CallToolRequest) string {
	return func(_ context.Context, req *mcp.CallToolRequest) string {
		if req.Extra == nil {
			return ""
		}
		return req.Extra.Header.Get(name)
	}
}
