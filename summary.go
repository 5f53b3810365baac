package toolguard

import (
	"fmt"
	"slices"
	"strings"
)

// Summary is what an agent must be able to say when it stops or hits a
// quota: what it tried, what it learned, what was skipped, whether and why
// the turn was stopped and what is left. It is built from counters, never
// from raw arguments or results, and encodes to JSON with stable
// snake_case names.
type Summary struct {
	// Session is true for Tracker.SessionSummary: the counts are over every
	// turn of the session so far, Turn is the number of turns, and
	// StoppedTurns how many of them were stopped.
	Session      bool `json:"session,omitempty"`
	Turn         int  `json:"turn"`
	StoppedTurns int  `json:"stopped_turns,omitempty"`
	Calls        int  `json:"calls"`       // executed
	Failed       int  `json:"failed"`      // of those, failed
	NewResults   int  `json:"new_results"` // of those, with a result new for their arguments
	Skipped      int  `json:"skipped"`     // not executed (hint or abort)
	// Stopped says whether the current turn was stopped: a call was
	// aborted (StoppedBy is its rule, StoppedTool its tool), or the budget
	// is used and the turn winds down (StoppedBy is ReasonBudget).
	Stopped     bool          `json:"stopped"`
	StoppedBy   Reason        `json:"stopped_by,omitempty"`
	StoppedTool string        `json:"stopped_tool,omitempty"`
	Budget      BudgetState   `json:"budget"` // the current turn's
	Tools       []ToolSummary `json:"tools"`  // by tool name
	// Next is the step to take now; when a tool stopped the turn, it is
	// about that tool.
	Next string `json:"next_action"`
}

// BudgetState is the turn budget at the time of the summary.
type BudgetState struct {
	Unit  string `json:"unit"` // "calls" or "rounds" (Policy.CountRounds)
	Used  int    `json:"used"`
	Limit int    `json:"limit"` // 0: unlimited
	Left  int    `json:"left"`  // -1: unlimited
	Phase Phase  `json:"phase"`
}

// ToolSummary is one tool's share of the turn (of the session in a
// session summary), with its session quota.
type ToolSummary struct {
	Tool        string         `json:"tool"`
	Calls       int            `json:"calls"`
	Failed      int            `json:"failed"`
	SameFailure int            `json:"same_failure"` // equivalent failures in a row in the current turn
	NewResults  int            `json:"new_results"`
	Skipped     int            `json:"skipped"`
	SkipReasons map[Reason]int `json:"skip_reasons,omitempty"`
	// SessionCalls counts the tool's calls over the session against
	// SessionLimit (0: none), which comes from QuotaFrom (agent, platform
	// or rule).
	SessionCalls int    `json:"session_calls"`
	SessionLimit int    `json:"session_limit"`
	QuotaFrom    string `json:"quota_from,omitempty"`
}

// Summary returns the escalation summary of the current turn.
func (t *Tracker) Summary() Summary { return t.summary(false) }

// SessionSummary returns the summary of the whole session so far: every
// turn's calls, failures, new results and skips, per tool, and how many
// turns were stopped. Reset does not clear it. Budget, Stopped and Next
// are about the current turn.
func (t *Tracker) SessionSummary() Summary { return t.summary(true) }

func (t *Tracker) summary(session bool) Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := &t.turn
	s := Summary{
		Session:    session,
		Turn:       t.turnNo,
		Failed:     int(ts.stats.failed),
		NewResults: int(ts.stats.newResults),
		Skipped:    int(ts.stats.skipped),
		StoppedBy:  ts.stopBy,
		Budget:     BudgetState{Unit: t.cfg.unit.String(), Used: ts.used, Limit: t.cfg.maxCalls, Left: -1, Phase: ts.phase},
	}
	if t.cfg.maxCalls > 0 {
		s.Budget.Left = max(t.cfg.maxCalls-ts.used, 0)
	}
	if ts.stopTool != nil { // set with stopBy
		s.StoppedTool = ts.stopTool.name
	}
	if s.StoppedBy == ReasonNone && ts.phase >= PhaseWindDown {
		s.StoppedBy = ReasonBudget
	}
	s.Stopped = s.StoppedBy != ReasonNone
	in := func(e *toolEntry) bool { return e.turn.turn == int32(t.turnNo) }
	if session {
		s.Failed, s.NewResults, s.Skipped = 0, 0, t.invalidCalls // calls without a tool
		s.StoppedTurns = t.stoppedTurns
		if s.Stopped {
			s.StoppedTurns++
		}
		in = func(e *toolEntry) bool { return e.session != (toolStats{}) }
	}
	t.toolMu.Lock()
	t.tools.each(func(e *toolEntry) {
		if in(e) {
			s.Tools = append(s.Tools, toolSummary(e, session))
		}
	})
	t.toolMu.Unlock()
	slices.SortFunc(s.Tools, func(a, b ToolSummary) int { return strings.Compare(a.Tool, b.Tool) })
	for _, ss := range s.Tools {
		s.Calls += ss.Calls
		if session {
			s.Failed += ss.Failed
			s.NewResults += ss.NewResults
			s.Skipped += ss.Skipped
		}
	}
	s.Next = nextAction(s)
	return s
}

// toolSummary returns one tool's summary, for the turn or the session.
func toolSummary(e *toolEntry, session bool) ToolSummary {
	stats := &e.turn.stats
	if session {
		stats = &e.session
	}
	ss := ToolSummary{
		Tool:         e.rule.name,
		Calls:        int(stats.ok + stats.failed),
		Failed:       int(stats.failed),
		NewResults:   int(stats.newResults),
		Skipped:      int(stats.skipped),
		SessionCalls: int(e.session.reserved),
		SessionLimit: e.rule.quota,
		QuotaFrom:    e.rule.quotaFrom,
	}
	if f := e.turn.fail; f != nil && f.count > 1 { // Reset clears it
		ss.SameFailure = f.count
	}
	if ss.Skipped > 0 { // then e.skips counts them by reason
		skips := &e.skips.turn
		if session {
			skips = &e.skips.session
		}
		ss.SkipReasons = make(map[Reason]int)
		for reason, n := range skips {
			if n > 0 {
				ss.SkipReasons[Reason(reason)] = int(n)
			}
		}
	}
	return ss
}

// nextAction suggests the narrower step the summary points to: about what
// stopped the turn when something did, else the most pressing rule that
// fired.
func nextAction(s Summary) string {
	if s.Stopped {
		return nextFor(s.StoppedBy, s.StoppedTool)
	}
	for _, ts := range s.Tools {
		if ts.SameFailure >= 2 {
			return nextFor(ReasonRepeatedFailure, ts.Tool)
		}
	}
	for _, r := range []Reason{ReasonToolLimit, ReasonSimilarQuery, ReasonChurn, ReasonDuplicate, ReasonCycle} {
		for _, ts := range s.Tools {
			if ts.SkipReasons[r] > 0 {
				return nextFor(r, ts.Tool)
			}
		}
	}
	return nextFor(ReasonNone, "")
}

// nextFor is the next step after rule r fired for tool.
func nextFor(r Reason, tool string) string {
	switch r {
	case ReasonBudget:
		return "Summarize your work and answer the user's question."
	case ReasonInvalidCall:
		return "Call one of the tools you were given, by name, or answer the user."
	case ReasonRepeatedFailure:
		return fmt.Sprintf("Stop retrying '%s': read its last error, check the interface, path, permission or precondition it needs, and report the blocker if one evidence-backed attempt fails.", tool)
	case ReasonToolLimit:
		return fmt.Sprintf("Do not call '%s' again: report what it found and ask before spending more of its quota.", tool)
	case ReasonSimilarQuery, ReasonChurn:
		return fmt.Sprintf("Use the results '%s' already returned; if they do not answer the question, ask one narrower, clearly different query.", tool)
	case ReasonDuplicate, ReasonCycle:
		return fmt.Sprintf("Use the earlier result of '%s' instead of repeating the call, or change the approach.", tool)
	}
	return "Answer with what you have, or make the one narrower call the results so far point to."
}

// String renders the summary as concise text to inject into the model's
// context or show to an operator.
func (s Summary) String() string {
	var b strings.Builder
	turn := "The turn was"
	if s.Session {
		turn = "The current turn was"
		fmt.Fprintf(&b, "toolguard session summary, %s (%d stopped): ", plural(s.Turn, "turn"), s.StoppedTurns)
	} else {
		fmt.Fprintf(&b, "toolguard summary, turn %d: ", s.Turn)
	}
	withNew := fmt.Sprintf("%d with new results", s.NewResults)
	if s.NewResults == 1 {
		withNew = "1 with a new result"
	}
	fmt.Fprintf(&b, "%s executed, %d failed, %s, %d skipped.\n",
		plural(s.Calls, "call"), s.Failed, withNew, s.Skipped)
	switch {
	case !s.Stopped:
		fmt.Fprintf(&b, "%s not stopped.\n", turn)
	case s.StoppedBy == ReasonBudget:
		fmt.Fprintf(&b, "%s stopped: the turn budget is used up.\n", turn)
	case s.StoppedBy == ReasonInvalidCall:
		fmt.Fprintf(&b, "%s stopped: a call without a tool name was aborted.\n", turn)
	default:
		fmt.Fprintf(&b, "%s stopped: a call of '%s' was aborted (%s).\n", turn, s.StoppedTool, s.StoppedBy)
	}
	unit := toolUnit(s.Budget.Unit)
	if s.Budget.Limit > 0 {
		fmt.Fprintf(&b, "Budget: %d of %s used, %d left (phase %s).\n",
			s.Budget.Used, plural(s.Budget.Limit, unit), s.Budget.Left, s.Budget.Phase)
	} else {
		fmt.Fprintf(&b, "Budget: %s used, no limit.\n", plural(s.Budget.Used, unit))
	}
	for _, ts := range s.Tools {
		fmt.Fprintf(&b, "- %s: %s, %d failed", ts.Tool, plural(ts.Calls, "call"), ts.Failed)
		if ts.SameFailure > 1 {
			fmt.Fprintf(&b, " (%d the same way in a row)", ts.SameFailure)
		}
		fmt.Fprintf(&b, ", %s", plural(ts.NewResults, "new result"))
		if ts.Skipped > 0 {
			reasons := make([]string, 0, len(ts.SkipReasons))
			for r, n := range ts.SkipReasons {
				reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
			}
			slices.Sort(reasons)
			fmt.Fprintf(&b, ", %d skipped (%s)", ts.Skipped, strings.Join(reasons, ", "))
		}
		if ts.SessionLimit > 0 {
			fmt.Fprintf(&b, "; session %d of %d (%s quota)", ts.SessionCalls, ts.SessionLimit, ts.QuotaFrom)
		}
		b.WriteString(".\n")
	}
	fmt.Fprintf(&b, "Next: %s", s.Next)
	return b.String()
}
