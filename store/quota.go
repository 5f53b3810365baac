package store

import "time"

// SharedQuota is a total shared through toolguard.Policy.Store by every
// Tracker that declares it in Policy.SharedQuotas: per operator, per
// tenant, per hour or per day.
type SharedQuota struct {
	Name    string        // the counter's key, such as "tenant:acme:hourly"
	Tools   []string      // names or glob patterns; nil means every tool
	Limit   int           // calls allowed; ≤ 0 disables the quota
	Window  time.Duration // the total expires after this long; 0: never
	PerTool bool          // one total per tool instead of one for all
}

// Key returns the counter key of the quota for a call of tool, as the
// Tracker passes it to the Store: "quota:" and the name as written, then,
// with PerTool, ":" and the tool's name. Memory.Count and redis-cli take
// it as it is. toolguard.Policy.Validate reports quotas whose keys can
// meet.
func (q SharedQuota) Key(tool string) string {
	key := "quota:" + q.Name
	if q.PerTool {
		key += ":" + tool
	}
	return key
}
