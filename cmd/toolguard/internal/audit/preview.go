package audit

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolguard/toolguard"
)

// What a report shows of a call: short previews with the secrets they may
// hold replaced by [REDACTED] (toolguard.Redact). Arguments and results are
// kept whole only in memory, while their episode is replayed.

const (
	// maxTitleBytes bounds the title an episode keeps (Episode.Title).
	maxTitleBytes = 1024
	// titleRunes and previewRunes bound what a report shows.
	titleRunes   = 80
	previewRunes = 160
)

// titleOf returns the text that can title an episode: the user's words,
// not the markup a harness injects (a text starting with "<": commands,
// caveats, environment context), bounded to maxTitleBytes.
func titleOf(text string) string {
	t := strings.TrimSpace(text)
	if t == "" || t[0] == '<' {
		return ""
	}
	if len(t) > maxTitleBytes {
		t = strings.ToValidUTF8(t[:maxTitleBytes], "")
	}
	return t
}

// Title returns the episode's title for a report: its first user prompt,
// redacted, on one line, cut to 80 characters; "" when it has none.
func (e *EpisodeResult) Title() string { return preview(e.title, titleRunes) }

// preview returns s on one line, its secrets redacted, cut to n runes
// (with "…" when cut).
func preview(s string, n int) string {
	if s == "" {
		return ""
	}
	if len(s) > 8*n {
		s = strings.ToValidUTF8(s[:8*n], "")
	}
	s = strings.Join(strings.Fields(s), " ")
	s = toolguard.Redact(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// setting names what in the policy governs a firing of reason for tool:
// the Policy field, with the value the policy sets ("default" when it
// leaves it to the default), and the per-tool way out.
func setting(p *toolguard.Policy, reason toolguard.Reason, tool string) string {
	val := func(v int) string {
		if v == 0 {
			return "default"
		}
		return fmt.Sprint(v)
	}
	perTool := fmt.Sprintf("Tools[%q]", tool)
	switch reason {
	case toolguard.ReasonDuplicate:
		return fmt.Sprintf("MaxRepeats (%s); per tool %s.MaxRepeats, or .Exempt for a polling tool", val(p.MaxRepeats), perTool)
	case toolguard.ReasonSimilarQuery:
		th := "default"
		if p.SimilarityThreshold != 0 {
			th = fmt.Sprint(p.SimilarityThreshold)
		}
		return fmt.Sprintf("SimilarityThreshold (%s); per tool %s.NoSearch takes the tool out of the check", th, perTool)
	case toolguard.ReasonRepeatedFailure:
		return fmt.Sprintf("MaxFailures (%s; policy file loop_detection.max_retries)", val(p.MaxFailures))
	case toolguard.ReasonToolLimit:
		return fmt.Sprintf("%s.Limit per turn, or the session quota (policy file tool_quota.%s)", perTool, tool)
	case toolguard.ReasonCycle:
		return fmt.Sprintf("CycleRepeats (%s) and CyclePeriod; per tool %s.Exempt", val(p.CycleRepeats), perTool)
	case toolguard.ReasonBudget:
		return fmt.Sprintf("MaxCallsPerTurn (%s)", val(p.MaxCallsPerTurn))
	case toolguard.ReasonChurn:
		return fmt.Sprintf("WindowLimit (%s; policy file loop_detection.same_call_window) over Window", val(p.WindowLimit))
	}
	return ""
}
