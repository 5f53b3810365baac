package toolguard

// revisits is the rule of a turn that keeps coming back to results it has
// already seen (Policy.MaxRevisits, toolRule.revisits: off for exempt tools;
// docs/patterns.md, "A turn that keeps coming back"): after a run of the
// turn's successes that brought nothing new, whatever their keys, a call of
// a key the turn has seen fires. A call new to the turn runs.
type revisits struct{ runLength }

func (r *revisits) check(p *probe) (firing, bool) {
	max := p.rule.revisits
	if max <= 0 || r.n < max || !p.ks.seen {
		return firing{}, false
	}
	return firing{reason: ReasonCycle, scope: hintScope{rule: ruleRevisit, chain: r.run}, count: int(r.n), limit: int(max),
		msg: revisitMessage(p.rule.name, int(r.n))}, true
}

// recorded lengthens the run with a success that made no progress and ends
// it with any call that did; a failure as before is the failure rule's.
func (r *revisits) recorded(p *probe, o *outcome) {
	if o.progress || !o.failed {
		r.step(p, !o.progress)
	}
}
