package toolguard

// streak is the rule of failures across tools (Policy.MaxFailureStreak;
// docs/patterns.md, "Failures across tools"): every call of the turn failing,
// with no success in between. One hint per run (runLength.run), never an
// abort.
type streak struct {
	runLength
	cfg *config
}

func (s *streak) check(p *probe) (firing, bool) {
	max, n := s.cfg.maxStreak, int(s.n)
	if max <= 0 || n < max || p.rule.exempt {
		return firing{}, false
	}
	return firing{reason: ReasonRepeatedFailure, scope: hintScope{rule: ruleStreak, chain: s.run}, count: n,
		limit: max, msg: streakMessage(n), once: true}, true
}

// recorded lengthens the run with a failure and ends it with a success.
func (s *streak) recorded(p *probe, r *outcome) { s.step(p, r.failed) }
