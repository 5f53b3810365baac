package toolguard

import "slices"

// churn is the rule of the rolling window (Policy.Window, WindowLimit;
// docs/patterns.md, "Broad search churn" and "External fetch loop"). Its
// state is the window of the turn's most recent searches and fetches.
type churn struct {
	cfg    *config
	window window
}

func (c *churn) check(p *probe) (firing, bool) {
	if p.query == "" && p.url == "" { // exempt tools are not in the window
		return firing{}, false
	}
	n := c.window.count(p, c.cfg.threshold)
	if n < c.cfg.windowLimit {
		return firing{}, false
	}
	return firing{reason: ReasonChurn, scope: hintScope{rule: ruleChurn, tool: p.tool}, count: n,
		limit: c.cfg.windowLimit, msg: churnMessage(p.rule.name, p.query != "", n, c.cfg.window)}, true
}

// allowed adds a search or a fetch to the window; a search's key is the one
// the similar rule keeps (p.held), shared.
func (c *churn) allowed(p *probe) {
	if c.cfg.window > 0 && !p.rule.exempt && (p.query != "" || p.url != "") {
		c.window.push(windowItem{key: p.key, seq: p.seq, round: p.round, sim: heldKey(p.held, &p.sim), url: p.url})
	}
}

func (c *churn) recorded(p *probe, r *outcome) {
	c.window.settle(r.seq, p.rule.name, r.failed, r.digest)
}

func (c *churn) endTurn(int) { c.window.clear() }

// window holds the turn's most recent searches (with a query) and fetches
// (with a URL), oldest first.
type window struct {
	items []windowItem // grown as the turn goes on: most turns see few
	size  int          // 0: off (config.window)
}

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

func (w *window) init(size int) { w.size = size }

func (w *window) clear() { w.items = emptied(w.items) }

func (w *window) push(it windowItem) {
	if w.size == 0 {
		return
	}
	if len(w.items) == w.size { // the oldest goes
		w.items = slices.Delete(w.items, 0, 1)
	}
	w.items = appendBounded(w.items, it, w.size)
}

// settle records the outcome of the call seq and whether it was a new fact.
func (w *window) settle(seq uint64, tool string, failed bool, digest Hash) {
	earlier, same := 0, false
	for i := range w.items {
		it := &w.items[i]
		if it.seq == seq {
			it.ok, it.digest = !failed, digest
			it.newFact = !failed && earlier > 0 && !same
			return
		}
		if it.key.tool == tool && it.ok {
			earlier++
			same = same || it.digest == digest
		}
	}
}

// count returns how many calls in the window the candidate call repeats:
// calls of the same tool, from earlier rounds, other than identical ones
// (MaxRepeats governs those), that brought no new fact, with a similar
// query (searches) or the same host and path (fetches).
func (w *window) count(p *probe, threshold float64) int {
	n := 0
	for i := range w.items {
		it := &w.items[i]
		if it.key.tool != p.rule.name || it.key == p.key || it.round == p.round || it.newFact {
			continue
		}
		switch {
		case p.query != "":
			if it.sim != nil && simScore(it.sim, &p.sim, threshold) >= threshold {
				n++
			}
		case it.url == p.url:
			n++
		}
	}
	return n
}

// appendBounded appends it to s, growing s to at most size elements.
func appendBounded[T any](s []T, it T, size int) []T {
	if len(s) == cap(s) {
		grown := make([]T, len(s), min(max(2*len(s), 2), size))
		copy(grown, s)
		s = grown
	}
	return append(s, it)
}
