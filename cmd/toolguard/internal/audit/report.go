package audit

import (
	"sort"

	"github.com/toolguard/toolguard"
)

// Report is the outcome of an audit: the files read and the decisions of
// every episode.
type Report struct {
	Policy string // how the policy was chosen: "default", "preset NAME", "file PATH"
	// Lines is which episodes the text report lists one per line: "" or
	// "all", "fired" (those with a hint or an abort), "none".
	Lines    string
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
	// Skipped says why a file found in a folder was passed over (it holds
	// no transcript); "" for a file that was read.
	Skipped string
}

// EpisodeResult is one replayed episode.
type EpisodeResult struct {
	File    string
	Project string // the episode's project; "" when unknown
	Episode string
	Label   string
	// Decisions holds every decision, in order, when the report keeps them
	// (the JSON and HTML reports); nil otherwise, where Stats holds what
	// the text report needs.
	Decisions []Decision
	// Stats is the episode's aggregate; nil means "derive it from
	// Decisions".
	Stats *EpisodeStats
}

// EpisodeStats is what one replayed episode amounts to.
type EpisodeStats struct {
	Calls      int
	Hints      int
	Aborts     int
	First      *Decision // the first hint or abort; nil when clean
	FirstAbort int       // the index of the first abort; 0 when none
	Phase      toolguard.Phase
	ByReason   []ReasonCount // the reasons that fired, in Reason order
	ByTool     []ToolCount   // the tools refused, by name
	// Costs: tokens when Tokens, characters otherwise (Call.Cost).
	Tokens        bool
	Cost          int // every result
	RefusedCost   int // the results of the refused calls
	FromFirstCost int // the results from the first refusal to the end
	// FirstNew is set when the first refused call's recorded result was
	// new to its user turn (see [NewToTurn]): stopping there cost the
	// agent information. Unknown (false) when calls is nil.
	FirstNew bool
}

// NewToTurn reports whether calls[i] returned something new to its user
// turn: no earlier call of the same user turn returned the same result
// (failure flag and text). A refusal of such a call in a successful
// episode is a lossy false alarm.
func NewToTurn(calls []Call, i int) bool {
	if i < 0 || i >= len(calls) {
		return false
	}
	c := &calls[i]
	for j := i - 1; j >= 0 && calls[j].Turn == c.Turn; j-- {
		if calls[j].Failed == c.Failed && calls[j].Result == c.Result {
			return false
		}
	}
	return true
}

// ToolCount is how often the calls of one tool were refused.
type ToolCount struct {
	Tool   string
	Hints  int
	Aborts int
}

// NewEpisodeStats aggregates the decisions ds of the calls (calls may be
// nil when only the decisions are known: the costs are then 0).
func NewEpisodeStats(ds []Decision, calls []Call, tokens bool) *EpisodeStats {
	st := &EpisodeStats{Calls: len(ds), Tokens: tokens, Phase: toolguard.PhaseNormal}
	var (
		reasons map[toolguard.Reason]*ReasonCount
		tools   map[string]*ToolCount
	)
	for i := range ds {
		d := &ds[i]
		st.Phase = max(st.Phase, d.Phase)
		cost := 0
		if i < len(calls) {
			cost = calls[i].Cost
		}
		st.Cost += cost
		if st.First == nil && d.Fired() {
			first := *d
			st.First = &first
			st.FirstNew = NewToTurn(calls, i)
		}
		if st.First != nil {
			st.FromFirstCost += cost
		}
		if !d.Fired() {
			continue
		}
		st.RefusedCost += cost
		if reasons == nil {
			reasons, tools = map[toolguard.Reason]*ReasonCount{}, map[string]*ToolCount{}
		}
		rc, tc := reasons[d.Reason], tools[d.Tool]
		if rc == nil {
			rc = &ReasonCount{Reason: d.Reason, Episodes: 1}
			reasons[d.Reason] = rc
		}
		if tc == nil {
			tc = &ToolCount{Tool: d.Tool}
			tools[d.Tool] = tc
		}
		if d.Verdict == toolguard.Hint {
			st.Hints++
			rc.Hints++
			tc.Hints++
		} else {
			st.Aborts++
			rc.Aborts++
			tc.Aborts++
			if st.FirstAbort == 0 {
				st.FirstAbort = d.Index
			}
		}
	}
	for _, rc := range reasons {
		st.ByReason = append(st.ByReason, *rc)
	}
	sort.Slice(st.ByReason, func(i, j int) bool { return st.ByReason[i].Reason < st.ByReason[j].Reason })
	for _, tc := range tools {
		st.ByTool = append(st.ByTool, *tc)
	}
	sort.Slice(st.ByTool, func(i, j int) bool { return st.ByTool[i].Tool < st.ByTool[j].Tool })
	return st
}

// stats returns Stats, deriving it from Decisions when nil.
func (e *EpisodeResult) stats() *EpisodeStats {
	if e.Stats == nil {
		e.Stats = NewEpisodeStats(e.Decisions, nil, false)
	}
	return e.Stats
}

// Calls returns the number of recorded calls.
func (e *EpisodeResult) Calls() int { return e.stats().Calls }

// Refused returns the number of calls that got a hint or an abort.
func (e *EpisodeResult) Refused() int { s := e.stats(); return s.Hints + s.Aborts }

// FromFirstFiring returns the number of calls from the first firing to
// the end of the episode, that firing included; 0 when nothing fired.
func (e *EpisodeResult) FromFirstFiring() int {
	if d, ok := e.First(); ok {
		return e.Calls() - d.Index + 1
	}
	return 0
}

// First returns the first decision that fired, and false when none did.
func (e *EpisodeResult) First() (Decision, bool) {
	if f := e.stats().First; f != nil {
		return *f, true
	}
	return Decision{}, false
}

// Count returns how many decisions have verdict v.
func (e *EpisodeResult) Count(v toolguard.Verdict) int {
	s := e.stats()
	switch v {
	case toolguard.Hint:
		return s.Hints
	case toolguard.Abort:
		return s.Aborts
	}
	return s.Calls - s.Hints - s.Aborts
}

// Reached reports whether some decision has verdict v or, for Hint, a
// stronger one (Abort).
func (e *EpisodeResult) Reached(v toolguard.Verdict) bool {
	s := e.stats()
	switch v {
	case toolguard.Hint:
		return s.Hints+s.Aborts > 0
	case toolguard.Abort:
		return s.Aborts > 0
	}
	return s.Calls > 0
}

// MaxPhase returns the furthest phase the episode reached.
func (e *EpisodeResult) MaxPhase() toolguard.Phase { return e.stats().Phase }

// Add replays the episodes of one parsed file under p and appends them,
// with every decision.
func (r *Report) Add(p toolguard.Policy, file string, format Format, eps []Episode) {
	fr := FileResult{File: file, Format: format, Episodes: len(eps)}
	for i := range eps {
		ep := &eps[i]
		fr.Calls += len(ep.Calls)
		r.Episodes = append(r.Episodes, replayEpisode(p, ep, true))
	}
	r.Files = append(r.Files, fr)
}

// replayEpisode replays ep and aggregates it, keeping the decisions when
// keep is set.
func replayEpisode(p toolguard.Policy, ep *Episode, keep bool) EpisodeResult {
	ds := Replay(p, ep)
	res := EpisodeResult{
		File: ep.File, Project: ep.Project, Episode: ep.Name, Label: ep.Label,
		Stats: NewEpisodeStats(ds, ep.Calls, ep.Tokens),
	}
	if keep {
		res.Decisions = ds
	}
	return res
}

// Summary is the aggregate of a Report.
type Summary struct {
	Files       int
	FailedFiles int
	Skipped     int // files in folders that hold no transcript
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
	// Refused counts the calls that got a hint or an abort; ByTool splits
	// them by tool, most refused first.
	Refused int
	ByTool  []ToolCount
	// ByProject is the same per project, in name order; empty when no
	// episode has a project.
	ByProject []ProjectCount
	// Worst are the episodes with the most refused calls, most first (at
	// most WorstEpisodes).
	Worst []*EpisodeResult
	// Tokens sums the costs of the episodes whose transcript records
	// usage, Chars those of the others.
	Tokens, Chars CostCount
	// Outcomes measures the firings against the labels success and
	// failure; nil when no episode has either.
	Outcomes *Outcomes
}

// WorstEpisodes is how many episodes the summary names as the worst.
const WorstEpisodes = 10

// ProjectCount is one project's share.
type ProjectCount struct {
	Project    string
	Episodes   int
	Calls      int
	Refused    int
	WithFiring int
	WithAbort  int
	Tokens     CostCount
	Chars      CostCount
}

// CostCount sums the cost of results in one unit (tokens or characters).
type CostCount struct {
	Episodes  int // episodes measured in this unit
	Total     int // every result
	Refused   int // the results of refused calls
	FromFirst int // the results from each episode's first refusal to its end
}

func (c *CostCount) add(st *EpisodeStats) {
	c.Episodes++
	c.Total += st.Cost
	c.Refused += st.RefusedCost
	c.FromFirst += st.FromFirstCost
}

// Outcomes is what the firings would have meant for episodes whose outcome
// is known. A refusal is a hint or an abort: the call was not executed.
type Outcomes struct {
	Successes   int // episodes labelled success
	FalseAlarms int // successful episodes with a refusal
	// LossyFalseAlarms are the false alarms whose first refused call
	// would have returned something new to its user turn (NewToTurn).
	LossyFalseAlarms int
	Failures         int // episodes labelled failure
	Stopped          int // failed episodes with a refusal
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
	// FirstNew counts the episodes whose first refused call would have
	// returned something new to its user turn.
	FirstNew int
	// FromFirstFiring counts the calls from the first firing of each
	// episode to its end (the calls a stop at the first refusal saves).
	FromFirstFiring int
}

// Summary aggregates the report.
func (r *Report) Summary() Summary {
	s := Summary{Files: len(r.Files), Episodes: len(r.Episodes)}
	for _, f := range r.Files {
		switch {
		case f.Skipped != "":
			s.Skipped++
		case f.Err != nil:
			s.FailedFiles++
		}
	}
	reasons := map[toolguard.Reason]*ReasonCount{}
	labels := map[string]*LabelCount{}
	tools := map[string]*ToolCount{}
	projects := map[string]*ProjectCount{}
	for i := range r.Episodes {
		e := &r.Episodes[i]
		st := e.stats()
		s.Calls += st.Calls
		fired := st.First != nil
		aborted := st.Aborts > 0
		s.Refused += st.Hints + st.Aborts
		if fired {
			s.WithFiring++
			s.Worst = append(s.Worst, e)
		}
		if st.Hints > 0 {
			s.WithHint++
		}
		if aborted {
			s.WithAbort++
		}
		for ph := toolguard.PhaseNudge; ph <= toolguard.PhaseExhausted; ph++ {
			if st.Phase >= ph {
				s.ReachedPhase[ph]++
			}
		}
		for _, x := range st.ByReason {
			rc := reasons[x.Reason]
			if rc == nil {
				rc = &ReasonCount{Reason: x.Reason}
				reasons[x.Reason] = rc
			}
			rc.Hints += x.Hints
			rc.Aborts += x.Aborts
			rc.Episodes++
		}
		for _, x := range st.ByTool {
			tc := tools[x.Tool]
			if tc == nil {
				tc = &ToolCount{Tool: x.Tool}
				tools[x.Tool] = tc
			}
			tc.Hints += x.Hints
			tc.Aborts += x.Aborts
		}
		if st.Tokens {
			s.Tokens.add(st)
		} else {
			s.Chars.add(st)
		}
		if e.Project != "" {
			pc := projects[e.Project]
			if pc == nil {
				pc = &ProjectCount{Project: e.Project}
				projects[e.Project] = pc
			}
			pc.Episodes++
			pc.Calls += st.Calls
			pc.Refused += st.Hints + st.Aborts
			if fired {
				pc.WithFiring++
			}
			if aborted {
				pc.WithAbort++
			}
			if st.Tokens {
				pc.Tokens.add(st)
			} else {
				pc.Chars.add(st)
			}
		}
		if e.Label != "" {
			lc := labels[e.Label]
			if lc == nil {
				lc = &LabelCount{Label: e.Label}
				labels[e.Label] = lc
			}
			lc.Episodes++
			lc.Calls += st.Calls
			if fired {
				lc.WithFiring++
			}
			if aborted {
				lc.WithAbort++
			}
			lc.FromFirstFiring += e.FromFirstFiring()
			if st.FirstNew {
				lc.FirstNew++
			}
		}
	}
	for _, tc := range tools {
		s.ByTool = append(s.ByTool, *tc)
	}
	sort.Slice(s.ByTool, func(i, j int) bool {
		a, b := s.ByTool[i], s.ByTool[j]
		if a.Hints+a.Aborts != b.Hints+b.Aborts {
			return a.Hints+a.Aborts > b.Hints+b.Aborts
		}
		return a.Tool < b.Tool
	})
	for _, pc := range projects {
		s.ByProject = append(s.ByProject, *pc)
	}
	sort.Slice(s.ByProject, func(i, j int) bool { return s.ByProject[i].Project < s.ByProject[j].Project })
	sort.SliceStable(s.Worst, func(i, j int) bool { return s.Worst[i].Refused() > s.Worst[j].Refused() })
	if len(s.Worst) > WorstEpisodes {
		s.Worst = s.Worst[:WorstEpisodes]
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
		s.Outcomes.LossyFalseAlarms = succ.FirstNew
	}
	if fail != nil {
		s.Outcomes.Failures, s.Outcomes.Stopped = fail.Episodes, fail.WithFiring
		s.Outcomes.FailureCalls, s.Outcomes.SavedCalls = fail.Calls, fail.FromFirstFiring
	}
	return s
}
