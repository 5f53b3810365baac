package quotafile

import (
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
	"github.com/toolguard/toolguard"
	"go.yaml.in/yaml/v4"

	"github.com/toolguard/toolguard/store"
)

// The keys of a policy file besides tool_quota and loop_detection: one per
// field of toolguard.Policy that a file can hold, in snake case.
const (
	keyPreset                = "preset"
	keyMaxCallsPerTurn       = "max_calls_per_turn"
	keyNudgeRatio            = "nudge_ratio"
	keyBudgetUnit            = "budget_unit"
	keyMaxRepeats            = "max_repeats"
	keyMaxFailures           = "max_failures"
	keyMaxFailureStreak      = "max_failure_streak"
	keyMaxRewordings         = "max_rewordings"
	keyMaxRevisits           = "max_revisits"
	keySimilarityThreshold   = "similarity_threshold"
	keySearchTools           = "search_tools"
	keyThinkTools            = "think_tools"
	keySimilarIgnoresResults = "similar_ignores_results"
	keyAction                = "action"
	keyToolPolicies          = "tools"
	keyCyclePeriod           = "cycle_period"
	keyCycleRepeats          = "cycle_repeats"
	keyWindowLen             = "window"
	keyWindowLimit           = "window_limit"
	keyLedgerSize            = "ledger_size"
	keyKeepRaw               = "keep_raw"
	keySessionLimit          = "session_limit"
	keyHighCostLimit         = "high_cost_limit"
	keyHighCostTools         = "high_cost_tools"
	keyPlatformQuota         = "platform_quota"
	keySessionID             = "session_id"
	keySharedQuotas          = "shared_quotas"
	keyStoreTimeout          = "store_timeout"
	keyReservationTTL        = "reservation_ttl"
	keyFailOpen              = "fail_open"
)

// The keys of an entry of tools (a toolguard.ToolPolicy).
const (
	keyLimit      = "limit"
	keyExempt     = "exempt"
	keySearch     = "search"
	keyReadOnly   = "read_only"
	keyHighCost   = "high_cost"
	keyIgnoreArgs = "ignore_args"
)

// The keys of an entry of shared_quotas (a store.SharedQuota).
const (
	keyName    = "name"
	keyPerTool = "per_tool"
)

// knownKeys are the top-level keys of a plain policy file.
var knownKeys = []string{
	keyPreset, keyMaxCallsPerTurn, keyNudgeRatio, keyBudgetUnit, keyMaxRepeats, keyMaxFailures,
	keyMaxFailureStreak, keyMaxRewordings, keyMaxRevisits, keySimilarityThreshold, keySearchTools, keyThinkTools, keySimilarIgnoresResults, keyAction, keyToolPolicies,
	keyCyclePeriod, keyCycleRepeats, keyWindowLen, keyWindowLimit, keyLedgerSize, keyKeepRaw,
	keySessionLimit, keyHighCostLimit, keyHighCostTools, keyToolQuota, keyPlatformQuota,
	keyLoopDetection, keySessionID, keySharedQuotas, keyStoreTimeout, keyReservationTTL, keyFailOpen,
}

// unknownKey is the problem of an unknown key among known: the nearest
// known key when one is close (an edit distance of at most 3), else where
// the keys are listed.
func unknownKey(name string, known []string) string {
	best, dist := "", 4
	for _, k := range known {
		if d := levenshtein.ComputeDistance(strings.ToLower(name), k); d < dist {
			best, dist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown key; did you mean %s?", best)
	}
	if len(known) > 8 {
		return "unknown key (the keys are listed in docs/policy.md)"
	}
	return "unknown key (known: " + strings.Join(known, ", ") + ")"
}

// setField records that the key written at k sets the Policy field named
// field, with set. A field set twice (max_failures and
// loop_detection.max_retries) is an error.
func (d *decoder) setField(k *yaml.Node, key, field string, set func(*toolguard.Policy)) {
	if d.fields == nil {
		d.fields = map[string]string{}
	}
	if first, ok := d.fields[field]; ok {
		d.fail(k, key, "sets %s, which %s already sets; keep one", field, first)
		return
	}
	d.fields[field] = key
	d.decl.set = append(d.decl.set, set)
}

// policyKey reads one top-level key of a plain policy file, other than
// tool_quota and loop_detection.
func (d *decoder) policyKey(k, v *yaml.Node, name string) {
	type intField struct {
		field string
		off   bool // "off" is accepted and means -1
		set   func(*toolguard.Policy, int)
	}
	ints := map[string]intField{
		keyMaxCallsPerTurn:  {"MaxCallsPerTurn", true, func(p *toolguard.Policy, n int) { p.MaxCallsPerTurn = n }},
		keyMaxRepeats:       {"MaxRepeats", true, func(p *toolguard.Policy, n int) { p.MaxRepeats = n }},
		keyMaxFailures:      {"MaxFailures", true, func(p *toolguard.Policy, n int) { p.MaxFailures = n }},
		keyMaxFailureStreak: {"MaxFailureStreak", true, func(p *toolguard.Policy, n int) { p.MaxFailureStreak = n }},
		keyMaxRewordings:    {"MaxRewordings", true, func(p *toolguard.Policy, n int) { p.MaxRewordings = n }},
		keyMaxRevisits:      {"MaxRevisits", true, func(p *toolguard.Policy, n int) { p.MaxRevisits = n }},
		keyCyclePeriod:      {"CyclePeriod", true, func(p *toolguard.Policy, n int) { p.CyclePeriod = n }},
		keyCycleRepeats:     {"CycleRepeats", true, func(p *toolguard.Policy, n int) { p.CycleRepeats = n }},
		keyWindowLen:        {"Window", true, func(p *toolguard.Policy, n int) { p.Window = n }},
		keyWindowLimit:      {"WindowLimit", true, func(p *toolguard.Policy, n int) { p.WindowLimit = n }},
		keyLedgerSize:       {"LedgerSize", true, func(p *toolguard.Policy, n int) { p.LedgerSize = n }},
		keySessionLimit:     {"SessionLimit", true, func(p *toolguard.Policy, n int) { p.SessionLimit = n }},
		keyHighCostLimit:    {"HighCostLimit", true, func(p *toolguard.Policy, n int) { p.HighCostLimit = n }},
	}
	if f, ok := ints[name]; ok {
		if n, ok := d.integer(v, name, f.off); ok {
			d.setField(k, name, f.field, func(p *toolguard.Policy) { f.set(p, n) })
		}
		return
	}
	bools := map[string]struct {
		field string
		set   func(*toolguard.Policy, bool)
	}{
		keySimilarIgnoresResults: {"SimilarIgnoresResults", func(p *toolguard.Policy, b bool) { p.SimilarIgnoresResults = b }},
		keyKeepRaw:               {"KeepRaw", func(p *toolguard.Policy, b bool) { p.KeepRaw = b }},
		keyFailOpen:              {"FailOpen", func(p *toolguard.Policy, b bool) { p.FailOpen = b }},
	}
	if f, ok := bools[name]; ok {
		if b, ok := d.boolean(v, name); ok {
			d.setField(k, name, f.field, func(p *toolguard.Policy) { f.set(p, b) })
		}
		return
	}
	switch name {
	case keyPreset:
		if s, ok := d.str(v, name); ok {
			if _, err := toolguard.Preset(s); err != nil {
				d.fail(v, name, "unknown preset %q (known: %s)", clip(s), strings.Join(toolguard.PresetNames(), ", "))
				return
			}
			d.decl.preset = s
		}
	case keyNudgeRatio:
		if f, ok := d.float(v, name); ok {
			d.setField(k, name, "NudgeRatio", func(p *toolguard.Policy) { p.NudgeRatio = f })
		}
	case keySimilarityThreshold:
		if f, ok := d.float(v, name); ok && f > 1 {
			d.fail(v, name, "%s is above 1, where no two queries are similar; use off to turn the check off", printable(clip(v.Value)))
		} else if ok {
			d.setField(k, name, "SimilarityThreshold", func(p *toolguard.Policy) { p.SimilarityThreshold = f })
		}
	case keyBudgetUnit:
		if i, ok := d.enum(v, name, "calls", "rounds"); ok {
			d.setField(k, name, "CountRounds", func(p *toolguard.Policy) { p.CountRounds = i == 1 })
		}
	case keyAction:
		if i, ok := d.enum(v, name, "hint", "abort"); ok {
			d.setField(k, name, "Action", func(p *toolguard.Policy) { p.Action = toolguard.Action(i) })
		}
	case keySearchTools:
		if l, ok := d.list(v, name, true); ok {
			d.setField(k, name, "SearchTools", func(p *toolguard.Policy) { p.SearchTools = l })
		}
	case keyThinkTools:
		if l, ok := d.list(v, name, true); ok {
			d.setField(k, name, "ThinkTools", func(p *toolguard.Policy) { p.ThinkTools = l })
		}
	case keyHighCostTools:
		if l, ok := d.list(v, name, true); ok {
			d.setField(k, name, "HighCostTools", func(p *toolguard.Policy) { p.HighCostTools = l })
		}
	case keyPlatformQuota:
		d.toolQuota(k, v, keyPlatformQuota)
	case keySessionID:
		if s, ok := d.str(v, name); ok {
			d.setField(k, name, "SessionID", func(p *toolguard.Policy) { p.SessionID = s })
		}
	case keyStoreTimeout:
		if t, ok := d.duration(v, name); ok {
			d.setField(k, name, "StoreTimeout", func(p *toolguard.Policy) { p.StoreTimeout = t })
		}
	case keyReservationTTL:
		if t, ok := d.duration(v, name); ok {
			d.setField(k, name, "ReservationTTL", func(p *toolguard.Policy) { p.ReservationTTL = t })
		}
	case keyToolPolicies:
		d.toolPolicies(k, v)
	case keySharedQuotas:
		d.sharedQuotas(k, v)
	default:
		d.fail(k, keyPath("", name), "%s", unknownKey(name, knownKeys))
	}
}

// toolEntry is one entry of tools: the ToolPolicy fields it sets.
type toolEntry struct {
	tp  toolguard.ToolPolicy
	set map[string]bool // the keys written
}

// toolPolicies reads tools: a mapping of tool names or glob patterns to
// ToolPolicy fields. Each entry is merged field by field into the base
// policy's entry of the same key.
func (d *decoder) toolPolicies(k, v *yaml.Node) {
	if !d.kind(v, keyToolPolicies, yaml.MappingNode, "a mapping of tool names or patterns to their settings") {
		return
	}
	entries := map[string]toolEntry{}
	seen := map[string]int{}
	d.pairs(v, func(tk, tv *yaml.Node) {
		name, ok := d.key(tk, keyToolPolicies, seen)
		if !ok || !d.toolName(tk, keyPath(keyToolPolicies, name), name) {
			return
		}
		prefix := keyPath(keyToolPolicies, name)
		if !d.kind(tv, prefix, yaml.MappingNode, "a mapping of limit, max_repeats, exempt, search, read_only, high_cost, ignore_args") {
			return
		}
		e := toolEntry{set: map[string]bool{}}
		fields := map[string]int{}
		d.pairs(tv, func(fk, fv *yaml.Node) {
			field, ok := d.key(fk, prefix, fields)
			if !ok {
				return
			}
			key := keyPath(prefix, field)
			switch field {
			case keyLimit:
				if n, ok := d.integer(fv, key, false); ok && d.notNegative(fv, key, n) {
					e.tp.Limit, e.set[field] = n, true
				}
			case keyMaxRepeats:
				if n, ok := d.integer(fv, key, true); ok {
					e.tp.MaxRepeats, e.set[field] = n, true
				}
			case keyExempt:
				if b, ok := d.boolean(fv, key); ok {
					e.tp.Exempt, e.set[field] = b, true
				}
			case keyHighCost:
				if b, ok := d.boolean(fv, key); ok {
					e.tp.HighCost, e.set[field] = b, true
				}
			case keySearch:
				if b, ok := d.boolean(fv, key); ok {
					e.tp.Search, e.tp.NoSearch, e.set[field] = b, !b, true
				}
			case keyReadOnly:
				if b, ok := d.boolean(fv, key); ok {
					e.tp.ReadOnly, e.tp.NotReadOnly, e.set[field] = b, !b, true
				}
			case keyIgnoreArgs:
				if l, ok := d.list(fv, key, false); ok {
					e.tp.IgnoreArgs, e.set[field] = l, true
				}
			default:
				d.fail(fk, key, "%s", unknownKey(field, []string{keyLimit, keyMaxRepeats, keyExempt, keySearch, keyReadOnly, keyHighCost, keyIgnoreArgs}))
			}
		})
		entries[name] = e
	})
	d.setField(k, keyToolPolicies, "Tools", func(p *toolguard.Policy) { p.Tools = mergeTools(p.Tools, entries) })
}

// mergeTools returns a new map: base's entries, with each entry of the file
// merged over the base's entry of the same key, field by field.
func mergeTools(base map[string]toolguard.ToolPolicy, entries map[string]toolEntry) map[string]toolguard.ToolPolicy {
	out := make(map[string]toolguard.ToolPolicy, len(base)+len(entries))
	for name, tp := range base {
		out[name] = tp
	}
	for name, e := range entries {
		tp := out[name]
		for field := range e.set {
			switch field {
			case keyLimit:
				tp.Limit = e.tp.Limit
			case keyMaxRepeats:
				tp.MaxRepeats = e.tp.MaxRepeats
			case keyExempt:
				tp.Exempt = e.tp.Exempt
			case keyHighCost:
				tp.HighCost = e.tp.HighCost
			case keySearch:
				tp.Search, tp.NoSearch = e.tp.Search, e.tp.NoSearch
			case keyReadOnly:
				tp.ReadOnly, tp.NotReadOnly = e.tp.ReadOnly, e.tp.NotReadOnly
			case keyIgnoreArgs:
				tp.IgnoreArgs = e.tp.IgnoreArgs
			}
		}
		out[name] = tp
	}
	return out
}

// sharedQuotas reads shared_quotas: a list of {name, tools, limit,
// window, per_tool}.
func (d *decoder) sharedQuotas(k, v *yaml.Node) {
	if !d.kind(v, keySharedQuotas, yaml.SequenceNode, "a list of quotas (name, limit, tools, window, per_tool)") {
		return
	}
	qs := []store.SharedQuota{}
	for i, item := range v.Content {
		prefix := keySharedQuotas + "[" + strconv.Itoa(i) + "]"
		if !d.kind(item, prefix, yaml.MappingNode, "a mapping of name, limit, tools, window, per_tool") {
			continue
		}
		var q store.SharedQuota
		seen := map[string]int{}
		d.pairs(item, func(fk, fv *yaml.Node) {
			field, ok := d.key(fk, prefix, seen)
			if !ok {
				return
			}
			key := keyPath(prefix, field)
			switch field {
			case keyName:
				if s, ok := d.str(fv, key); ok {
					q.Name = s
				}
			case keyLimit:
				if n, ok := d.limit(fv, key); ok {
					q.Limit = n
				}
			case keyToolPolicies:
				if l, ok := d.list(fv, key, true); ok {
					q.Tools = l
				}
			case keyWindowLen:
				if t, ok := d.duration(fv, key); ok {
					q.Window = t
				}
			case keyPerTool:
				if b, ok := d.boolean(fv, key); ok {
					q.PerTool = b
				}
			default:
				d.fail(fk, key, "%s", unknownKey(field, []string{keyName, keyLimit, keyToolPolicies, keyWindowLen, keyPerTool}))
			}
		})
		switch {
		case q.Name == "" && seen[keyName] == 0:
			d.fail(item, prefix, "a shared quota needs a name")
		case q.Limit == 0 && seen[keyLimit] == 0:
			d.fail(item, prefix, "a shared quota needs a limit")
		}
		qs = append(qs, q)
	}
	if err := (toolguard.Policy{SharedQuotas: qs}).Validate(); err != nil {
		// One error per problem: Validate puts each on a line of its own.
		for _, line := range strings.Split(strings.TrimPrefix(err.Error(), "toolguard: invalid policy: "), "\n") {
			d.fail(v, keySharedQuotas, "%s", line)
		}
		return
	}
	d.setField(k, keySharedQuotas, "SharedQuotas", func(p *toolguard.Policy) { p.SharedQuotas = qs })
}

// toolName checks a tool name or glob pattern used as a key.
func (d *decoder) toolName(k *yaml.Node, key, name string) bool {
	switch {
	case strings.TrimSpace(name) == "":
		d.fail(k, key, "empty tool name")
	case strings.TrimSpace(name) != name:
		d.fail(k, key, "tool name has leading or trailing blanks")
	case !utf8.ValidString(name):
		d.fail(k, key, "tool name is not valid UTF-8")
	default:
		if _, err := path.Match(name, ""); err != nil {
			d.fail(k, key, "malformed glob pattern (see path.Match)")
			return false
		}
		return true
	}
	return false
}

// scalar reports whether n is a plain scalar (not an alias), failing
// otherwise.
func (d *decoder) scalar(n *yaml.Node, key, want string) bool {
	switch {
	case n.Kind == yaml.AliasNode:
		d.fail(n, key, "aliases are not allowed; write the value out")
		return false
	case n.Kind != yaml.ScalarNode:
		d.fail(n, key, "want %s, got %s", want, describe(n))
		return false
	}
	return true
}

// isOff reports whether n is the word off (unquoted or quoted).
func isOff(n *yaml.Node) bool { return n.ShortTag() == "!!str" && n.Value == "off" }

// integer returns the integer n holds: any decimal integer of at most
// 2147483647 in magnitude, and with off the word off, which is -1.
func (d *decoder) integer(n *yaml.Node, key string, off bool) (int, bool) {
	want := "an integer"
	if off {
		want = "an integer or off"
	}
	if !d.scalar(n, key, want) {
		return 0, false
	}
	if off && isOff(n) {
		return -1, true
	}
	tag := n.ShortTag()
	if !isDecimal(n.Value) || tag != "!!int" && (tag != "!!float" || n.Style&yaml.TaggedStyle != 0) {
		if tag == "!!int" {
			d.fail(n, key, "write the number as a decimal integer, got %s", describe(n))
		} else {
			d.fail(n, key, "want %s, got %s", want, describe(n))
		}
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || v > maxValue || v < -maxValue {
		d.fail(n, key, "%s is out of range (at most %d either way)", printable(clip(n.Value)), maxValue)
		return 0, false
	}
	return int(v), true
}

// notNegative fails for a negative n.
func (d *decoder) notNegative(node *yaml.Node, key string, n int) bool {
	if n < 0 {
		d.fail(node, key, "negative limit %d (0 or no key means no limit)", n)
		return false
	}
	return true
}

// float returns the finite number n holds, or -1 for off.
func (d *decoder) float(n *yaml.Node, key string) (float64, bool) {
	if !d.scalar(n, key, "a number or off") {
		return 0, false
	}
	if isOff(n) {
		return -1, true
	}
	tag := n.ShortTag()
	if tag != "!!int" && tag != "!!float" {
		d.fail(n, key, "want a number or off, got %s", describe(n))
		return 0, false
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.fail(n, key, "want a finite number or off, got %s", describe(n))
		return 0, false
	}
	return f, true
}

// boolean returns the true or false n holds.
func (d *decoder) boolean(n *yaml.Node, key string) (bool, bool) {
	if !d.scalar(n, key, "true or false") {
		return false, false
	}
	if n.ShortTag() != "!!bool" {
		d.fail(n, key, "want true or false, got %s", describe(n))
		return false, false
	}
	b, err := strconv.ParseBool(strings.ToLower(n.Value))
	if err != nil {
		d.fail(n, key, "want true or false, got %s", describe(n))
		return false, false
	}
	return b, true
}

// str returns the non-empty string n holds.
func (d *decoder) str(n *yaml.Node, key string) (string, bool) {
	if !d.scalar(n, key, "a string") {
		return "", false
	}
	if n.ShortTag() != "!!str" || n.Value == "" {
		d.fail(n, key, "want a non-empty string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

// enum returns the index of the word n holds among words.
func (d *decoder) enum(n *yaml.Node, key string, words ...string) (int, bool) {
	s, ok := d.str(n, key)
	if !ok {
		return 0, false
	}
	for i, w := range words {
		if s == w {
			return i, true
		}
	}
	d.fail(n, key, "want one of %s, got %s", strings.Join(words, ", "), describe(n))
	return 0, false
}

// duration returns the non-negative Go duration n holds, such as 250ms.
func (d *decoder) duration(n *yaml.Node, key string) (time.Duration, bool) {
	s, ok := d.str(n, key)
	if !ok {
		return 0, false
	}
	t, err := time.ParseDuration(s)
	switch {
	case err != nil:
		d.fail(n, key, "want a duration such as 250ms or 5m, got %s", describe(n))
	case t < 0:
		d.fail(n, key, "negative duration %s", printable(clip(s)))
	default:
		return t, true
	}
	return 0, false
}

// list returns the strings of the list n (non-nil, so [] is an empty list).
// With globs, every item must be a valid path.Match pattern.
func (d *decoder) list(n *yaml.Node, key string, globs bool) ([]string, bool) {
	if !d.kind(n, key, yaml.SequenceNode, "a list of names") {
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, item := range n.Content {
		ikey := key + "[" + strconv.Itoa(i) + "]"
		s, good := d.str(item, ikey)
		if good && globs {
			good = d.toolName(item, ikey, s)
		}
		if !good {
			ok = false
			continue
		}
		out = append(out, s)
	}
	return out, ok
}

// sortedNames returns the keys of m, sorted.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
