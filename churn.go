package toolguard

import "slices"

// churn is the rule of the rolling window (Policy.Window, WindowLimit;
// docs/patterns.md, "Broad search churn" and "External fetch loop"). Its
// state is the window of the turn's most recent searches (with a query) and
// fetches (with a URL), oldest first.
type churn struct {
	cfg    *config
	window []windowItem
}

// check counts the calls in the window the call repeats: calls of the same
// tool, from earlier rounds, other than identical ones (MaxRepeats governs
// those), that brought no new fact, with a similar query (searches) or the
// same host and path (fetches).
func (c *churn) check(p *probe) (firing, bool) {
	if p.query == "" && p.url == "" { // exempt tools are not in the window
		return firing{}, false
	}
	n := 0
	for _, it := range c.window {
		if it.key.tool != p.rule.name || it.key == p.key || it.round == p.round || it.newFact {
			continue
		}
		similar := p.query != "" && it.sim != nil &&
			simScore(it.sim, &p.sim, c.cfg.threshold) >= c.cfg.threshold
		if similar || p.query == "" && it.url == p.url {
			n++
		}
	}
	if n < c.cfg.windowLimit {
		return firing{}, false
	}
	return firing{reason: ReasonChurn, scope: hintScope{rule: ruleChurn, tool: p.tool}, count: n,
		limit: c.cfg.windowLimit, msg: churnMessage(p.rule.name, p.query != "", n, c.cfg.window)}, true
}

// allowed adds a search or a fetch to the window, the oldest going past its
// size; a search's key is the one the similar rule keeps (p.held), shared.
func (c *churn) allowed(p *probe) {
	w, size := &c.window, c.cfg.window
	if size == 0 || p.rule.exempt || p.query == "" && p.url == "" {
		return
	}
	if len(*w) == size {
		*w = slices.Delete(*w, 0, 1)
	} else if len(*w) == cap(*w) { // grown as the turn goes on (most see few), up to size
		*w = append(make([]windowItem, 0, min(max(2*len(*w), 2), size)), *w...)
	}
	*w = append(*w, windowItem{key: p.key, seq: p.seq, round: p.round, url: p.url,
		sim: heldKey(p.held, &p.sim)})
}

// recorded books the outcome of the call and whether it was a new fact.
func (c *churn) recorded(p *probe, r *outcome) {
	earlier, same := 0, false
	for i := range c.window {
		it := &c.window[i]
		if it.seq == r.seq {
			it.ok, it.digest = !r.failed, r.digest
			it.newFact = !r.failed && earlier > 0 && !same
			return
		}
		if it.key.tool == p.rule.name && it.ok {
			earlier++
			same = same || it.digest == r.digest
		}
	}
}

func (c *churn) endTurn(int) { c.window = nil }

type windowItem struct {
	key     callKey
	seq     uint64
	round   uint64
	sim     *simKey // of the query, for searches whose query has a word; shared with the query index
	url     string  // host and path, for fetches
	ok      bool    // recorded, and it succeeded
	newFact bool    // the result differed from every earlier result of the tool in the window, if any
	digest  Hash
}
