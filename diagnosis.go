package toolguard

import "slices"

// maxChains bounds the failure chains of a turn the diagnosis looks at.
const maxChains = 16

// diagnosis books the outcome r of the call p for the turn's chains: a
// failure's chain is watched. A diagnosis — a read-only call (not a think
// tool's) that made progress of its own — moves the counting chains of the
// other tools to their attempt, as a hint would; if the attempt fails the
// same way, the next retry gets the hint, not an abort (failState.diagnosed;
// docs/patterns.md, "Same failing command retried").
func (d *failures) diagnosis(p *probe, r *outcome) {
	own := p.turn.fail
	if r.failed {
		if !slices.Contains(d.chains, own) && len(d.chains) < maxChains {
			d.chains = append(d.chains, own)
		}
		return
	}
	if !p.rule.readOnly || p.rule.think || !r.progress {
		return
	}
	for _, f := range d.chains {
		if f != own && f.stage == failCounting && f.count > 0 {
			f.stage, f.diagnosed = failHinted, true
		}
	}
}
