package toolguard

import (
	"bytes"
	"context"
	"slices"
	"time"
)

// pendingCall is an allowed call waiting for its Record.
type pendingCall struct {
	resID    string // the Store reservation, if any
	resLocal bool   // held in the local fallback store (FailOpen)
	seq      uint64
	id       string
	key      callKey
	tool     *toolEntry
	ks       *keyState // the key's state in the turn
	round    uint64
	at       time.Time
	args     []byte // the caller's slice, not a copy: see keyLocked
}

// held returns the Store reservation the call holds.
func (pc *pendingCall) held() held {
	return heldBy(&grant{id: pc.resID, local: pc.resLocal}, pc.tool)
}

// findPending returns the index of the pending call that a Record of (id,
// key) completes: the one with that id (of those, when a harness reused
// the id, the one with that key first), else, when byKey is set, the
// oldest with that key and no other id; -1 if none.
func findPending(ps []pendingCall, id, tool string, key callKey, byKey bool) int {
	first := -1
	for i := range ps {
		if id != "" && ps[i].id == id && ps[i].tool.rule.name == tool {
			if ps[i].key == key {
				return i
			}
			if first < 0 {
				first = i
			}
		}
	}
	if first >= 0 || !byKey {
		return first
	}
	for i := range ps {
		if ps[i].key == key && (id == "" || ps[i].id == "") {
			return i
		}
	}
	return -1
}

// keyLocked returns the key of c: that of a pending call of the tool (with
// c's id, if it has one) with the same arguments, or else their hash
// (scanned into sc first unless scanned), with t.mu released meanwhile.
func (t *Tracker) keyLocked(c Call, sc *scratch, scanned bool) callKey {
	for _, pc := range slices.Backward(t.turn.pending) {
		if pc.tool.rule.name == c.Tool && (c.ID == "" || pc.id == c.ID) && bytes.Equal(pc.args, c.Args) {
			return pc.key
		}
	}
	t.mu.Unlock()
	defer t.mu.Lock()
	r := t.tool(c.Tool).rule
	if !scanned {
		sc.scan.Scan(c.Args)
	}
	return callKey{r.name, Hash(sc.scan.Hash(r.ignore))}
}

// takeLocked takes the pending call that a Record (or cancel) of c with
// key completes; stale says it was allowed in an earlier turn. A call id
// names one call: the call of this turn with that id, else the call of an
// earlier turn with it, and only then an id-less call of this turn with
// the same key. A late Record never completes a call of the new turn that
// is not its own.
func (t *Tracker) takeLocked(c Call, key callKey) (pc pendingCall, stale, ok bool) {
	ps := &t.turn.pending
	byKey := c.ID == "" || findPending(t.stale, c.ID, c.Tool, key, false) < 0
	i := findPending(*ps, c.ID, c.Tool, key, byKey)
	if i < 0 {
		ps, stale = &t.stale, true
		i = findPending(*ps, c.ID, c.Tool, key, true)
	}
	if i < 0 {
		return pendingCall{}, false, false
	}
	return takeAt(ps, i), stale, true
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
func (t *Tracker) allowUncheckedLocked(c Call, now time.Time, orphans *[]pendingCall) pendingCall {
	var buf [128]byte
	p, names := t.inspect(c, buf[:0])
	defer p.done()
	p.round = t.round.Add(1)
	t.probeLocked(p)
	t.bookLocked(c, p, names, now, Decision{Phase: t.turn.phase}, nil, orphans)
	return takeAt(&t.turn.pending, len(t.turn.pending)-1)
}

// cancel releases the pending call c that its caller gave up on and
// returns the turn's phase (see Outcome.Cancelled): what ShouldSkip took for
// it is given back, its place in the repeat count and the window included.
// A call never checked, or already recorded, is ignored.
func (t *Tracker) cancel(ctx context.Context, c Call) Phase {
	sc := getScratch()
	defer sc.release()
	t.mu.Lock()
	pc, stale, ok := t.takeLocked(c, t.keyLocked(c, sc, false))
	if ok {
		// A call of an earlier turn holds only its session count.
		pc.tool.session.reserved = max(pc.tool.session.reserved-1, 0)
	}
	if ok && !stale {
		ts := &t.turn
		ts.unhold(pc.round)
		st := &t.turnTool(pc.tool).stats
		st.reserved = max(st.reserved-1, 0)
		pc.ks.pending = max(pc.ks.pending-1, 0)
		pc.ks.count = max(pc.ks.count-1, 0)
		t.churn.window.forget(pc.seq)
	}
	phase := t.turn.phase
	t.mu.Unlock()
	if ok && pc.resID != "" {
		evs := events{on: t.cfg.hooked}
		t.settle(ctx, c, []held{pc.held()}, false, &evs)
		t.emit(ctx, &evs)
	}
	return phase
}

// forget drops the call seq from the window: it brought nothing, not even
// nothing new.
func (w *window) forget(seq uint64) {
	w.items = slices.DeleteFunc(w.items, func(it windowItem) bool { return it.seq == seq })
}

// dropLocked forgets pending calls never recorded (past maxPending or
// maxStale, or at Release); those that hold a Store reservation go to
// orphans, committed after the lock is released.
func dropLocked(orphans *[]pendingCall, pcs []pendingCall) {
	for _, pc := range pcs {
		if pc.resID != "" {
			*orphans = append(*orphans, pendingCall{resID: pc.resID, resLocal: pc.resLocal, id: pc.id, key: pc.key, tool: pc.tool})
		}
	}
}

// settleOrphans commits the reservations of dropped calls, outside the
// lock: they were allowed, and an allowed call counts against its quotas
// whether or not it is ever recorded.
func (t *Tracker) settleOrphans(ctx context.Context, orphans []pendingCall, evs *events) {
	if len(orphans) == 0 {
		return
	}
	hs := make([]held, len(orphans))
	for i, pc := range orphans {
		hs[i] = pc.held()
	}
	t.settle(ctx, Call{ID: orphans[0].id, Tool: orphans[0].tool.rule.name}, hs, true, evs)
}

// settleOrphansAlone settles orphans outside a call (Reset, Release), with
// their own events.
func (t *Tracker) settleOrphansAlone(orphans []pendingCall) {
	evs := events{on: t.cfg.hooked}
	t.settleOrphans(context.Background(), orphans, &evs)
	t.emit(context.Background(), &evs)
}
