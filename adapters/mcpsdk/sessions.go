package mcpsdk

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// Sessions keeps one toolguard.Tracker per mcp.ServerSession, each made
// from the same Policy. It is safe for concurrent use. Create it with
// NewSessions.
//
// When it makes the tracker of a session, Sessions starts one goroutine
// that waits for the session to end (ServerSession.Wait) and then forgets
// the tracker; the goroutine ends with the session.
type Sessions struct {
	m *sessions.Map[*mcp.ServerSession]

	mu       sync.Mutex
	watching map[*mcp.ServerSession]struct{}
}

// NewSessions returns an empty Sessions whose trackers are made with
// toolguard.NewTracker(p). The idle clock is p.Now (time.Now when nil).
func NewSessions(p toolguard.Policy, o SessionOptions) *Sessions {
	return &Sessions{
		m:        sessions.New[*mcp.ServerSession](p, o.MaxSessions, o.IdleReset),
		watching: make(map[*mcp.ServerSession]struct{}),
	}
}

// Tracker returns the Tracker of the session ss, creating it on first use.
// A nil ss has a Tracker of its own, shared by every call without a
// session.
func (s *Sessions) Tracker(ss *mcp.ServerSession) *toolguard.Tracker {
	t, created := s.m.Get(ss)
	if created && ss != nil {
		s.mu.Lock()
		if _, ok := s.watching[ss]; !ok {
			s.watching[ss] = struct{}{}
			go s.watch(ss)
		}
		s.mu.Unlock()
	}
	return t
}

// watch forgets the tracker of ss when the session ends.
func (s *Sessions) watch(ss *mcp.ServerSession) {
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
	s.m.Forget(ss)
}

func (s *Sessions) unwatch(ss *mcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watching, ss)
}

// Forget drops the Tracker of the session ss.
func (s *Sessions) Forget(ss *mcp.ServerSession) { s.m.Forget(ss) }

// Len returns the number of session trackers kept.
func (s *Sessions) Len() int { return s.m.Len() }

// Middleware returns a receiving middleware that guards each tools/call
// with the Tracker of its session.
func (s *Sessions) Middleware() mcp.Middleware {
	return MiddlewareFunc(func(_ context.Context, req *mcp.CallToolRequest) *toolguard.Tracker {
		return s.Tracker(req.Session)
	})
}
