package toolguard

// revisits is the rule of a turn that keeps coming back to results it has
// already seen (Policy.MaxRevisits): the turn's last calls, whatever their
// keys, each returned what its key had returned before — nothing new, no
// change of the world — and the call asks for a key of the turn again.
// The repeat rule counts one key and starts over when another call made
// progress; a loop of several calls with a call that changes nothing in
// it (A, A, B, B, a no-op, A, A, B, B, the no-op …) starts it over at each
// turn of the loop, and a cycle longer than CyclePeriod is no cycle. This
// rule counts the run of successes that brought nothing new, across keys:
// any call that made progress of its own (a new key, a changed result or
// error output) ends it, so edit → test → edit → test with new results is
// work.
// A call new to the turn runs: it is a new approach. Its state is the
// length of the turn's run and a number per run, the hint's scope.
type revisits struct{ runLength }

// check fires for a call of a key the turn has seen after MaxRevisits calls
// that brought nothing new (toolRule.revisits: off for exempt tools).
func (r *revisits) check(p *probe) (firing, bool) {
	max := p.rule.revisits
	if max <= 0 || r.n < max || !p.ks.seen {
		return firing{}, false
	}
	return firing{reason: ReasonCycle, scope: hintScope{rule: ruleRevisit, chain: r.run}, count: int(r.n), limit: int(max),
		msg: revisitMessage(p.rule.name, int(r.n))}, true
}

// recorded lengthens the run with a success that made no progress and ends
// it with any call that did. A failure that fails as before is the failure
// rule's (MaxFailures): it does neither, nor does a call of an exempt
// (polling) tool.
func (r *revisits) recorded(p *probe, o *outcome) {
	if !p.rule.exempt && (o.progress || !o.failed) {
		r.step(!o.progress)
	}
}
