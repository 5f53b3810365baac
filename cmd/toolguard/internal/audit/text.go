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
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if r.Lines != "none" {
		fmt.Fprintln(tw, "FILE\tEPISODE\tLABEL\tCALLS\tFIRST FIRING")
	}
	for i := range r.Episodes {
		e := &r.Episodes[i]
		if r.Lines == "none" || (r.Lines == "fired" && !e.Reached(toolguard.Hint)) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", printable(e.File), printable(clipMiddle(e.Episode, 48)), printable(orDash(e.Label)), e.Calls(), firstFiring(e))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	s := r.Summary()
	if r.Lines != "none" {
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "Summary (policy: %s)\n", printable(r.Policy))
	skipped := ""
	if s.Skipped > 0 {
		skipped = fmt.Sprintf(", %d skipped: not transcripts", s.Skipped)
	}
	fmt.Fprintf(tw, "  files\t%d (%d not read%s)\n", s.Files, s.FailedFiles, skipped)
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
	if o := s.Outcomes; o != nil {
		fmt.Fprintln(tw, "\nAgainst the labels (a refusal is a hint or an abort)")
		fmt.Fprintf(tw, "  false alarms on successes\t%s with a refusal\n", ofN(o.FalseAlarms, o.Successes, "successful episodes"))
		fmt.Fprintf(tw, "  lossy false alarms\t%s whose first refused call would have returned something new\n", ofN(o.LossyFalseAlarms, o.Successes, "successful episodes"))
		fmt.Fprintf(tw, "  failures stopped\t%s with a refusal\n", ofN(o.Stopped, o.Failures, "failed episodes"))
		fmt.Fprintf(tw, "  calls saved on failed episodes\t%s from the first refusal on\n", ofN(o.SavedCalls, o.FailureCalls, "calls"))
	}
	return tw.Flush()
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
