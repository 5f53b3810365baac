package toolguard

import (
	"slices"

	"github.com/toolguard/toolguard/internal/canon"
)

// failures is the rule of repeated failures (Policy.MaxFailures; docs/patterns.md,
// "Same failing command retried"): a tool's chain of equivalent failures in
// the turn (toolState.fail: hint, one attempt, abort), and a call failing
// the same way turn after turn (one hint, never escalated).
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

func (d *failures) check(p *probe) (firing, bool) {
	max := d.cfg.maxFailures
	if max <= 0 || p.rule.exempt {
		return firing{}, false
	}
	// A chain another call may have changed the world since is over.
	if f := p.turn.fail; f == nil || f.count == 0 || f.changes == p.changes {
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
	p.turn.fail.stage, p.turn.fail.diagnosed = failHinted, false
}

func (d *failures) allowed(p *probe) {
	p.turn.fail.refresh(p.changes) // both nil-safe: no chain before the tool's first failure
	p.turn.fail.allowed()
}

func (d *failures) recorded(p *probe, r *outcome) {
	if p.rule.exempt {
		return
	}
	p.turn.recordFailure(r.failed, r.sig, r.shape, p.key, r.changes)
	d.diagnosis(p, r)
	i := slices.IndexFunc(d.failing, func(f failingCall) bool { return f.key == p.key })
	switch {
	case !r.failed:
		if i >= 0 {
			d.failing = slices.Delete(d.failing, i, i+1)
		}
		d.across.forget(p.key) // a success forgets the call
	case i >= 0:
		d.failing[i].sig = r.sig.short()
	case len(d.failing) < maxAcross:
		d.failing = append(d.failing, failingCall{p.key, r.sig.short()})
	}
}

// endTurn books the calls whose last run in the turn failed.
func (d *failures) endTurn(turn int) {
	for _, f := range d.failing {
		d.across.record(f.key, f.sig, turn)
	}
	d.failing = emptied(d.failing)
	d.chains = emptied(d.chains)
}

// emptied returns s cleared and of length 0: its array serves the next turn.
func emptied[S ~[]E, E any](s S) S {
	clear(s)
	return s[:0]
}
