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
	cfg *config
	// across remembers, over the session, the calls whose last runs failed
	// the same way (the same masked error text) in consecutive turns; a
	// success of the call forgets it. Past maxAcross calls it starts over.
	across map[callKey]acrossCall
	// failing are the calls of the turn whose last run failed, with the
	// Hash.short of their error text: booked in across when the turn ends.
	failing []failingCall
	// chains are the failure chains of the turn, for the diagnosis: at most
	// maxChains, the first ones.
	chains []*failState
}

type failingCall struct {
	key callKey
	sig uint64
}

// failStage walks a tool through MaxFailures: count equivalent failures,
// hint, let one evidence-backed attempt run, abort if it fails the same way.
type failStage uint8

const (
	failCounting  failStage = iota
	failHinted              // the hint was given; the next call runs
	failAttempt             // the evidence-backed attempt is running
	failAbortNext           // the attempt failed the same way
)

// failState is a tool's failure chain in the turn, allocated at its first
// failure.
type failState struct {
	chain   uint32  // counts the chains of the turn: the scope of a hint
	count   int     // equivalent failures in a row
	sig     Hash    // masked error text of the last failure
	shape   string  // argsShape of the last failure
	key     callKey // the call of the last failure
	changes uint32  // turnState.changes at the last failure
	stage   failStage
	// diagnosed: the attempt runs after the model's own diagnosis, not
	// after a hint: if it fails the same way, the next retry gets the hint
	// rather than an abort.
	diagnosed bool
}

func (d *failures) check(p *probe) (firing, bool) {
	max := d.cfg.maxFailures
	if max <= 0 || p.rule.exempt {
		return firing{}, false
	}
	// A retry — the same call or tweaked arguments (canon.Tweaked); others
	// are another approach — of the chain at its limit, or after its
	// attempt failed the same way, with nothing changed since.
	if f := p.turn.fail; f != nil && f.changes == p.changes &&
		(f.stage == failAbortNext || f.stage == failCounting && f.count >= max) &&
		(p.key == f.key || canon.Tweaked(p.s.scan.Shape(), f.shape)) {
		return firing{reason: ReasonRepeatedFailure, scope: hintScope{rule: ruleFailure, tool: p.tool, chain: f.chain},
			count: f.count, limit: max, msg: failureMessage(p.rule.name, f.count),
			abort: f.stage == failAbortNext && !f.diagnosed}, true
	}
	if c := d.across[p.key]; c.turn == p.turnNo-1 && c.turns >= max {
		return firing{reason: ReasonRepeatedFailure, scope: hintScope{rule: ruleAcross, key: p.key}, count: c.turns,
			limit: max, msg: acrossMessage(p.rule.name, c.turns), once: true}, true
	}
	return firing{}, false
}

// hinted books the hint of the tool's chain: the next call runs, as the
// attempt.
func (d *failures) hinted(p *probe) {
	p.turn.fail.stage, p.turn.fail.diagnosed = failHinted, false
}

// allowed starts the chain over when another call may have changed the
// world since its last failure; after the hint, the call is the attempt.
func (d *failures) allowed(p *probe) {
	switch f := p.turn.fail; {
	case f == nil: // no failure of the tool yet
	case f.count > 0 && f.changes != p.changes:
		f.restart(0)
	case f.stage == failHinted:
		f.stage = failAttempt
	}
}

// recorded books the outcome r of the call p. A success ends the tool's
// chain and forgets the call across turns. A diagnosis — a read-only call
// (not a think tool's) that made progress of its own — moves the counting
// chains of the other tools to their attempt, as a hint would
// (failState.diagnosed; docs/patterns.md, "Same failing command retried").
func (d *failures) recorded(p *probe, r *outcome) {
	if p.rule.exempt {
		return
	}
	if r.failed {
		d.failed(p, r)
		return
	}
	if p.turn.fail != nil {
		p.turn.fail.restart(0)
	}
	d.failing = slices.DeleteFunc(d.failing, func(f failingCall) bool { return f.key == p.key })
	delete(d.across, p.key)
	if p.rule.readOnly && !p.rule.think && r.progress {
		for _, f := range d.chains {
			if f.stage == failCounting && f.count > 0 {
				f.stage, f.diagnosed = failHinted, true
			}
		}
	}
}

// failed books the failure r of the call p in the turn's failing calls and
// in the tool's chain, which it allocates and the diagnosis watches.
// Failures are equivalent, with nothing changed in between, when they
// repeat the same call, or when tweaked arguments (canon.Tweaked) or the
// attempt after the hint fail with the same masked error text.
func (d *failures) failed(p *probe, r *outcome) {
	if i := slices.IndexFunc(d.failing, func(f failingCall) bool { return f.key == p.key }); i >= 0 {
		d.failing[i].sig = r.digest.short()
	} else if len(d.failing) < maxAcross {
		d.failing = append(d.failing, failingCall{p.key, r.digest.short()})
	}
	if p.turn.fail == nil {
		p.turn.fail = &failState{}
	}
	f := p.turn.fail
	if !slices.Contains(d.chains, f) && len(d.chains) < maxChains {
		d.chains = append(d.chains, f)
	}
	if f.count > 0 && f.changes == r.changes &&
		(p.key == f.key || r.digest == f.sig && (f.stage == failAttempt || canon.Tweaked(r.shape, f.shape))) {
		f.count++
		if f.stage == failAttempt {
			f.stage = failAbortNext
			return // the retries it watches stay those before the attempt
		}
	} else {
		f.restart(1)
	}
	f.sig, f.shape, f.key, f.changes = r.digest, r.shape, p.key, r.changes
}

// restart starts a new chain (or none).
func (f *failState) restart(count int) { *f = failState{chain: f.chain + 1, count: count} }

// endTurn books the calls whose last run in the turn failed in across.
func (d *failures) endTurn(turn int) {
	for _, f := range d.failing {
		c, ok := d.across[f.key]
		if d.across == nil || !ok && len(d.across) >= maxAcross {
			d.across = make(map[callKey]acrossCall)
		}
		if c.turn != turn-1 || c.sig != f.sig {
			c.turns = 0
		}
		d.across[f.key] = acrossCall{sig: f.sig, turns: c.turns + 1, turn: turn}
	}
	d.failing = slices.Delete(d.failing, 0, len(d.failing)) // cleared, the array kept
	d.chains = slices.Delete(d.chains, 0, len(d.chains))
}

type acrossCall struct {
	sig   uint64 // Hash.short of the masked error text
	turns int    // consecutive turns, ending with turn, in which it failed with sig
	turn  int
}

const (
	maxAcross = 256 // the calls remembered across turns, and the turn's failing
	maxChains = 16  // the failure chains of a turn the diagnosis looks at
)
