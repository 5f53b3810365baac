package toolguard

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// presets are the ready policies of Preset, each reproducing one published
// behaviour with its numbers (docs/policy.md, "Presets", says which): each
// sets the rules it names on a Policy with every rule off. All are
// result-aware (a repeat with a new result is progress) but "turn-tracker",
// whose similar-query check stays result-blind as in its seed.
var presets = map[string]func(p *Policy){
	"quota-rule": func(p *Policy) {
		p.MaxRepeats = 0 // identical calls without progress: the third fires
		p.MaxFailures = 3
		p.SearchTools = nil // the built-in list, for the window rule
		p.Window, p.WindowLimit = 10, 5
		p.SessionLimit, p.HighCostLimit = 30, 10
		p.HighCostTools = []string{ // external, paid or rate-limited APIs
			"WebFetch", "WebSearch", "web_fetch", "web_search", "fetch", "http_request",
			"*_api", "api_*", "browser*", "Browser*",
		}
		p.CyclePeriod, p.CycleRepeats = 0, 0 // ping-pong and cycles up to 4 calls, 3 times
	},
	"turn-tracker": func(p *Policy) {
		p.MaxRepeats = 1
		p.SimilarityThreshold = 0.75
		p.SimilarIgnoresResults = true // the seed's check: any similar query fires
		p.SearchTools = []string{
			"search_knowledge", "semantic_search", "search_codebase", "smart_query_database", "query_database",
		}
		p.Tools = map[string]ToolPolicy{
			"composio_execute": {Limit: 2},
			"read_file":        {Limit: 3},
			"write_file":       {Limit: 2},
			"list_directory":   {Limit: 2},
			"*":                {Limit: 3},
		}
		for _, s := range p.SearchTools {
			p.Tools[s] = ToolPolicy{Limit: 2, Search: true}
		}
	},
	"loop-detection":       func(p *Policy) { p.MaxRepeats = 3 },
	"loop-detection-abort": func(p *Policy) { p.MaxRepeats, p.Action = 2, ActionAbort },
	"turn-budget":          func(p *Policy) { p.MaxCallsPerTurn, p.NudgeRatio = 30, 0.75 },
}

// PresetNames returns the names Preset accepts, sorted.
func PresetNames() []string { return slices.Sorted(maps.Keys(presets)) }

// Preset returns the named preset policy. Each call returns a fresh Policy
// that the caller may change.
func Preset(name string) (Policy, error) {
	set, ok := presets[name]
	if !ok {
		known := strings.Join(PresetNames(), ", ")
		return Policy{}, fmt.Errorf("toolguard: unknown preset %q (known: %s)", name, known)
	}
	p := Policy{ // every rule off
		MaxCallsPerTurn:     -1,
		MaxRepeats:          -1,
		MaxFailures:         -1,
		MaxFailureStreak:    -1,
		MaxRewordings:       -1,
		MaxRevisits:         -1,
		SimilarityThreshold: -1,
		SearchTools:         []string{},
		ThinkTools:          []string{}, // the seeds know no think tools
		SessionLimit:        -1,
		HighCostLimit:       -1,
		CyclePeriod:         -1,
		Window:              -1,
	}
	set(&p)
	return p, nil
}
