package audit

import (
	"bytes"
	"encoding/json"
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
// redacted, on one line, cut to 80 characters; "" when it has none, or
// when the report does not print it (see EpisodeResult.title).
func (e *EpisodeResult) Title() string { return e.title }

// maxPreviewJSON bounds the arguments or result that preview decodes as
// JSON to redact its values one by one.
const maxPreviewJSON = 64 << 10

// preview returns s on one line, its secrets redacted, cut to n runes
// (with "…" when cut), in a string of its own (not a substring of s, which
// may be large). JSON (arguments, most results) is redacted value by
// value: each string through toolguard.Redact, together with its key, so
// that {"api_key": "…"} and {"q": "sk-…"} both lose their secret.
func preview(s string, n int) string {
	if s == "" {
		return ""
	}
	if t := strings.TrimSpace(s); len(t) <= maxPreviewJSON && (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) {
		var v any
		if json.Unmarshal([]byte(t), &v) == nil {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if enc.Encode(redactValue(v, "")) == nil {
				s = b.String()
			}
		}
	}
	if len(s) > 8*n {
		s = strings.ToValidUTF8(s[:8*n], "")
	}
	s = strings.Join(strings.Fields(s), " ")
	s = toolguard.Redact(s)
	if utf8.RuneCountInString(s) <= n {
		return strings.Clone(s)
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// redactValue redacts the strings of a decoded JSON value, each read with
// its key ("api_key=…") so that the name of a secret redacts its value.
func redactValue(v any, key string) any {
	switch x := v.(type) {
	case string:
		if key == "" {
			return toolguard.Redact(x)
		}
		// By its key first (the value of "api_key=…"), then on its own.
		r := toolguard.Redact(key + "=" + x)
		if k, val, ok := strings.Cut(r, "="); ok && k == key {
			x = val
		}
		return toolguard.Redact(x)
	case map[string]any:
		for k, e := range x {
			x[k] = redactValue(e, k)
		}
	case []any:
		for i := range x {
			x[i] = redactValue(x[i], key)
		}
	}
	return v
}

// setting names what in the policy governs a firing of reason for tool:
// the Policy field, with the value the policy sets ("default" when it
// leaves it to the default), and the per-tool way out (the tool's name cut
// to maxNameBytes).
func setting(p *toolguard.Policy, reason toolguard.Reason, tool string) string {
	val := func(v int) string {
		if v == 0 {
			return "default"
		}
		return fmt.Sprint(v)
	}
	perTool := fmt.Sprintf("Tools[%q]", keepName(tool))
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
