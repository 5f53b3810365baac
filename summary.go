package toolguard

import (
	"fmt"
	"sort"
	"strings"
)

// Summary is what an agent must be able to say when it stops or hits a
// quota: what it tried, what it learned, what was skipped and what is left.
// It is built from counters, never from raw arguments or results, and
// encodes to JSON with stable snake_case names.
type Summary struct {
	Turn       int           `json:"turn"`
	Calls      int           `json:"calls"`       // executed this turn
	Failed     int           `json:"failed"`      // of those, failed
	NewResults int           `json:"new_results"` // of those, with a result new for their arguments
	Skipped    int           `json:"skipped"`     // not executed (hint or abort)
	Budget     BudgetState   `json:"budget"`
	Tools      []ToolSummary `json:"tools"` // by tool name
	Next       string        `json:"next_action"`
}

// BudgetState is the turn budget at the time of the summary.
type BudgetState struct {
	Unit  Unit  `json:"unit"`
	Used  int   `json:"used"`
	Limit int   `json:"limit"` // 0: unlimited
	Left  int   `json:"left"`  // -1: unlimited
	Phase Phase `json:"phase"`
}

// ToolSummary is one tool's share of the turn, with its session quota.
type ToolSummary struct {
	Tool        string         `json:"tool"`
	Calls       int            `json:"calls"`
	Failed      int            `json:"failed"`
	SameFailure int            `json:"same_failure"` // equivalent failures in a row, now
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

// MarshalText encodes the unit as its String.
func (u Unit) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// Summary returns the escalation summary of the current turn.
func (t *Tracker) Summary() Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := &t.turn
	s := Summary{
		Turn:       t.turnNo,
		Failed:     ts.failed,
		NewResults: ts.newResults,
		Skipped:    ts.skipped,
		Budget:     BudgetState{Unit: t.cfg.unit, Used: ts.used, Limit: t.cfg.maxCalls, Left: -1, Phase: ts.phase},
	}
	if t.cfg.maxCalls > 0 {
		s.Budget.Left = max(t.cfg.maxCalls-ts.used, 0)
	}
	for _, e := range t.turnTools() {
		tool, r := &e.turn, &e.rule
		ss := ToolSummary{
			Tool:         e.name,
			Calls:        tool.stats.ok + tool.stats.failed,
			Failed:       tool.stats.failed,
			NewResults:   tool.stats.newResults,
			Skipped:      tool.stats.skipped,
			SessionLimit: r.quota,
			QuotaFrom:    r.quotaFrom,
		}
		if tool.fail.count > 1 {
			ss.SameFailure = tool.fail.count
		}
		ss.SessionCalls = e.session.reserved
		for reason, n := range tool.stats.skips {
			if n > 0 {
				if ss.SkipReasons == nil {
					ss.SkipReasons = make(map[Reason]int)
				}
				ss.SkipReasons[Reason(reason)] = n
			}
		}
		s.Calls += ss.Calls
		s.Tools = append(s.Tools, ss)
	}
	s.Next = nextAction(s)
	return s
}

// nextAction suggests the narrower step the summary points to, most
// pressing first.
func nextAction(s Summary) string {
	if s.Budget.Phase >= PhaseWindDown {
		return "Summarize your work and answer the user's question."
	}
	for _, ts := range s.Tools {
		if ts.SameFailure >= 2 {
			return fmt.Sprintf("Stop retrying '%s': read its last error, check the interface, path, permission or precondition it needs, and report the blocker if one evidence-backed attempt fails.", ts.Tool)
		}
	}
	for _, ts := range s.Tools {
		if ts.SkipReasons[ReasonToolLimit] > 0 {
			return fmt.Sprintf("Do not call '%s' again: report what it found and ask before spending more of its quota.", ts.Tool)
		}
	}
	for _, ts := range s.Tools {
		if ts.SkipReasons[ReasonSimilarQuery]+ts.SkipReasons[ReasonChurn] > 0 {
			return fmt.Sprintf("Use the results '%s' already returned; if they do not answer the question, ask one narrower, clearly different query.", ts.Tool)
		}
	}
	for _, ts := range s.Tools {
		if ts.SkipReasons[ReasonDuplicate]+ts.SkipReasons[ReasonCycle] > 0 {
			return fmt.Sprintf("Use the earlier result of '%s' instead of repeating the call, or change the approach.", ts.Tool)
		}
	}
	return "Answer with what you have, or make the one narrower call the results so far point to."
}

// String renders the summary as concise text to inject into the model's
// context or show to an operator.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "toolguard summary, turn %d: %d calls executed, %d failed, %d with new results, %d skipped.\n",
		s.Turn, s.Calls, s.Failed, s.NewResults, s.Skipped)
	if s.Budget.Limit > 0 {
		fmt.Fprintf(&b, "Budget: %d of %d tool %s used, %d left (phase %s).\n",
			s.Budget.Used, s.Budget.Limit, s.Budget.Unit, s.Budget.Left, s.Budget.Phase)
	} else {
		fmt.Fprintf(&b, "Budget: %d tool %s used, no limit.\n", s.Budget.Used, s.Budget.Unit)
	}
	for _, ts := range s.Tools {
		fmt.Fprintf(&b, "- %s: %d calls, %d failed", ts.Tool, ts.Calls, ts.Failed)
		if ts.SameFailure > 1 {
			fmt.Fprintf(&b, " (%d the same way in a row)", ts.SameFailure)
		}
		fmt.Fprintf(&b, ", %d new results", ts.NewResults)
		if ts.Skipped > 0 {
			reasons := make([]string, 0, len(ts.SkipReasons))
			for r, n := range ts.SkipReasons {
				reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
			}
			sort.Strings(reasons)
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
