package toolguard

import (
	"context"
	"sync"
)

// Sessions opens the sessions of one Policy: a server that holds one
// Tracker per conversation makes one Sessions at start-up and opens each
// conversation's Tracker with NewTracker. The Policy is resolved once, and
// each tool's policy (its overrides, search and read-only status, quotas)
// the first time any of its sessions calls the tool, instead of once per
// session. Release takes a finished session's buffers back for the next
// one. A Sessions is safe for concurrent use.
//
// Its Trackers also share what NewTracker(p) makes for each Tracker alone:
// when the Policy sets SharedQuotas without a Store, one store.Memory
// counts them for all its sessions; with a Store, one Breaker (when
// Policy.Breaker is nil) and, with FailOpen, one local fallback store.
// Policy.SessionID names one session in the Store, so a Policy that sets
// it belongs with NewTracker(p), not with a Sessions, whose Trackers would
// count one session's quotas together.
type Sessions struct {
	cfg *config

	mu    sync.Mutex
	rules map[string]*toolRule // resolved tool policies; at most maxTools

	free sync.Pool // *sessionBuffers given back by Release
}

// NewSessions returns the Sessions of policy p. The zero Policy means the
// defaults.
func NewSessions(p Policy) *Sessions {
	cfg := newConfig(p)
	return &Sessions{cfg: &cfg}
}

// NewTracker opens a session: a Tracker under the Sessions' Policy, which
// behaves as toolguard.NewTracker(p) does.
func (s *Sessions) NewTracker() *Tracker {
	t := &Tracker{sessions: s, cfg: s.cfg, turnNo: 1}
	t.ledger.size = s.cfg.ledgerSize
	t.turn.init(s.cfg)
	if b, ok := s.free.Get().(*sessionBuffers); ok {
		t.ledger.entries, t.turn.slab, t.turn.pending = b.entries, b.slab, b.pending
		t.turn.history.items = b.history
	}
	return t
}

// Release ends a session opened by NewTracker and keeps its buffers for a
// session opened later. The Tracker must not be used after it: its
// ShouldSkip then aborts every call with an error matching
// ErrInvalidCall, its Record books nothing and returns PhaseExhausted,
// and its Ledger and summaries are those of an empty session. A call
// allowed and not recorded yet counts against its Store quotas, as after
// Reset. Releasing a Tracker twice, or one that another Sessions opened,
// does nothing.
func (s *Sessions) Release(t *Tracker) {
	if t == nil || t.sessions != s {
		return
	}
	t.mu.Lock()
	if t.released.Swap(true) {
		t.mu.Unlock()
		return
	}
	t.dropLocked(t.turn.pending)
	t.dropLocked(t.stale)
	orphans := t.takeOrphansLocked()
	b := &sessionBuffers{
		entries: keepSmall(t.ledger.entries),
		slab:    keepSmall(t.turn.slab),
		pending: keepSmall(t.turn.pending),
		history: keepSmall(t.turn.history.items),
	}
	t.ledger = ledger{size: t.ledger.size}
	t.turn.reset()
	t.turn.slab, t.turn.pending, t.turn.history.items = nil, nil, nil
	t.turn.window.items = nil
	t.stale, t.across = nil, acrossTurns{}
	t.mu.Unlock()

	t.toolMu.Lock()
	t.tools, t.toolIndex = nil, nil
	t.toolMu.Unlock()
	s.free.Put(b)
	if len(orphans) > 0 {
		evs := events{on: t.cfg.hooked}
		ctx := context.Background()
		t.settleOrphans(ctx, orphans, &evs)
		t.emit(ctx, &evs)
	}
}

// sessionBuffers are the buffers of a released session, cleared, for the
// next session opened.
type sessionBuffers struct {
	entries []ledgerEntry
	slab    []keyState
	pending []pendingCall
	history []histItem
}

// maxKeptBuffer is the largest buffer Release keeps, in elements: a
// session opened later starts with at most this much, so that one long
// session does not make every later one large.
const maxKeptBuffer = 32

// keepSmall returns b cleared and emptied, or nil if it is too large to
// keep.
func keepSmall[T any](b []T) []T {
	if cap(b) > maxKeptBuffer {
		return nil
	}
	clear(b[:cap(b)])
	return b[:0]
}

// rule returns the resolved policy of a tool, shared by every session.
// Past maxTools names it resolves the policy without keeping it, so a
// stream of new names cannot grow the Sessions.
func (s *Sessions) rule(name string) *toolRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.rules[name]; ok {
		return r
	}
	r := s.cfg.resolve(name)
	if s.rules == nil {
		s.rules = make(map[string]*toolRule)
	}
	if len(s.rules) < maxTools {
		s.rules[name] = &r
	}
	return &r
}

// releasedDecision refuses a call of a released Tracker.
func releasedDecision() Decision {
	return Decision{
		Verdict: Abort,
		Reason:  ReasonInvalidCall,
		Message: releasedMessage(),
		Phase:   PhaseExhausted,
		Err:     invalidCallError("the Tracker was released (Sessions.Release): the session is over"),
	}
}

func releasedMessage() string {
	return invalidMarker + " The call was not executed: this session is over."
}
