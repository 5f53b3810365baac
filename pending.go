package toolguard

import (
	"bytes"
	"context"
	"slices"
	"time"
)

// pendingCall is an allowed call waiting for its Record.
type pendingCall struct {
	res   held // the Store reservation, if any (res.r.ID empty: none)
	seq   uint64
	id    string
	key   callKey
	tool  *toolEntry
	ks    *keyState // the key's state in the turn
	round uint64
	at    time.Time
	args  []byte // the caller's slice, not a copy: see keyLocked
}

// findPending returns the index in ps of the pending call that a Record of
// c with key completes, or -1: with byID, the one with c's id (of those,
// when a harness reused the id, the one with key first); without, the
// oldest with key and no other id.
func findPending(ps []pendingCall, c Call, key callKey, byID bool) int {
	if !byID {
		return slices.IndexFunc(ps, func(pc pendingCall) bool {
			return pc.key == key && (c.ID == "" || pc.id == "")
		})
	}
	ofID := func(pc pendingCall) bool { return c.ID != "" && pc.id == c.ID && pc.key.tool == c.Tool }
	if i := slices.IndexFunc(ps, func(pc pendingCall) bool { return ofID(pc) && pc.key == key }); i >= 0 {
		return i
	}
	return slices.IndexFunc(ps, ofID)
}

// keyLocked returns the key of c: that of a pending call of the tool (with
// c's id, if it has one) with the same arguments, or else their hash
// (scanned into sc), with t.mu released meanwhile.
func (t *Tracker) keyLocked(c Call, sc *scratch) callKey {
	for _, pc := range slices.Backward(t.turn.pending) {
		if pc.tool.rule.name == c.Tool && (c.ID == "" || pc.id == c.ID) && bytes.Equal(pc.args, c.Args) {
			return pc.key
		}
	}
	t.mu.Unlock()
	defer t.mu.Lock()
	r := t.tool(c.Tool).rule
	sc.scan.Scan(c.Args)
	return callKey{r.name, Hash(sc.scan.Hash(r.ignore))}
}

// takeLocked takes the pending call that a Record (or cancel) of c with
// key completes, in the order docs/concepts.md gives ("The two-step API"):
// by id, then by key, each in this turn first; stale says it was allowed
// in an earlier turn.
func (t *Tracker) takeLocked(c Call, key callKey) (pc pendingCall, stale, ok bool) {
	for _, byID := range [2]bool{true, false} {
		for _, ps := range [2]*[]pendingCall{&t.turn.pending, &t.stale} {
			if i := findPending(*ps, c, key, byID); i >= 0 {
				return takeAt(ps, i), ps == &t.stale, true
			}
		}
	}
	return pendingCall{}, false, false
}

// takeAt removes the pending call i from ps (nil once empty: an idle
// session holds no buffer).
func takeAt(ps *[]pendingCall, i int) pendingCall {
	pc := (*ps)[i]
	if *ps = slices.Delete(*ps, i, i+1); len(*ps) == 0 {
		*ps = nil
	}
	return pc
}

// allowUncheckedLocked books a call recorded without being checked as
// allowed, so that the turn stays exact, and returns its pending call.
func (t *Tracker) allowUncheckedLocked(c Call, b *batch) pendingCall {
	p := t.inspect(c, t.round.Add(1))
	defer p.s.release()
	t.probeLocked(p)
	t.bookLocked(c, p, Decision{Phase: t.turn.phase}, nil, b)
	return takeAt(&t.turn.pending, len(t.turn.pending)-1)
}

// cancel releases the pending call c that its caller gave up on (see
// Outcome.Cancelled) and returns the turn's phase. A call never checked, or
// already recorded, is ignored.
func (t *Tracker) cancel(ctx context.Context, c Call) Phase {
	sc := getScratch()
	defer sc.release()
	t.mu.Lock()
	pc, stale, ok := t.takeLocked(c, t.keyLocked(c, sc))
	if ok {
		// A call of an earlier turn holds only its session count.
		pc.tool.session.reserved = max(pc.tool.session.reserved-1, 0)
	}
	if ok && !stale {
		t.turn.unhold(pc.round)
		st := &t.turnTool(pc.tool).stats
		st.reserved = max(st.reserved-1, 0)
		pc.ks.pending = max(pc.ks.pending-1, 0)
		pc.ks.count = max(pc.ks.count-1, 0)
		w := &t.churn.window // the call brought nothing, not even nothing new
		*w = slices.DeleteFunc(*w, func(it windowItem) bool { return it.seq == pc.seq })
	}
	phase := t.turn.phase
	t.mu.Unlock()
	evs := events{on: t.cfg.hooked}
	t.settle(ctx, c, []held{pc.res}, false, &evs) // none held when !ok
	t.emit(ctx, &evs)
	return phase
}

// batch is what one operation collects under the lock for after it: its
// time, its events and the Store reservations of the pending calls it
// dropped (past maxPending or maxStale, or at Release).
type batch struct {
	now     time.Time
	evs     events
	orphans []held
	of      Call // the first dropped call, for the Store's events
}

// drop forgets pending calls never recorded.
func (b *batch) drop(pcs []pendingCall) {
	for _, pc := range pcs {
		if pc.res.r.ID == "" {
			continue
		}
		if len(b.orphans) == 0 {
			b.of = Call{ID: pc.id, Tool: pc.tool.rule.name}
		}
		b.orphans = append(b.orphans, pc.res)
	}
}

// flush commits the reservations of the dropped calls, outside the lock
// (they were allowed, and an allowed call counts against its quotas whether
// or not it is ever recorded), then delivers the events.
func (t *Tracker) flush(ctx context.Context, b *batch) {
	t.settle(ctx, b.of, b.orphans, true, &b.evs)
	t.emit(ctx, &b.evs)
}
