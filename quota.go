package toolguard

// Session quotas. A tool's calls are counted over the whole session (Reset
// keeps them). Its effective limit is the minimum of up to three limits,
// over those that are set:
//
//   - the agent quota (Policy.AgentQuota: what the agent definition declares),
//   - the platform quota (Policy.PlatformQuota: what the operator allows),
//   - the rule default (Policy.SessionLimit, 30; Policy.HighCostLimit, 10,
//     for high-cost tools).
//
// The resolution happens once per tool name, in config.resolve.

// quotaFor returns the limit q sets for tool: an exact name, else the
// longest matching pattern, else Default. 0 means not set.
func quotaFor(q *Quota, tool string) int {
	if q == nil {
		return 0
	}
	if n, ok := q.Tools[tool]; ok {
		return max(n, 0)
	}
	best, bestLen := 0, -1
	for pat, n := range q.Tools {
		if !isPattern(pat) || len(pat) < bestLen {
			continue
		}
		if match(pat, tool) {
			if len(pat) > bestLen || n < best {
				best, bestLen = max(n, 0), len(pat)
			}
		}
	}
	if bestLen >= 0 {
		return best
	}
	return max(q.Default, 0)
}
