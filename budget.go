package toolguard

// budgetLocked refuses a call of round when the turn budget is spent: from
// the wind-down on (the turn is then exhausted), or when allowed calls hold
// every unit (a round that holds its unit may go on; a parallel call that
// would overrun the budget leaves the phase as it is).
func (t *Tracker) budgetLocked(round uint64) (Decision, bool) {
	ts, limit := &t.turn, t.cfg.maxCalls
	used := ts.reserved
	switch {
	case ts.phase >= PhaseWindDown: // only with a budget (see spendLocked)
		ts.phase, used = PhaseExhausted, ts.used
	case limit <= 0 || ts.reserved < limit || ts.rounds != nil && ts.rounds.open[round] != nil:
		return Decision{}, false
	}
	return Decision{Verdict: Abort, Reason: ReasonBudget, Message: budgetMessage(limit, t.cfg.unit),
		Phase: PhaseExhausted, Err: &BudgetError{Used: used, Limit: limit, Unit: t.cfg.unit.String()}}, true
}

// hold books the budget unit an allowed call of round holds until its
// Record (CountRounds: the round's, taken by its first call).
func (ts *turnState) hold(round uint64) {
	if ts.rounds != nil && ts.rounds.open[round] != nil {
		ts.rounds.open[round].pending++
		return
	}
	ts.reserved++
	if ts.rounds != nil {
		ts.rounds.open[round] = &roundState{pending: 1}
	}
}

// unhold gives back what hold took for a call of round that was cancelled.
func (ts *turnState) unhold(round uint64) {
	if ts.rounds == nil {
		ts.reserved--
		return
	}
	rs := ts.rounds.open[round]
	if rs == nil {
		return
	}
	rs.pending--
	switch {
	case rs.pending > 0:
	case !rs.used:
		delete(ts.rounds.open, round) // the round never used its unit
		ts.reserved--
	default:
		ts.rounds.finish(round)
	}
}

// spendLocked books the unit a recorded call of round used, and moves the
// turn's phase: PhaseNudge at NudgeRatio of the budget, PhaseWindDown at
// its end.
func (t *Tracker) spendLocked(round uint64) {
	ts := &t.turn
	if ts.rounds != nil {
		rs := ts.rounds.open[round]
		if rs == nil {
			return
		}
		spent := rs.used
		rs.used = true
		if rs.pending--; rs.pending == 0 {
			ts.rounds.finish(round)
		}
		if spent {
			return // the round's unit is used already
		}
	}
	ts.used++
	switch limit := t.cfg.maxCalls; {
	case limit > 0 && ts.used >= limit:
		ts.phase = max(ts.phase, PhaseWindDown)
	case t.cfg.nudgeAt > 0 && ts.used >= t.cfg.nudgeAt:
		ts.phase = max(ts.phase, PhaseNudge)
	}
}

type roundState struct {
	pending int  // calls of the round allowed and not yet recorded
	used    bool // the round's budget unit is used
}

// roundBook is what the turn budget knows of the turn's rounds
// (CountRounds only).
type roundBook struct {
	open map[uint64]*roundState
	// finished are the rounds whose calls were all recorded, oldest first:
	// kept (a WithRound context may check more calls one after another)
	// until maxFinishedRounds later rounds finished, unless pending again.
	finished []uint64
}

const maxFinishedRounds = 64

// finish books that the calls of round were all recorded.
func (b *roundBook) finish(round uint64) {
	b.finished = append(b.finished, round)
	if len(b.finished) <= maxFinishedRounds {
		return
	}
	old := b.finished[0]
	b.finished = append(b.finished[:0], b.finished[1:]...)
	if rs := b.open[old]; rs != nil && rs.pending <= 0 {
		delete(b.open, old)
	}
}
