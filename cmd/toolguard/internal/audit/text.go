package audit

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/toolguard/toolguard"
)

// WriteText writes one line per episode (its first firing, or "clean")
// and a summary table.
func WriteText(w io.Writer, r *Report) error {
	a := r.aggregate(true)
	if a != r.agg {
		defer a.close()
	}
	if r.Lines != "none" {
		if err := a.writeLines(w); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	s := r.Summary()
	if r.Lines != "none" {
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "Summary (policy: %s)\n", printable(r.Policy))
	extra := ""
	if s.NoCalls > 0 {
		extra += fmt.Sprintf(", %d without a tool call", s.NoCalls)
	}
	if s.Skipped > 0 {
		extra += fmt.Sprintf(", %d skipped: not transcripts", s.Skipped)
	}
	fmt.Fprintf(tw, "  files\t%d (%d not read%s)\n", s.Files, s.FailedFiles, extra)
	fmt.Fprintf(tw, "  episodes\t%d\n", s.Episodes)
	fmt.Fprintf(tw, "  calls\t%d\n", s.Calls)
	fmt.Fprintf(tw, "  episodes with a firing\t%d\n", s.WithFiring)
	fmt.Fprintf(tw, "  episodes with a hint\t%d\n", s.WithHint)
	fmt.Fprintf(tw, "  episodes with an abort\t%d\n", s.WithAbort)
	fmt.Fprintf(tw, "  episodes reaching nudge\t%d\n", s.ReachedPhase[toolguard.PhaseNudge])
	fmt.Fprintf(tw, "  episodes reaching wind_down\t%d\n", s.ReachedPhase[toolguard.PhaseWindDown])
	fmt.Fprintf(tw, "  episodes reaching exhausted\t%d\n", s.ReachedPhase[toolguard.PhaseExhausted])
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(tw, "\nFirings by reason")
	if len(s.ByReason) == 0 {
		fmt.Fprintln(tw, "  none")
	} else {
		fmt.Fprintln(tw, "  REASON\tHINTS\tABORTS\tEPISODES")
		for _, rc := range s.ByReason {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\n", rc.Reason, rc.Hints, rc.Aborts, rc.Episodes)
		}
	}
	if len(s.ByLabel) > 0 {
		fmt.Fprintln(tw, "\nBy label")
		fmt.Fprintln(tw, "  LABEL\tEPISODES\tCALLS\tWITH A FIRING\tWITH AN ABORT\tCALLS FROM FIRST FIRING")
		for _, lc := range s.ByLabel {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\n", printable(lc.Label), lc.Episodes, lc.Calls, lc.WithFiring, lc.WithAbort, lc.FromFirstFiring)
		}
	}
	writeTeamBlocks(tw, &s)
	if len(r.Compare) > 0 {
		fmt.Fprintln(tw, "\nPolicies side by side")
		fmt.Fprintln(tw, "  POLICY\tWITH A FIRING\tWITH AN ABORT\tREFUSED CALLS\tLOOKS LIKE A LOOP\tLOOKS LIKE WORK")
		for _, pr := range r.Policies() {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\n", printable(pr.Policy), pr.WithFiring, pr.WithAbort, pr.Refused, pr.Loops, pr.Work)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Lines != "none" {
		writeFirings(w, a)
	}
	writeFileBlocks(tw, r)
	if o := s.Outcomes; o != nil {
		fmt.Fprintln(tw, "\nAgainst the labels (a refusal is a hint or an abort)")
		fmt.Fprintf(tw, "  false alarms on successes\t%s with a refusal\n", ofN(o.FalseAlarms, o.Successes, "successful episodes"))
		fmt.Fprintf(tw, "  lossy false alarms\t%s whose first refused call would have returned something new\n", ofN(o.LossyFalseAlarms, o.Successes, "successful episodes"))
		fmt.Fprintf(tw, "  failures stopped\t%s with a refusal\n", ofN(o.Stopped, o.Failures, "failed episodes"))
		fmt.Fprintf(tw, "  calls saved on failed episodes\t%s from the first refusal on\n", ofN(o.SavedCalls, o.FailureCalls, "calls"))
	}
	return tw.Flush()
}

// Bounds of the firings the text report details.
const (
	maxFiringEpisodes = 20 // sessions
)

// writeFirings details the sessions that fired: title, file, the lossy
// verdict, and their first firings with the call's id and line, previews
// of its arguments and of what it got, and the setting that governs the
// rule.
func writeFirings(w io.Writer, a *aggregate) {
	fired := a.fired
	if fired == 0 {
		return
	}
	fmt.Fprintf(w, "\nFirings, by session (%d)\n", fired)
	for n := range a.detailed {
		e := &a.detailed[n]
		st := e.stats()
		fmt.Fprintf(w, "  %s: %s (%d refused; when the agent ran them, %d got nothing new, %d something new)\n",
			printable(e.Episode), e.Looks(), st.Hints+st.Aborts, st.NothingNew, st.NewResults)
		if t := e.Title(); t != "" {
			fmt.Fprintf(w, "    asked   %q\n", t)
		}
		fmt.Fprintf(w, "    file    %s\n", printable(e.File))
		for j, d := range e.firings() {
			if j == MaxFirings {
				fmt.Fprintf(w, "    … %d more firings\n", st.Hints+st.Aborts-j)
				break
			}
			fmt.Fprintf(w, "    call %d %s%s: %s, %s\n", d.Index, printable(d.Tool), where(d), d.Reason, d.Verdict)
			if d.Args != "" {
				fmt.Fprintf(w, "      args     %s\n", printable(d.Args))
			}
			fmt.Fprintf(w, "      got      %s (%s)\n", orDash(printable(d.Result)), d.New)
			fmt.Fprintf(w, "      setting  %s\n", printable(d.Setting))
		}
	}
	if n := len(a.detailed); fired > n {
		fmt.Fprintf(w, "  … %d more sessions (the JSON and HTML reports list them all)\n", fired-n)
	}
}

// where names a call's id and line: " (id X, line N)".
func where(d Decision) string {
	var parts []string
	if d.CallID != "" {
		parts = append(parts, "id "+clipMiddle(d.CallID, 32))
	}
	if d.Line > 0 {
		parts = append(parts, fmt.Sprintf("line %d", d.Line))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// maxFileRows bounds the lists of files in the text report.
const maxFileRows = 20

// writeFileBlocks lists the files read without a tool call and the files
// read around a problem, each with what was found.
func writeFileBlocks(tw *tabwriter.Writer, r *Report) {
	var none, warned []FileResult
	for _, f := range r.Files {
		if f.NoCalls != "" {
			none = append(none, f)
		}
		if len(f.Warnings) > 0 {
			warned = append(warned, f)
		}
	}
	list := func(title string, fs []FileResult, what func(FileResult) []string) {
		if len(fs) == 0 {
			return
		}
		fmt.Fprintf(tw, "\n%s (%d)\n", title, len(fs))
		for i, f := range fs {
			if i == maxFileRows {
				fmt.Fprintf(tw, "  … %d more files (the JSON report lists them all)\t\n", len(fs)-i)
				break
			}
			for _, w := range what(f) {
				fmt.Fprintf(tw, "  %s\t%s\n", printable(clipMiddle(f.File, 80)), printable(w))
			}
		}
	}
	list("Files without a tool call", none, func(f FileResult) []string { return []string{"found: " + f.NoCalls} })
	list("Files read with a warning", warned, func(f FileResult) []string { return f.Warnings })
}

// maxToolRows bounds the table of refused tools in the text report.
const maxToolRows = 15

// writeTeamBlocks writes what a team acts on: the refused calls by tool,
// the projects, the worst episodes and the cost of what was refused. Each
// block is left out when it has nothing to say.
func writeTeamBlocks(tw *tabwriter.Writer, s *Summary) {
	if len(s.ByTool) > 0 {
		fmt.Fprintf(tw, "\nRefused calls by tool (%d refused of %d calls)\n", s.Refused, s.Calls)
		fmt.Fprintln(tw, "  TOOL\tHINTS\tABORTS")
		for i, tc := range s.ByTool {
			if i == maxToolRows {
				fmt.Fprintf(tw, "  … %d more tools\t\t\n", len(s.ByTool)-i)
				break
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\n", printable(clipMiddle(tc.Tool, 48)), tc.Hints, tc.Aborts)
		}
	}
	if len(s.ByProject) > 0 {
		fmt.Fprintln(tw, "\nBy project")
		fmt.Fprintln(tw, "  PROJECT\tEPISODES\tCALLS\tREFUSED\tWITH A FIRING\tWITH AN ABORT\tCOST FROM FIRST REFUSAL")
		for _, pc := range s.ByProject {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%s\n", printable(clipMiddle(pc.Project, 60)), pc.Episodes, pc.Calls, pc.Refused, pc.WithFiring, pc.WithAbort, costShort(pc.Tokens, pc.Chars))
		}
	}
	if len(s.Worst) > 0 {
		fmt.Fprintln(tw, "\nWorst episodes (most refused calls)")
		fmt.Fprintln(tw, "  EPISODE\tFILE\tREFUSED\tFIRST FIRING")
		for _, e := range s.Worst {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", printable(clipMiddle(e.Episode, 48)), printable(clipMiddle(e.File, 60)), e.Refused(), firstFiring(e))
		}
	}
	if s.Refused > 0 {
		fmt.Fprintln(tw, "\nCost carried by the results (tokens where the transcript records usage, characters otherwise)")
		for _, c := range []struct {
			unit string
			cc   CostCount
		}{{"tokens", s.Tokens}, {"characters", s.Chars}} {
			if c.cc.Episodes == 0 {
				continue
			}
			fmt.Fprintf(tw, "  %s (%d episodes)\tof refused calls %d; from the first refusal on %s\n",
				c.unit, c.cc.Episodes, c.cc.Refused, ofN(c.cc.FromFirst, c.cc.Total, c.unit))
		}
	}
}

// costShort renders a project's cost from the first refusal on, in
// tokens and in characters where it has episodes of each.
func costShort(tokens, chars CostCount) string {
	var parts []string
	if tokens.Episodes > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", tokens.FromFirst))
	}
	if chars.Episodes > 0 {
		parts = append(parts, fmt.Sprintf("%d chars", chars.FromFirst))
	}
	return strings.Join(parts, ", ")
}

// ofN renders "3 of 40 failed episodes (7.5%)", without the share when n
// is 0.
func ofN(k, n int, what string) string {
	if n == 0 {
		return fmt.Sprintf("%d of %d %s", k, n, what)
	}
	return fmt.Sprintf("%d of %d %s (%.1f%%)", k, n, what, 100*float64(k)/float64(n))
}

// firstFiring describes the first firing of an episode: "call 4 click:
// duplicate, hint", with how many more followed and where the first abort
// was; "clean" when nothing fired.
func firstFiring(e *EpisodeResult) string {
	d, ok := e.First()
	if !ok {
		return "clean"
	}
	s := fmt.Sprintf("call %d %s: %s, %s", d.Index, printable(d.Tool), d.Reason, d.Verdict)
	more := e.Count(toolguard.Hint) + e.Count(toolguard.Abort) - 1
	var abort string
	if fa := e.stats().FirstAbort; d.Verdict != toolguard.Abort && fa > 0 {
		abort = fmt.Sprintf("first abort at call %d", fa)
	}
	switch {
	case more > 0 && abort != "":
		s += fmt.Sprintf(" (+%d more; %s)", more, abort)
	case more > 0:
		s += fmt.Sprintf(" (+%d more)", more)
	}
	return s
}

// clipMiddle shortens s to at most n runes, keeping its start and end.
func clipMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := (n - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// printable escapes control characters (terminal escapes, tabs, newlines)
// that names read from an input could hold.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
