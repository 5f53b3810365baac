package toolguard

import (
	"context"
	"slices"
)

// cancel releases the pending call c that its caller gave up on
// (Outcome.Cancelled) and returns the turn's phase. The call has no
// result, so nothing is booked: what ShouldSkip took for it is given back
// (its budget unit, its per-turn and session counts, its place in the
// repeat count and in the rolling window, its Store reservation, released
// rather than committed), and no rule sees an outcome. As far as the guard
// knows the call did not run; a server that did part of the work before
// the cancellation arrived is not charged for it. The ledger entry stays
// pending (Entry.Done false): the call was asked for and never answered. A call never
// checked, or already recorded, is ignored.
func (t *Tracker) cancel(ctx context.Context, c Call) Phase {
	sc := getScratch()
	defer sc.release()
	t.mu.Lock()
	pc, stale, ok := t.takeLocked(c, t.keyLocked(c, sc, false))
	switch {
	case stale:
		// A call of an earlier turn: only its session count is still held.
		pc.tool.session.reserved = max(pc.tool.session.reserved-1, 0)
	case ok:
		t.unreserveLocked(pc)
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

// unreserveLocked gives back what reserveLocked took for the pending call
// pc of this turn.
func (t *Tracker) unreserveLocked(pc pendingCall) {
	ts := &t.turn
	if t.cfg.unit == unitRounds {
		if rs := ts.rounds.open[pc.round]; rs != nil {
			rs.pending--
			switch {
			case rs.pending <= 0 && !rs.used:
				delete(ts.rounds.open, pc.round) // the round never used its unit
				ts.reserved--
			case rs.pending <= 0:
				ts.rounds.finish(pc.round)
			}
		}
	} else {
		ts.reserved--
	}
	st := &t.turnTool(pc.tool).stats
	st.reserved = max(st.reserved-1, 0)
	pc.tool.session.reserved = max(pc.tool.session.reserved-1, 0)
	if pc.slot >= 0 && int(pc.slot) < len(ts.slab) {
		if ks := &ts.slab[pc.slot]; ks.key == pc.key {
			ks.pending = max(ks.pending-1, 0)
			ks.count = max(ks.count-1, 0)
		}
	}
	t.churn.window.forget(pc.seq)
}

// forget drops the call seq from the window: it brought nothing, not even
// nothing new.
func (w *window) forget(seq uint64) {
	w.items = slices.DeleteFunc(w.items, func(it windowItem) bool { return it.seq == seq })
}
