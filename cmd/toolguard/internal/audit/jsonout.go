package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/toolguard/toolguard"
)

// The JSON report. Field names are snake_case and stable; docs/audit.md
// documents them. No arguments or results are written.
type (
	jsonReport struct {
		Policy   string        `json:"policy"`
		Files    []jsonFile    `json:"files"`
		Episodes []jsonEpisode `json:"episodes"`
		Summary  jsonSummary   `json:"summary"`
	}
	jsonFile struct {
		File     string   `json:"file"`
		Format   string   `json:"format"`
		Episodes int      `json:"episodes"`
		Calls    int      `json:"calls"`
		Error    string   `json:"error"`
		Skipped  string   `json:"skipped,omitempty"`
		NoCalls  string   `json:"no_calls,omitempty"`
		Warnings []string `json:"warnings,omitempty"`
	}
	jsonEpisode struct {
		File        string            `json:"file"`
		Project     string            `json:"project"`
		Episode     string            `json:"episode"`
		Label       string            `json:"label"`
		Calls       int               `json:"calls"`
		Firings     int               `json:"firings"`
		Cost        jsonEpisodeCost   `json:"cost"`
		FirstFiring *int              `json:"first_firing"`
		Verdict     toolguard.Verdict `json:"verdict"`
		Phase       toolguard.Phase   `json:"phase"`
		Title       string            `json:"title"`
		Looks       Looks             `json:"looks"`
		NothingNew  int               `json:"refused_nothing_new"`
		NewResults  int               `json:"refused_new_result"`
		Compare     []jsonCompared    `json:"compare,omitempty"`
	}
	jsonCompared struct {
		Policy  string `json:"policy"`
		Firings int    `json:"firings"`
		Aborts  int    `json:"aborts"`
		Looks   Looks  `json:"looks"`
	}
	jsonPolicyRow struct {
		Policy     string `json:"policy"`
		WithFiring int    `json:"episodes_with_firing"`
		WithAbort  int    `json:"episodes_with_abort"`
		Refused    int    `json:"refused_calls"`
		Loops      int    `json:"episodes_like_a_loop"`
		Work       int    `json:"episodes_like_work"`
	}
	jsonDecision struct {
		File    string            `json:"file"`
		Episode string            `json:"episode"`
		Label   string            `json:"label"`
		Index   int               `json:"index"`
		Round   int               `json:"round"`
		Turn    int               `json:"turn"`
		Tool    string            `json:"tool"`
		CallID  string            `json:"call_id"`
		Failed  bool              `json:"failed"`
		Verdict toolguard.Verdict `json:"verdict"`
		Reason  toolguard.Reason  `json:"reason"`
		Phase   toolguard.Phase   `json:"phase"`
		Message string            `json:"message"`
		Line    int               `json:"line"`
		// For a refused call only.
		Args    string `json:"args_preview,omitempty"`
		Result  string `json:"result_preview,omitempty"`
		Setting string `json:"setting,omitempty"`
		New     string `json:"result_was,omitempty"` // Newness
	}
	jsonSummary struct {
		Files              int              `json:"files"`
		FilesNotRead       int              `json:"files_not_read"`
		Episodes           int              `json:"episodes"`
		Calls              int              `json:"calls"`
		EpisodesWithFiring int              `json:"episodes_with_firing"`
		EpisodesWithHint   int              `json:"episodes_with_hint"`
		EpisodesWithAbort  int              `json:"episodes_with_abort"`
		EpisodesReaching   map[string]int   `json:"episodes_reaching_phase"`
		FiringsByReason    []jsonReasonRow  `json:"firings_by_reason"`
		ByLabel            []jsonLabelCount `json:"by_label"`
		Outcomes           *jsonOutcomes    `json:"outcomes"`
		FilesSkipped       int              `json:"files_skipped"`
		FilesWithoutCalls  int              `json:"files_without_calls"`
		RefusedCalls       int              `json:"refused_calls"`
		RefusedByTool      []jsonToolCount  `json:"refused_by_tool"`
		ByProject          []jsonProject    `json:"by_project"`
		WorstEpisodes      []jsonWorst      `json:"worst_episodes"`
		Cost               jsonCost         `json:"cost"`
		Policies           []jsonPolicyRow  `json:"policies"`
	}
	jsonEpisodeCost struct {
		Unit      string `json:"unit"` // "tokens" or "characters"
		Total     int    `json:"total"`
		Refused   int    `json:"refused"`
		FromFirst int    `json:"from_first_refusal"`
	}
	jsonToolCount struct {
		Tool   string `json:"tool"`
		Hints  int    `json:"hints"`
		Aborts int    `json:"aborts"`
	}
	jsonCostCount struct {
		Episodes  int `json:"episodes"`
		Total     int `json:"total"`
		Refused   int `json:"refused"`
		FromFirst int `json:"from_first_refusal"`
	}
	jsonCost struct {
		Tokens     jsonCostCount `json:"tokens"`
		Characters jsonCostCount `json:"characters"`
	}
	jsonProject struct {
		Project    string   `json:"project"`
		Episodes   int      `json:"episodes"`
		Calls      int      `json:"calls"`
		Refused    int      `json:"refused_calls"`
		WithFiring int      `json:"episodes_with_firing"`
		WithAbort  int      `json:"episodes_with_abort"`
		Cost       jsonCost `json:"cost"`
	}
	jsonWorst struct {
		File        string            `json:"file"`
		Episode     string            `json:"episode"`
		Refused     int               `json:"refused_calls"`
		FirstFiring int               `json:"first_firing"`
		Tool        string            `json:"tool"`
		Reason      toolguard.Reason  `json:"reason"`
		Verdict     toolguard.Verdict `json:"verdict"`
	}
	jsonOutcomes struct {
		Successes         int     `json:"successes"`
		FalseAlarms       int     `json:"false_alarms"`
		LossyFalseAlarms  int     `json:"lossy_false_alarms"`
		Failures          int     `json:"failures"`
		FailuresStopped   int     `json:"failures_stopped"`
		FailureCalls      int     `json:"failure_calls"`
		FailureCallsSaved int     `json:"failure_calls_saved"`
		SavedShare        float64 `json:"failure_calls_saved_share"`
	}
	jsonReasonRow struct {
		Reason   toolguard.Reason `json:"reason"`
		Hints    int              `json:"hints"`
		Aborts   int              `json:"aborts"`
		Episodes int              `json:"episodes"`
	}
	jsonLabelCount struct {
		Label      string `json:"label"`
		Episodes   int    `json:"episodes"`
		Calls      int    `json:"calls"`
		WithFiring int    `json:"episodes_with_firing"`
		WithAbort  int    `json:"episodes_with_abort"`
		// FirstNew: episodes whose first refused call would have returned
		// something new to its user turn.
		FirstNew int `json:"episodes_first_refusal_new"`
		// FromFirstFiring: calls from the first firing of each episode on.
		FromFirstFiring int `json:"calls_from_first_firing"`
	}
)

// newString is a refused call's Newness; "" for an allowed call.
func newString(d Decision) string {
	if !d.Fired() {
		return ""
	}
	return d.New.String()
}

func episodeCost(st *EpisodeStats) jsonEpisodeCost {
	unit := "characters"
	if st.Tokens {
		unit = "tokens"
	}
	return jsonEpisodeCost{Unit: unit, Total: st.Cost, Refused: st.RefusedCost, FromFirst: st.FromFirstCost}
}

// WriteJSON writes the report as one indented JSON document: the files,
// the episodes, every decision and the summary.
func WriteJSON(w io.Writer, r *Report) error {
	out := jsonReport{
		Policy:   r.Policy,
		Files:    make([]jsonFile, 0, len(r.Files)),
		Episodes: make([]jsonEpisode, 0, len(r.Episodes)),
	}
	for _, f := range r.Files {
		jf := jsonFile{File: f.File, Episodes: f.Episodes, Calls: f.Calls, Skipped: f.Skipped, NoCalls: f.NoCalls, Warnings: f.Warnings}
		if f.Format != 0 {
			jf.Format = f.Format.String()
		}
		if f.Err != nil && f.Skipped == "" {
			jf.Error = f.Err.Error()
		}
		out.Files = append(out.Files, jf)
	}
	for i := range r.Episodes {
		e := &r.Episodes[i]
		je := jsonEpisode{
			File: e.File, Project: e.Project, Episode: e.Episode, Label: e.Label, Calls: e.Calls(),
			Cost:    episodeCost(e.stats()),
			Firings: e.Count(toolguard.Hint) + e.Count(toolguard.Abort),
			Phase:   e.MaxPhase(),
			Title:   e.Title(), Looks: e.Looks(),
			NothingNew: e.stats().NothingNew, NewResults: e.stats().NewResults,
		}
		for j, t := range e.Compare {
			if j < len(r.Compare) {
				je.Compare = append(je.Compare, jsonCompared{Policy: r.Compare[j], Firings: t.Refused(), Aborts: t.Aborts, Looks: t.Looks()})
			}
		}
		if d, ok := e.First(); ok {
			idx := d.Index
			je.FirstFiring = &idx
		}
		switch {
		case e.Count(toolguard.Abort) > 0:
			je.Verdict = toolguard.Abort
		case e.Count(toolguard.Hint) > 0:
			je.Verdict = toolguard.Hint
		}
		out.Episodes = append(out.Episodes, je)
	}
	s := r.Summary()
	out.Summary = jsonSummary{
		Files: s.Files, FilesNotRead: s.FailedFiles, Episodes: s.Episodes, Calls: s.Calls,
		EpisodesWithFiring: s.WithFiring, EpisodesWithHint: s.WithHint, EpisodesWithAbort: s.WithAbort,
		EpisodesReaching: map[string]int{},
		FiringsByReason:  make([]jsonReasonRow, 0, len(s.ByReason)),
		ByLabel:          make([]jsonLabelCount, 0, len(s.ByLabel)),
	}
	out.Summary.FilesSkipped, out.Summary.RefusedCalls = s.Skipped, s.Refused
	out.Summary.FilesWithoutCalls = s.NoCalls
	out.Summary.RefusedByTool = make([]jsonToolCount, 0, len(s.ByTool))
	for _, tc := range s.ByTool {
		out.Summary.RefusedByTool = append(out.Summary.RefusedByTool, jsonToolCount(tc))
	}
	out.Summary.ByProject = make([]jsonProject, 0, len(s.ByProject))
	for _, pc := range s.ByProject {
		out.Summary.ByProject = append(out.Summary.ByProject, jsonProject{
			Project: pc.Project, Episodes: pc.Episodes, Calls: pc.Calls, Refused: pc.Refused,
			WithFiring: pc.WithFiring, WithAbort: pc.WithAbort,
			Cost: jsonCost{Tokens: jsonCostCount(pc.Tokens), Characters: jsonCostCount(pc.Chars)},
		})
	}
	out.Summary.WorstEpisodes = make([]jsonWorst, 0, len(s.Worst))
	for _, e := range s.Worst {
		d, _ := e.First()
		out.Summary.WorstEpisodes = append(out.Summary.WorstEpisodes, jsonWorst{
			File: e.File, Episode: e.Episode, Refused: e.Refused(),
			FirstFiring: d.Index, Tool: d.Tool, Reason: d.Reason, Verdict: d.Verdict,
		})
	}
	out.Summary.Cost = jsonCost{Tokens: jsonCostCount(s.Tokens), Characters: jsonCostCount(s.Chars)}
	for _, pr := range r.Policies() {
		out.Summary.Policies = append(out.Summary.Policies, jsonPolicyRow(pr))
	}
	for ph := toolguard.PhaseNudge; ph <= toolguard.PhaseExhausted; ph++ {
		out.Summary.EpisodesReaching[ph.String()] = s.ReachedPhase[ph]
	}
	for _, rc := range s.ByReason {
		out.Summary.FiringsByReason = append(out.Summary.FiringsByReason, jsonReasonRow(rc))
	}
	for _, lc := range s.ByLabel {
		out.Summary.ByLabel = append(out.Summary.ByLabel, jsonLabelCount(lc))
	}
	if o := s.Outcomes; o != nil {
		out.Summary.Outcomes = &jsonOutcomes{
			Successes: o.Successes, FalseAlarms: o.FalseAlarms, LossyFalseAlarms: o.LossyFalseAlarms,
			Failures: o.Failures, FailuresStopped: o.Stopped,
			FailureCalls: o.FailureCalls, FailureCallsSaved: o.SavedCalls, SavedShare: o.SavedShare(),
		}
	}
	// The decisions are written one by one, not built into one value: a
	// report of millions of calls is not held twice in memory.
	bw := bufio.NewWriter(w)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	value := func(prefix string, v any) []byte {
		buf.Reset()
		enc.SetIndent(prefix, "  ")
		if err := enc.Encode(v); err != nil {
			return []byte("null")
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	field := func(key string, v any) {
		fmt.Fprintf(bw, "  %q: ", key)
		bw.Write(value("  ", v))
		bw.WriteString(",\n")
	}
	bw.WriteString("{\n")
	field("policy", out.Policy)
	field("files", out.Files)
	field("episodes", out.Episodes)
	bw.WriteString(`  "decisions": [`)
	n := 0
	for i := range r.Episodes {
		e := &r.Episodes[i]
		for _, d := range e.Decisions {
			if n > 0 {
				bw.WriteString(",")
			}
			n++
			bw.WriteString("\n    ")
			bw.Write(value("    ", jsonDecision{
				File: e.File, Episode: e.Episode, Label: e.Label,
				Index: d.Index, Round: d.Round, Turn: d.Turn, Tool: d.Tool, CallID: d.CallID,
				Failed: d.Failed, Verdict: d.Verdict, Reason: d.Reason, Phase: d.Phase, Message: d.Message,
				Line: d.Line, Args: d.Args, Result: d.Result, Setting: d.Setting, New: newString(d),
			}))
		}
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n")
	fmt.Fprintf(bw, "  %q: ", "summary")
	bw.Write(value("  ", out.Summary))
	bw.WriteString("\n}\n")
	return bw.Flush()
}
