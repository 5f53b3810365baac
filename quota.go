package toolguard

import "github.com/toolguard/toolguard/store"

// Quota is a set of per-session call limits declared by an agent or by the
// platform that runs it. Tools maps tool names or path.Match glob patterns
// to the number of calls allowed in a session; Default applies to every
// tool that Tools does not name. Zero or negative values mean "not set".
type Quota struct {
	Tools   map[string]int
	Default int
}

// quotaFor returns the limit q sets for tool: an exact name, else the
// longest matching pattern (the least limit among equals), else Default.
// 0 means not set.
func quotaFor(q *Quota, tool string) int {
	if q == nil {
		return 0
	}
	n, ok := lookup(q.Tools, tool, func(a, b string) bool { return q.Tools[a] < q.Tools[b] })
	if !ok {
		n = q.Default
	}
	return max(n, 0)
}

// resolveQuota is the min-of-three resolver (docs/policy.md): a tool's
// session limit is the least of the agent quota, the platform quota and
// the rule default, over those that are set. It also lists the counters of
// r shared through the Store.
func (c *config) resolveQuota(r *toolRule, tp ToolPolicy) {
	rule := c.policy.SessionLimit // not set when not positive, as the quotas
	highCost := tp.HighCost || matchAny(c.policy.HighCostTools, r.name)
	if hc := orDefault(c.policy.HighCostLimit, 10); hc > 0 && highCost {
		rule = hc
	}
	consider := func(n int, from string) {
		if n > 0 && (r.quota == 0 || n < r.quota) {
			r.quota, r.quotaFrom = n, from
		}
	}
	consider(quotaFor(c.policy.AgentQuota, r.name), "agent")
	consider(quotaFor(c.policy.PlatformQuota, r.name), "platform")
	consider(rule, "rule")
	if id := c.policy.SessionID; c.store != nil && id != "" && r.quota > 0 {
		r.counters = append(r.counters, store.Counter{Key: sessionKey(id, r.name), Limit: r.quota})
		r.counterOf = append(r.counterOf, r.quotaFrom)
	}
	for _, q := range c.shared {
		if q.Tools == nil || matchAny(q.Tools, r.name) {
			r.counters = append(r.counters, store.Counter{Key: q.Key(r.name), Limit: q.Limit, Window: q.Window})
			r.counterOf = append(r.counterOf, "shared "+q.Name)
		}
	}
}
