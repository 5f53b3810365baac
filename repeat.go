package toolguard

// repeats is the rule of identical calls (ToolPolicy.MaxRepeats) and the
// one place that decides whether a call made progress of its own: a key
// new to the turn, or a result (for a failure, its error output) other
// than the key's last. Its state is the key's keyState (p.ks).
type repeats struct{ stateless }

// countAt returns the key's identical calls since it last made progress:
// when the world may have changed since it last ran (changes moved on),
// only its pending calls count. A build after an edit is not a repeat.
func (ks *keyState) countAt(changes uint32) int32 {
	if ks.changes != changes {
		return ks.pending
	}
	return ks.count
}

func (repeats) check(p *probe) (firing, bool) {
	n, max := int(p.ks.countAt(p.changes)), p.rule.maxRepeats
	if max <= 0 || n < max {
		return firing{}, false
	}
	return firing{reason: ReasonDuplicate, scope: hintScope{rule: ruleRepeat, key: p.key}, count: n, limit: max,
		msg: duplicateMessage(p.rule.name, n)}, true
}

func (repeats) allowed(p *probe) {
	ks := p.ks
	ks.count, ks.changes = ks.countAt(p.changes)+1, p.changes
	ks.pending++
}

// progress reports whether the outcome r of the call p is progress of its own.
func (repeats) progress(p *probe, r *outcome) bool {
	return !p.ks.seen || p.ks.last != r.digest.short() || p.ks.failed != r.failed
}

func (repeats) recorded(p *probe, r *outcome) {
	ks := p.ks
	ks.pending--
	// The key ran when its result was observed, at Record: a change
	// recorded while it was pending — by a call of its own round, say —
	// came before it, not in between (docs/concepts.md, "Progress").
	if r.progress || ks.changes != p.changes {
		ks.count = 1 + ks.pending
	}
	ks.seen, ks.last, ks.failed = true, r.digest.short(), r.failed
	ks.changes = r.changes // its own change is no news to it
}
