package toolguard

// cycles is the rule of cycles (Policy.CyclePeriod, CycleRepeats): the turn's
// last calls, read in the ledger, repeat a sequence of two or more distinct
// calls that brought nothing new, and the call continues it. Its settings
// are the tool's (toolRule.cyclePeriod, cycleRepeats: off for exempt tools).
type cycles struct {
	stateless
	ledger *ledger
}

func (c *cycles) check(p *probe) (firing, bool) {
	n := int(p.rule.cycleRepeats)
	period, ok := c.ledger.continues(p.key, p.turnNo, int(p.rule.cyclePeriod), n)
	if !ok {
		return firing{}, false
	}
	return firing{reason: ReasonCycle, scope: hintScope{rule: ruleCycle}, count: n, limit: n,
		msg: cycleMessage(p.rule.name, period, n)}, true
}
