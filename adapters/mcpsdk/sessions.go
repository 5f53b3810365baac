package mcpsdk

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard"
)

// DefaultMaxSessions is the number of session trackers Sessions keeps when
// SessionOptions.MaxSessions is 0.
const DefaultMaxSessions = 1024

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
	policy toolguard.Policy
	max    int
	idle   time.Duration
	now    func() time.Time

	mu       sync.Mutex
	bySess   map[*mcp.ServerSession]*list.Element // of *session
	order    list.List                            // most recently used first
	watching map[*mcp.ServerSession]struct{}
}

type session struct {
	ss   *mcp.ServerSession
	t    *toolguard.Tracker
	last time.Time
}

// NewSessions returns an empty Sessions whose trackers are made with
// toolguard.NewTracker(p). The idle clock is p.Now (time.Now when nil).
func NewSessions(p toolguard.Policy, o SessionOptions) *Sessions {
	s := &Sessions{
		policy:   p,
		max:      o.MaxSessions,
		idle:     o.IdleReset,
		now:      p.Now,
		bySess:   make(map[*mcp.ServerSession]*list.Element),
		watching: make(map[*mcp.ServerSession]struct{}),
	}
	if s.max == 0 {
		s.max = DefaultMaxSessions
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Tracker returns the Tracker of the session ss, creating it on first use.
// A nil ss has a Tracker of its own, shared by every call without a
// session.
func (s *Sessions) Tracker(ss *mcp.ServerSession) *toolguard.Tracker {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.bySess[ss]; ok {
		e := el.Value.(*session)
		s.order.MoveToFront(el)
		if s.idle > 0 && now.Sub(e.last) >= s.idle {
			e.t.Reset()
		}
		e.last = now
		return e.t
	}
	if s.max > 0 {
		for s.order.Len() >= s.max {
			old := s.order.Back()
			s.order.Remove(old)
			delete(s.bySess, old.Value.(*session).ss)
		}
	}
	e := &session{ss: ss, t: toolguard.NewTracker(s.policy), last: now}
	s.bySess[ss] = s.order.PushFront(e)
	if _, ok := s.watching[ss]; ss != nil && !ok {
		s.watching[ss] = struct{}{}
		go s.watch(ss)
	}
	return e.t
}

// watch forgets the tracker of ss when the session ends.
func (s *Sessions) watch(ss *mcp.ServerSession) {
	defer func() {
		// A ServerSession that was not made by Server.Connect cannot be
		// waited for: its tracker stays until it is evicted or forgotten.
		if recover() != nil {
			s.mu.Lock()
			delete(s.watching, ss)
			s.mu.Unlock()
		}
	}()
	_ = ss.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watching, ss)
	s.forgetLocked(ss)
}

// Forget drops the Tracker of the session ss.
func (s *Sessions) Forget(ss *mcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(ss)
}

func (s *Sessions) forgetLocked(ss *mcp.ServerSession) {
	if el, ok := s.bySess[ss]; ok {
		s.order.Remove(el)
		delete(s.bySess, ss)
	}
}

// Len returns the number of session trackers kept.
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

// Middleware returns a receiving middleware that guards each tools/call
// with the Tracker of its session.
func (s *Sessions) Middleware() mcp.Middleware {
	return MiddlewareFunc(func(_ context.Context, req *mcp.CallToolRequest) *toolguard.Tracker {
		return s.Tracker(req.Session)
	})
}
