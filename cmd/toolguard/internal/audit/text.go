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
	fmt.Fprintln(tw, "FILE\tEPISODE\tLABEL\tCALLS\tFIRST FIRING")
	for i := range r.Episodes {
		e := &r.Episodes[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", printable(e.File), printable(clipMiddle(e.Episode, 48)), printable(orDash(e.Label)), e.Calls(), firstFiring(e))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	s := r.Summary()
	fmt.Fprintf(tw, "\nSummary (policy: %s)\n", printable(r.Policy))
	fmt.Fprintf(tw, "  files\t%d (%d not read)\n", s.Files, s.FailedFiles)
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
	if o := s.Outcomes; o != nil {
		fmt.Fprintln(tw, "\nAgainst the labels (a refusal is a hint or an abort)")
		fmt.Fprintf(tw, "  false alarms on successes\t%s with a refusal\n", ofN(o.FalseAlarms, o.Successes, "successful episodes"))
		fmt.Fprintf(tw, "  failures stopped\t%s with a refusal\n", ofN(o.Stopped, o.Failures, "failed episodes"))
		fmt.Fprintf(tw, "  calls saved on failed episodes\t%s from the first refusal on\n", ofN(o.SavedCalls, o.FailureCalls, "calls"))
	}
	return tw.Flush()
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
