package toolguard

import "github.com/toolguard/toolguard/internal/canon"

// failures is the rule of repeated failures (Policy.MaxFailures): a tool's
// chain of equivalent failures in the turn — the same call again, or its
// arguments tweaked, failing the same way — gets a hint, then one
// evidence-backed attempt runs, and an attempt that fails the same way
// aborts; and a call that failed the same way at the end of MaxFailures
// turns in a row gets one hint in the next (never escalated: the new user
// message may carry a change the Tracker cannot see). Its state is each
// tool's chain for the turn (toolState.fail, made at the tool's first
// failure), the calls failing at the end of the turn, and those failing
// turn after turn over the session.
type failures struct {
	cfg    *config
	across acrossTurns
	// failing are the calls of the turn whose last run failed, with the
	// Hash.short of their error text: booked in across when the turn ends.
	failing []failingCall
	// chains are the failure chains of the turn, for diagnosis.go: at most
	// maxChains, the first ones.
	chains []*failState
}

type failingCall struct {
	key callKey
	sig uint64
}

// chain returns the tool's failure chain as of changes: nil before its
// first failure, and when another call may have changed the world since
// its last (an edit or an install makes the next attempt new).
func chainAt(s *toolState, changes uint32) *failState {
	f := s.fail
	if f == nil || f.count > 0 && f.changes != changes {
		return nil
	}
	return f
}

func (d *failures) check(p *probe) (firing, bool) {
	max := d.cfg.maxFailures
	if max <= 0 || p.rule.exempt {
		return firing{}, false
	}
	if f := chainAt(p.turn, p.changes); f != nil {
		retries := func() bool { return p.key == f.key || canon.Tweaked(p.shape(), f.shape) }
		if fire, insisted := f.check(max, retries); fire {
			return firing{reason: ReasonRepeatedFailure, scope: hintScope{rule: ruleFailure, tool: p.tool, chain: f.chain},
				count: f.count, limit: max, msg: failureMessage(p.rule.name, f.count), abort: insisted}, true
		}
	}
	if n := d.across.check(p.key, p.turnNo, max); n > 0 {
		return firing{reason: ReasonRepeatedFailure, scope: hintScope{rule: ruleAcross, key: p.key}, count: n,
			limit: max, msg: acrossMessage(p.rule.name, n), once: true}, true
	}
	return firing{}, false
}

// hinted books the hint of the tool's chain: the next call runs, as the
// attempt.
func (d *failures) hinted(p *probe) {
	f := p.turn.fail
	f.stage, f.diagnosed = failHinted, false
}

func (d *failures) allowed(p *probe) {
	if f := p.turn.fail; f != nil {
		f.refresh(p.changes)
		f.allowed()
	}
}

func (d *failures) recorded(p *probe, r *outcome) {
	if p.rule.exempt {
		return
	}
	p.turn.recordFailure(r.failed, r.sig, r.shape, p.key, r.changes)
	d.diagnosis(p, r)
	i := -1
	for k := range d.failing {
		if d.failing[k].key == p.key {
			i = k
			break
		}
	}
	switch {
	case r.failed && i >= 0:
		d.failing[i].sig = r.sig.short()
	case r.failed && len(d.failing) < maxAcross:
		d.failing = append(d.failing, failingCall{p.key, r.sig.short()})
	case !r.failed:
		if i >= 0 {
			d.failing = append(d.failing[:i], d.failing[i+1:]...)
		}
		d.across.forget(p.key) // a success forgets the call
	}
}

// endTurn books the calls whose last run in the turn failed.
func (d *failures) endTurn(turn int) {
	for _, f := range d.failing {
		d.across.record(f.key, f.sig, turn)
	}
	clear(d.failing)
	d.failing = d.failing[:0]
	clear(d.chains)
	d.chains = d.chains[:0]
}
