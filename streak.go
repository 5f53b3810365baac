package toolguard

// streak is the rule of failures across tools (Policy.MaxFailureStreak):
// every call of the turn failing — a read, a listing, a write, a command —
// with no success in between. The failure rule sees one tool's chain; this
// one sees the run. Its size is far above a coding agent's exploratory
// misses (a grep that finds nothing, a lint exit code: at most 4 in a row
// in the successful episodes of the traces, docs/evaluation.md). It gives
// one hint per run and never aborts: the call after the hint runs. Its
// state is the length of the turn's run and a number per run, the hint's
// scope.
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

// recorded counts a failure, and a success ends the run. Exempt (polling)
// tools do neither.
func (s *streak) recorded(p *probe, r *outcome) {
	if !p.rule.exempt {
		s.step(r.failed)
	}
}
