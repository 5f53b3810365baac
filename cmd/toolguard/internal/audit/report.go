package audit

import (
	"slices"
	"sort"
	"strings"

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
	// Compare names the policies of --compare, in the order of each
	// EpisodeResult.Compare.
	Compare []string
	// agg, for the text report's run, gathers the episodes instead of
	// Episodes (which it leaves empty): what the report needs of them.
	agg *aggregate
}

// PolicyRow is what one policy amounts to over every episode.
type PolicyRow struct {
	Policy     string
	WithFiring int // episodes with a hint or an abort
	WithAbort  int
	Refused    int // calls refused
	Loops      int // episodes whose firings look like a loop
	Work       int // episodes whose firings look like work (false alarms)
}

func (pr *PolicyRow) add(t Tally) {
	if t.Refused() > 0 {
		pr.WithFiring++
	}
	if t.Aborts > 0 {
		pr.WithAbort++
	}
	pr.Refused += t.Refused()
	switch t.Looks() {
	case LooksLoop:
		pr.Loops++
	case LooksWork:
		pr.Work++
	}
}

// Policies returns one row for the report's policy and one for each
// policy of --compare.
func (r *Report) Policies() []PolicyRow {
	a := r.aggregate(false)
	rows := slices.Clone(a.rows)
	rows[0].Policy = r.Policy
	for i, name := range r.Compare {
		rows[i+1].Policy = name
	}
	// A compared policy that is the report's own is its row already.
	out := rows[:1]
	for _, row := range rows[1:] {
		if row.Policy != rows[0].Policy {
			out = append(out, row)
		}
	}
	return out
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
	// NoCalls, for a file read without finding a tool call, says what was
	// found instead ("1 assistant text blocks, 1 user messages"); such a
	// file is listed, not an error.
	NoCalls string
	// Warnings are what was read around (a truncated last line), one
	// sentence each with its line.
	Warnings []string
}

// EpisodeResult is one replayed episode. Its names are cut to
// maxNameBytes, its title and previews to a few hundred bytes: what it
// keeps is bounded whatever the input holds.
type EpisodeResult struct {
	File    string
	Project string // the episode's project; "" when unknown
	Episode string
	Label   string
	// title is the first user prompt as reports show it (Title): kept by
	// the JSON and HTML reports, and by the text report for the episodes
	// it details (see Firings).
	title string
	// Decisions holds every decision, in order, when the report keeps them
	// (the JSON and HTML reports); nil otherwise, where Stats holds what
	// the text report needs.
	Decisions []Decision
	// Stats is the episode's aggregate; nil means "derive it from
	// Decisions".
	Stats *EpisodeStats
	// Firings, when Decisions is nil, are the first MaxFirings decisions
	// that fired, without their message: what the text report details of
	// an episode. It details the first maxFiringEpisodes episodes that
	// fired, and only they keep Firings and title.
	Firings []Decision
	// Compare holds the episode's tally under each policy of --compare
	// after the first, in their order.
	Compare []Tally
}

// MaxFirings bounds EpisodeResult.Firings: the text report details that
// many per episode, and an episode keeps no more.
const MaxFirings = 3

// maxNameBytes bounds each name an episode keeps: its id, label and
// project, a tool's name, a call's id. An input may hold a name of any
// size; a longer one is cut and ends in "…".
const maxNameBytes = 256

// keepName returns s cut to maxNameBytes, in a string of its own: a
// substring would keep the whole text it was cut from alive.
func keepName(s string) string {
	if len(s) > maxNameBytes {
		s = strings.ToValidUTF8(s[:maxNameBytes], "") + "…"
	}
	return strings.Clone(s)
}

// Tally counts an episode's refused calls under one policy.
type Tally struct {
	Hints  int
	Aborts int
	// Refused calls by what they got when the agent ran them (Newness).
	NothingNew, NewResults int
}

// Refused returns the number of refused calls: hints and aborts.
func (t Tally) Refused() int { return t.Hints + t.Aborts }

// Firing names a refused call: what the text report's line and the
// summary's worst episodes print of an episode's first firing.
type Firing struct {
	Index   int // the call's position in the episode, 1-based; 0: none
	Tool    string
	Reason  toolguard.Reason
	Verdict toolguard.Verdict
}

// EpisodeStats is what one replayed episode amounts to.
type EpisodeStats struct {
	Tally
	Calls      int
	First      Firing // the first hint or abort; Index 0 when clean
	FirstAbort int    // the index of the first abort; 0 when none
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
		if d.Fired() || st.First.Index > 0 {
			st.FromFirstCost += cost
		}
		if !d.Fired() {
			continue
		}
		st.RefusedCost += cost
		switch d.New {
		case NothingNew:
			st.NothingNew++
		case NewResult:
			st.NewResults++
		}
		if reasons == nil {
			reasons, tools = map[toolguard.Reason]*ReasonCount{}, map[string]*ToolCount{}
		}
		rc, tc := reasons[d.Reason], tools[d.Tool]
		if rc == nil {
			rc = &ReasonCount{Reason: d.Reason, Episodes: 1}
			reasons[d.Reason] = rc
		}
		if tc == nil {
			tc = &ToolCount{Tool: keepName(d.Tool)}
			tools[d.Tool] = tc
		}
		if st.First.Index == 0 {
			st.First = Firing{Index: d.Index, Tool: tc.Tool, Reason: d.Reason, Verdict: d.Verdict}
			st.FirstNew = NewToTurn(calls, i)
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

// Looks is the lossy judgement of an episode's firings.
type Looks int

const (
	LooksClean   Looks = iota // nothing fired
	LooksUnclear              // the refused calls' results are not recorded, or as many were new as not
	LooksLoop                 // most refused calls got nothing new when the agent ran them
	LooksWork                 // most refused calls got something new: the firings may be false alarms
)

// String returns "clean", "unclear", "looks like a loop" or "looks like
// work".
func (l Looks) String() string {
	return [...]string{"clean", "unclear", "looks like a loop", "looks like work"}[l]
}

// class is a one-word name of l: "clean", "unclear", "loop", "work".
func (l Looks) class() string { return [...]string{"clean", "unclear", "loop", "work"}[l] }

// MarshalText makes Looks its String in JSON.
func (l Looks) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// Looks judges the firings: would the refused calls have returned
// something new? (Newness, counted in NothingNew and NewResults.)
func (t Tally) Looks() Looks {
	switch {
	case t.Refused() == 0:
		return LooksClean
	case t.NothingNew > t.NewResults:
		return LooksLoop
	case t.NewResults > t.NothingNew:
		return LooksWork
	}
	return LooksUnclear
}

// firings returns the decisions that fired: from Decisions when kept,
// from Firings (the first MaxFirings) otherwise.
func (e *EpisodeResult) firings() []Decision {
	if e.Decisions == nil {
		return e.Firings
	}
	var out []Decision
	for _, d := range e.Decisions {
		if d.Fired() {
			out = append(out, d)
		}
	}
	return out
}

// Looks judges the episode's firings (EpisodeStats.Looks).
func (e *EpisodeResult) Looks() Looks { return e.stats().Looks() }

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
func (e *EpisodeResult) First() (Firing, bool) {
	f := e.stats().First
	return f, f.Index > 0
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
	return replayDetailed(p, ep, keep, true)
}

// replayDetailed is replayEpisode; without detail, an episode that fired
// keeps no title nor firings for the text report (which details only the
// first sessions that fired).
func replayDetailed(p toolguard.Policy, ep *Episode, keep, detail bool) EpisodeResult {
	var ds []Decision
	if keep {
		ds = Replay(p, ep)
	} else {
		ds = decide(p, ep)
	}
	res := EpisodeResult{
		File: ep.File, Project: keepName(ep.Project), Episode: keepName(ep.Name), Label: keepName(ep.Label),
		Stats: NewEpisodeStats(ds, ep.Calls, ep.Tokens),
	}
	if keep {
		res.Decisions = ds
		res.title = preview(ep.Title, titleRunes)
		return res
	}
	// The text report details an episode that fired: its title and first
	// firings, without their message (the model's text, which it does not
	// print). The collector drops them past the episodes it details.
	if res.Stats.First.Index == 0 || !detail {
		return res
	}
	res.title = preview(ep.Title, titleRunes)
	for _, d := range ds {
		if d.Fired() && len(res.Firings) < MaxFirings {
			describe(&p, ep, &d)
			d.Message, d.Tool, d.CallID = "", keepName(d.Tool), keepName(d.CallID)
			res.Firings = append(res.Firings, d)
		}
	}
	return res
}

// Summary is the aggregate of a Report.
type Summary struct {
	Files       int
	FailedFiles int
	Skipped     int // files in folders that hold no transcript
	NoCalls     int // files read without finding a tool call
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

// addWorst puts e among worst, the episodes with the most refused calls
// (most first, in input order among equals), which it keeps to
// WorstEpisodes.
func addWorst(worst []*EpisodeResult, e *EpisodeResult) []*EpisodeResult {
	i := len(worst)
	for i > 0 && worst[i-1].Refused() < e.Refused() {
		i--
	}
	if i == WorstEpisodes {
		return worst
	}
	worst = slices.Insert(worst, i, e)
	return worst[:min(len(worst), WorstEpisodes)]
}

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
	s := r.aggregate(false).summary()
	s.Files = len(r.Files)
	for _, f := range r.Files {
		switch {
		case f.Skipped != "":
			s.Skipped++
		case f.NoCalls != "":
			s.NoCalls++
		case f.Err != nil:
			s.FailedFiles++
		}
	}
	return s
}

// reached reports whether some episode has a decision with verdict v or,
// for Hint, a stronger one (Abort).
func (r *Report) reached(v toolguard.Verdict) bool {
	s := &r.aggregate(false).s
	switch v {
	case toolguard.Hint:
		return s.WithFiring > 0
	case toolguard.Abort:
		return s.WithAbort > 0
	}
	return s.Episodes > 0
}

// release removes what the report keeps on disk (the text report's
// episode lines wait in a temporary file).
func (r *Report) release() {
	if r.agg != nil {
		r.agg.close()
	}
}
