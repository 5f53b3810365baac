package toolguard

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// similar is the rule of similar search queries (Policy.SimilarityThreshold):
// a search tool's query reworded after an earlier one of the turn, in the
// same scope, that brought nothing new. Its state is each search tool's
// query index for the turn (toolState.queries) and a count of queries.
type similar struct {
	cfg        *config
	remembered int32 // queries remembered this turn, at most maxTurnQueries
}

func (s *similar) check(p *probe) (firing, bool) {
	x := p.turn.queries
	if !s.cfg.similarOn || p.query == "" || p.ks.seen || p.ks.countAt(p.changes) != 0 || x == nil ||
		!x.similarKey(p.query, &p.sim, p.scope, p.round, s.cfg.threshold, s.cfg.policy.SimilarIgnoresResults) {
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

// endTurn: the Tracker drops the tools' turn state, their indexes with it.
func (s *similar) endTurn(int) { s.remembered = 0 }

// specificBits returns the bits (simWordBits) of the words of the raw
// query q that are specific, each as a key holds it, for refines
// (docs/concepts.md, "Similar queries": a refinement).
func specificBits(q string) (bits [2]uint64) {
	quoted := false
	for i, w := range strings.Fields(q) {
		spec := quoted || strings.HasPrefix(w, "\"") // normalizeQuery drops the quotes
		quoted = spec && !strings.HasSuffix(w, "\"")
		r, _ := utf8.DecodeRuneInString(strings.TrimLeft(w, "([{'"))
		if !spec && (i == 0 || !unicode.IsUpper(r)) {
			continue
		}
		if n := normalizeQuery(w); n != "" { // one word: its key is its runes folded
			b0, b1 := simWordBits([]byte(strings.Map(simFold, n)))
			bits[0] |= b0
			bits[1] |= b1
		}
	}
	return bits
}

// refines reports whether the query of k adds a specific term (a word of
// simKey.specific) to the earlier query of e.
func refines(k, e *simKey) bool {
	for w := range strings.SplitSeq(k.sorted, " ") {
		w = w[strings.IndexByte(w, ':')+1:]
		b0, b1 := simWordBits([]byte(w))
		if k.specific[0]&b0 != 0 && k.specific[1]&b1 != 0 && !simHas(e.sorted, w, true) {
			return true
		}
	}
	return false
}
