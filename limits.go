package toolguard

// limits is the per-turn limit of a tool (ToolPolicy.Limit) and its session
// quota (Quota): a call past either is refused. It reads the counts of calls
// allowed that the Tracker keeps per tool.
type limits struct {
	stateless
	cfg *config
}

func (l *limits) check(p *probe) (firing, bool) {
	r := p.rule
	if n := int(p.turn.stats.reserved); r.limit > 0 && n >= r.limit {
		return firing{reason: ReasonToolLimit, scope: hintScope{rule: ruleLimit, tool: p.tool},
			count: n, limit: r.limit, msg: turnLimitMessage(r.name, r.limit)}, true
	}
	if n := int(p.tool.session.reserved); r.quota > 0 && n >= r.quota {
		return firing{reason: ReasonToolLimit, scope: hintScope{rule: ruleQuota, tool: p.tool}, count: n, limit: r.quota,
			msg: quotaMessage(r.name, r.quotaFrom, r.quota, n, p.used, l.cfg.maxCalls, l.cfg.unit)}, true
	}
	return firing{}, false
}
