package toolguard

// cycles is the rule of cycles (Policy.CyclePeriod, CycleRepeats): the turn's
// last calls repeat a sequence of two or more distinct calls, none of which
// brought anything new, and the call continues it. It reads the turn's
// calls in the ledger and keeps no state of its own; its settings are the
// tool's (toolRule.cyclePeriod, cycleRepeats: off for exempt tools).
type cycles struct {
	stateless
	ledger *ledger
}

func (c *cycles) check(p *probe) (firing, bool) {
	if p.rule.cyclePeriod == 0 {
		return firing{}, false
	}
	period, ok := c.ledger.continues(p.key, p.turnNo, int(p.rule.cyclePeriod), int(p.rule.cycleRepeats))
	if !ok {
		return firing{}, false
	}
	n := int(p.rule.cycleRepeats)
	return firing{reason: ReasonCycle, scope: hintScope{rule: ruleCycle}, count: n, limit: n,
		msg: cycleMessage(p.rule.name, period, n)}, true
}
