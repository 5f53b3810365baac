package audit

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/toolguard/toolguard"
)

// What a report shows of a call: short previews with the secrets they may
// hold replaced by [REDACTED]. Arguments and results are kept whole only
// in memory, while their episode is replayed.

const (
	// maxTitleBytes bounds the title an episode keeps (Episode.Title).
	maxTitleBytes = 1024
	// titleRunes and previewRunes bound what a report shows.
	titleRunes   = 80
	previewRunes = 160
	redacted     = "[REDACTED]"
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
	s = redactSecrets(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

var (
	// secretPrefixRe: the API keys and tokens of common providers.
	secretPrefixRe = regexp.MustCompile(`\b(?:sk-|sk_|pk_live_|rk_live_|gh[pousr]_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza|hf_|npm_|pypi-|shpat_|SG\.|eyJ)[A-Za-z0-9_\-./+=]{8,}`)
	// secretValueRe: the value after a secret's name ("password=…",
	// "api_key": "…", "Authorization: Bearer …").
	secretValueRe = regexp.MustCompile(`(?i)((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|access_token|refresh_token|private_key|client_secret|authorization|credentials)["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token)\s+)?)([^\s"',;}&]+)`)
	// bearerRe: a credential after an authorization scheme.
	bearerRe = regexp.MustCompile(`(?i)\b(bearer|basic)\s+([A-Za-z0-9_\-./+=]{12,})`)
	// userinfoRe: a URL's user and password.
	userinfoRe = regexp.MustCompile(`(://)[^/\s:@]+:[^/\s@]+@`)
	// longTokenRe: long runs that may be random keys (checked by entropy).
	longTokenRe = regexp.MustCompile(`[A-Za-z0-9+/=_\-.]{24,}`)
)

// redactSecrets replaces what looks like a secret in s: provider key
// prefixes, the value of password=, token:, api_key= and similar names,
// the credential after bearer or basic, a URL's user and password, and
// long random-looking strings (24 or more characters with letters and
// digits and about 3.5 bits of entropy per character).
func redactSecrets(s string) string {
	s = secretPrefixRe.ReplaceAllString(s, redacted)
	s = secretValueRe.ReplaceAllString(s, "${1}"+redacted)
	s = bearerRe.ReplaceAllString(s, "${1} "+redacted)
	s = userinfoRe.ReplaceAllString(s, "${1}"+redacted+"@")
	return longTokenRe.ReplaceAllStringFunc(s, func(w string) string {
		if randomLooking(w) {
			return redacted
		}
		return w
	})
}

// randomLooking reports whether w mixes letters and digits with the
// entropy of a random key rather than of a word or a path.
func randomLooking(w string) bool {
	if strings.Contains(w, redacted) {
		return false
	}
	var letters, digits int
	var freq [256]int
	for i := 0; i < len(w); i++ {
		c := w[i]
		freq[c]++
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letters++
		}
	}
	if letters == 0 || digits == 0 {
		return false
	}
	h := 0.0
	for _, f := range freq {
		if f > 0 {
			p := float64(f) / float64(len(w))
			h -= p * math.Log2(p)
		}
	}
	return h >= 3.5
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
