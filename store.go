package toolguard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard/store"
)

// sessionKey returns the counter key of a tool's session quota. The
// session id is escaped ('%' and ':') so that the tool's name is all that
// follows the first ':' after it: a session cannot spend another session's
// quota through a tool name that holds ':'.
func sessionKey(sessionID, tool string) string {
	return "session:" + strings.NewReplacer("%", "%25", ":", "%3A").Replace(sessionID) + ":" + tool
}

// storeError reports a failed Store operation ("reserve", "commit" or
// "release"), or one the breaker held back: it matches
// store.ErrUnavailable and the store's error.
func storeError(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", store.ErrUnavailable, op, err)
}

// grant is the outcome of a Store reservation for one call.
type grant struct {
	held // the reservation to settle; r.ID is empty when none is held
	g    store.Grant
	err  error // the store failed and the policy fails closed
}

// reserve asks the Store, outside the lock, in one operation bounded by
// StoreTimeout, for the shared counters of the calls ps (one round's calls
// that the local rules allow, in order), unless the breaker holds it
// back (store.ErrBreakerOpen), and tells the breaker how it went. A failure
// is a storeError, reported for c as an EventStore, followed by the
// breaker's change, if any.
func (t *Tracker) reserve(ctx context.Context, c Call, ps []*probe, evs *events) []*grant {
	rs := make([]store.Reservation, len(ps))
	for i := range ps {
		var id [16]byte
		_, _ = rand.Read(id[:])
		rs[i] = store.Reservation{ID: hex.EncodeToString(id[:]), Counters: ps[i].rule.counters, TTL: t.cfg.ttl}
	}
	var gs []store.Grant
	bt := t.cfg.breaker.Begin(t.cfg.now())
	t.breakerEvent(c, bt, nil, evs)
	err := store.ErrBreakerOpen
	if bt.Run {
		opCtx, cancel := context.WithTimeout(ctx, t.cfg.storeTimeout)
		gs, err = t.cfg.store.Reserve(opCtx, rs)
		if err == nil && len(gs) != len(rs) {
			err = fmt.Errorf("the store answered %d grants for %d reservations", len(gs), len(rs))
		}
		cancel()
		// A context the caller cancelled says nothing of the store.
		bt = t.cfg.breaker.End(t.cfg.now(), bt.Probe, err != nil && ctx.Err() == nil, err == nil)
	}
	if err != nil {
		err = storeError("reserve", err)
		evs.add(Event{Kind: EventStore, CallID: c.ID, Tool: c.Tool, Err: err})
	}
	t.breakerEvent(c, bt, err, evs)
	out := make([]*grant, len(rs))
	if err != nil && t.cfg.policy.FailOpen {
		gs, _ = t.cfg.fallback.Reserve(context.Background(), rs) // counted locally while the store is down
	}
	for i := range out {
		out[i] = &grant{err: err}
		if err == nil || t.cfg.policy.FailOpen {
			*out[i] = grant{g: gs[i], held: held{local: err != nil}}
		}
		if out[i].g.OK {
			out[i].r = store.Reservation{ID: rs[i].ID, Counters: rs[i].Counters}
		}
	}
	return out
}

// held is a reservation to settle.
type held struct {
	r     store.Reservation
	local bool // the store failed and the policy fails open: r is held in cfg.fallback
}

func (t *Tracker) breakerEvent(c Call, bt store.BreakerStep, err error, evs *events) {
	if bt.Changed() {
		evs.add(Event{Kind: EventBreaker, CallID: c.ID, Tool: c.Tool, Breaker: bt.To, Err: err})
	}
}

// settle commits or releases the reservations hs hold (an empty r.ID holds
// none), outside the lock: those of the local fallback at once, the others
// in one Store operation, reported for c. It runs even when ctx is already
// cancelled (the call ran, or its reservation must be returned): only ctx's
// values are kept. The breaker neither holds a settle back nor counts it; a
// failure is an EventStore (why, and what a lost one costs:
// docs/distributed.md, "Faults").
func (t *Tracker) settle(ctx context.Context, c Call, hs []held, commit bool, evs *events) {
	var local, remote []store.Reservation
	for _, h := range hs {
		switch {
		case h.r.ID == "":
		case h.local:
			local = append(local, h.r)
		default:
			remote = append(remote, h.r)
		}
	}
	op, settle := "release", store.Store.Release
	if commit {
		op, settle = "commit", store.Store.Commit
	}
	if len(local) > 0 {
		_ = settle(t.cfg.fallback, ctx, local) // a store.Memory does not fail, nor read ctx
	}
	if len(remote) == 0 {
		return
	}
	opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cfg.storeTimeout)
	err := settle(t.cfg.store, opCtx, remote)
	cancel()
	if err != nil {
		evs.add(Event{Kind: EventStore, CallID: c.ID, Tool: c.Tool, Err: storeError(op, err)})
	}
}

// storeLocked turns a refused or failed reservation into a decision. A
// store that does not answer is no loop of the model's: it is told the
// call did not run and why, and the turn goes on, unless the Policy aborts
// at the first firing of any rule.
func (t *Tracker) storeLocked(c Call, p *probe, g *grant) (Decision, bool) {
	switch {
	case g == nil:
	case g.err != nil:
		v := Hint
		if t.cfg.action == ActionAbort {
			v = Abort
		}
		return Decision{Verdict: v, Reason: ReasonToolLimit, Message: storeDownMessage(c.Tool), Err: g.err}, true
	case !g.g.OK:
		i := g.g.Blocked
		if i < 0 || i >= len(p.rule.counters) {
			i = 0
		}
		n, limit := 0, p.rule.counters[i].Limit
		if i < len(g.g.Counts) {
			n = g.g.Counts[i]
		}
		return t.escalate(p, firing{reason: ReasonToolLimit, scope: hintScope{rule: ruleQuota, tool: p.tool}, count: n, limit: limit,
			msg: quotaMessage(c.Tool, p.rule.counterOf[i], limit, n, t.turn.used, t.cfg.maxCalls, t.cfg.unit)})
	}
	return Decision{}, false
}
