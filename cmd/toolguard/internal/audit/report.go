package audit

import (
	"sort"

	"github.com/toolguard/toolguard"
)

// Report is the outcome of an audit: the files read and the decisions of
// every episode.
type Report struct {
	Policy   string // how the policy was chosen: "default", "preset NAME", "file PATH"
	Files    []FileResult
	Episodes []EpisodeResult
}

// FileResult is one input file.
type FileResult struct {
	File     string
	Format   Format // 0 when the file could not be read
	Episodes int
	Calls    int
	Err      error // why the file was not audited; nil when it was
}

// EpisodeResult is one replayed episode.
type EpisodeResult struct {
	File      string
	Episode   string
	Label     string
	Decisions []Decision
}

// FromFirstFiring returns the number of calls from the first firing to
// the end of the episode, that firing included; 0 when nothing fired.
func (e *EpisodeResult) FromFirstFiring() int {
	if d, ok := e.First(); ok {
		return len(e.Decisions) - d.Index + 1
	}
	return 0
}

// First returns the first decision that fired, and false when none did.
func (e *EpisodeResult) First() (Decision, bool) {
	for _, d := range e.Decisions {
		if d.Fired() {
			return d, true
		}
	}
	return Decision{}, false
}

// Count returns how many decisions have verdict v.
func (e *EpisodeResult) Count(v toolguard.Verdict) int {
	n := 0
	for _, d := range e.Decisions {
		if d.Verdict == v {
			n++
		}
	}
	return n
}

// Reached reports whether some decision has verdict v or, for Hint, a
// stronger one (Abort).
func (e *EpisodeResult) Reached(v toolguard.Verdict) bool {
	for _, d := range e.Decisions {
		if d.Verdict >= v {
			return true
		}
	}
	return false
}

// MaxPhase returns the furthest phase the episode reached.
func (e *EpisodeResult) MaxPhase() toolguard.Phase {
	p := toolguard.PhaseNormal
	for _, d := range e.Decisions {
		p = max(p, d.Phase)
	}
	return p
}

// Add replays the episodes of one parsed file under p and appends them.
func (r *Report) Add(p toolguard.Policy, file string, format Format, eps []Episode) {
	fr := FileResult{File: file, Format: format, Episodes: len(eps)}
	for i := range eps {
		ep := &eps[i]
		fr.Calls += len(ep.Calls)
		r.Episodes = append(r.Episodes, EpisodeResult{
			File: ep.File, Episode: ep.Name, Label: ep.Label,
			Decisions: Replay(p, ep),
		})
	}
	r.Files = append(r.Files, fr)
}

// Summary is the aggregate of a Report.
type Summary struct {
	Files       int
	FailedFiles int
	Episodes    int
	Calls       int
	WithFiring  int // episodes with a hint or an abort
	WithHint    int // episodes with a hint
	WithAbort   int // episodes with an abort
	// ReachedPhase counts the episodes whose furthest phase is at least
	// the index: [PhaseNudge], [PhaseWindDown], [PhaseExhausted].
	ReachedPhase [4]int
	ByReason     []ReasonCount // reasons that fired, in Reason order
	ByLabel      []LabelCount  // labels in sorted order; empty when no episode has one
	// Outcomes measures the firings against the labels success and
	// failure; nil when no episode has either.
	Outcomes *Outcomes
}

// Outcomes is what the firings would have meant for episodes whose outcome
// is known. A refusal is a hint or an abort: the call was not executed.
type Outcomes struct {
	Successes   int // episodes labelled success
	FalseAlarms int // successful episodes with a refusal
	Failures    int // episodes labelled failure
	Stopped     int // failed episodes with a refusal
	// FailureCalls is the number of calls of the failed episodes, and
	// SavedCalls those of them from the first refused call of their episode
	// to its end: what stopping at the first refusal would have saved.
	FailureCalls int
	SavedCalls   int
}

// SavedShare is SavedCalls / FailureCalls, 0 when there is no such call.
func (o Outcomes) SavedShare() float64 {
	if o.FailureCalls == 0 {
		return 0
	}
	return float64(o.SavedCalls) / float64(o.FailureCalls)
}

// ReasonCount is how often one rule fired.
type ReasonCount struct {
	Reason   toolguard.Reason
	Hints    int
	Aborts   int
	Episodes int // episodes in which it fired at least once
}

// LabelCount is the share of one label.
type LabelCount struct {
	Label      string
	Episodes   int
	Calls      int
	WithFiring int
	WithAbort  int
	// FromFirstFiring counts the calls from the first firing of each
	// episode to its end (the calls a stop at the first refusal saves).
	FromFirstFiring int
}

// Summary aggregates the report.
func (r *Report) Summary() Summary {
	s := Summary{Files: len(r.Files), Episodes: len(r.Episodes)}
	for _, f := range r.Files {
		if f.Err != nil {
			s.FailedFiles++
		}
	}
	reasons := map[toolguard.Reason]*ReasonCount{}
	labels := map[string]*LabelCount{}
	for i := range r.Episodes {
		e := &r.Episodes[i]
		s.Calls += len(e.Decisions)
		fired := e.Reached(toolguard.Hint)
		aborted := e.Reached(toolguard.Abort)
		if fired {
			s.WithFiring++
		}
		if e.Count(toolguard.Hint) > 0 {
			s.WithHint++
		}
		if aborted {
			s.WithAbort++
		}
		for ph := toolguard.PhaseNudge; ph <= toolguard.PhaseExhausted; ph++ {
			if e.MaxPhase() >= ph {
				s.ReachedPhase[ph]++
			}
		}
		seen := map[toolguard.Reason]bool{}
		for _, d := range e.Decisions {
			if !d.Fired() {
				continue
			}
			rc := reasons[d.Reason]
			if rc == nil {
				rc = &ReasonCount{Reason: d.Reason}
				reasons[d.Reason] = rc
			}
			if d.Verdict == toolguard.Hint {
				rc.Hints++
			} else {
				rc.Aborts++
			}
			if !seen[d.Reason] {
				seen[d.Reason] = true
				rc.Episodes++
			}
		}
		if e.Label != "" {
			lc := labels[e.Label]
			if lc == nil {
				lc = &LabelCount{Label: e.Label}
				labels[e.Label] = lc
			}
			lc.Episodes++
			lc.Calls += len(e.Decisions)
			if fired {
				lc.WithFiring++
			}
			if aborted {
				lc.WithAbort++
			}
			lc.FromFirstFiring += e.FromFirstFiring()
		}
	}
	for _, rc := range reasons {
		s.ByReason = append(s.ByReason, *rc)
	}
	sort.Slice(s.ByReason, func(i, j int) bool { return s.ByReason[i].Reason < s.ByReason[j].Reason })
	for _, lc := range labels {
		s.ByLabel = append(s.ByLabel, *lc)
	}
	sort.Slice(s.ByLabel, func(i, j int) bool { return s.ByLabel[i].Label < s.ByLabel[j].Label })
	succ, fail := labels["success"], labels["failure"]
	if succ != nil || fail != nil {
		s.Outcomes = &Outcomes{}
	}
	if succ != nil {
		s.Outcomes.Successes, s.Outcomes.FalseAlarms = succ.Episodes, succ.WithFiring
	}
	if fail != nil {
		s.Outcomes.Failures, s.Outcomes.Stopped = fail.Episodes, fail.WithFiring
		s.Outcomes.FailureCalls, s.Outcomes.SavedCalls = fail.Calls, fail.FromFirstFiring
	}
	return s
}
