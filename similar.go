package toolguard

// similar is the rule of similar search queries (Policy.SimilarityThreshold):
// a search tool's query reworded after an earlier one of the turn, in the
// same scope, that brought nothing new. Its state is each search tool's
// query index for the turn (toolState.queries, made at the tool's first
// query) and the number of queries the turn remembers.
type similar struct {
	cfg        *config
	remembered int32 // queries remembered this turn, at most maxTurnQueries
}

func (s *similar) check(p *probe) (firing, bool) {
	x := p.turn.queries
	if !s.cfg.similarOn || p.query == "" || p.ks.seen || p.ks.countAt(p.changes) != 0 || x == nil ||
		!x.similarKey(p.query, &p.sim, p.scope, p.round, s.cfg.threshold, s.cfg.similarBlind) {
		return firing{}, false
	}
	return firing{reason: ReasonSimilarQuery, scope: hintScope{rule: ruleSimilar, tool: p.tool}, count: 1, limit: 1,
		msg: similarMessage(p.rule.name)}, true
}

// allowed remembers the call's query; the key it keeps (p.held) is shared
// with the churn window.
func (s *similar) allowed(p *probe) {
	if p.query == "" || s.remembered >= maxTurnQueries {
		return
	}
	if p.turn.queries == nil {
		p.turn.queries = &queryIndex{}
	}
	p.held = p.turn.queries.addKey(p.query, &p.sim, p.scope, p.round, p.seq)
	s.remembered++
}

func (s *similar) recorded(p *probe, r *outcome) {
	if x := p.turn.queries; x != nil {
		x.settle(r.seq, r.failed, r.digest)
	}
}

// endTurn forgets the turn's queries: the Tracker drops the tools' turn
// state, their indexes with it.
func (s *similar) endTurn(int) { s.remembered = 0 }
