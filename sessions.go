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
// session. Release ends a finished session. A Sessions is safe for
// concurrent use.
//
// Its Trackers also share what NewTracker(p) makes for each Tracker alone:
// when the Policy sets SharedQuotas without a Store, one store.Memory
// counts them for all its sessions; with a Store, one store.Breaker (when
// Policy.Breaker is nil) and, with FailOpen, one local fallback store.
// Policy.SessionID names one session in the Store, so a Policy that sets
// it belongs with NewTracker(p), not with a Sessions, whose Trackers would
// count one session's quotas together.
type Sessions struct {
	cfg *config // with the tool policies resolved so far (config.rules)
}

// NewSessions returns the Sessions of policy p. The zero Policy means the
// defaults.
func NewSessions(p Policy) *Sessions {
	cfg := newConfig(p)
	cfg.rules = &ruleCache{rules: make(map[string]*toolRule)}
	return &Sessions{cfg: &cfg}
}

// NewTracker opens a session: a Tracker under the Sessions' Policy, which
// behaves as toolguard.NewTracker(p) does.
func (s *Sessions) NewTracker() *Tracker { return newTracker(s.cfg) }

// Release ends a session opened by NewTracker and drops its state. The
// Tracker must not be used after it: its ShouldSkip then aborts every call
// with an error matching ErrInvalidCall, its Record books nothing and
// returns PhaseExhausted, and its Ledger and summaries are those of an empty
// session. A call allowed and not recorded yet counts against its Store
// quotas, as after Reset. Releasing a Tracker twice, or one that another
// Sessions opened, does nothing.
func (s *Sessions) Release(t *Tracker) {
	if t == nil || t.cfg != s.cfg {
		return
	}
	t.mu.Lock()
	if t.released.Swap(true) {
		t.mu.Unlock()
		return
	}
	b := batch{evs: events{on: t.cfg.hooked}}
	b.drop(t.turn.pending)
	b.drop(t.stale)
	t.clearState()
	t.mu.Unlock()
	t.flush(context.Background(), &b)
}

// ruleCache holds the tool policies that the Trackers of a Sessions
// resolved, for all of them.
type ruleCache struct {
	mu    sync.Mutex
	rules map[string]*toolRule // at most maxTools
}

// rule returns the resolved policy of a tool: with a Sessions, resolved
// once and shared by its sessions. Past maxTools names it resolves a new
// name's policy without keeping it, so a stream of new names cannot grow
// the Sessions.
func (c *config) rule(name string) *toolRule {
	rc := c.rules
	if rc == nil { // NewTracker(p): the Tracker's tool entries keep it
		return c.resolve(name)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if r, ok := rc.rules[name]; ok {
		return r
	}
	r := c.resolve(name)
	if len(rc.rules) < maxTools {
		rc.rules[name] = r
	}
	return r
}

// releasedDecision refuses a call of a released Tracker.
func releasedDecision() Decision {
	return Decision{
		Verdict: Abort,
		Reason:  ReasonInvalidCall,
		Message: invalidMarker + " The call was not executed: this session is over.",
		Phase:   PhaseExhausted,
		Err:     invalidCallError("the Tracker was released (Sessions.Release): the session is over"),
	}
}
