package mcpguard

import (
	"maps"
	"path"
	"strings"

	"github.com/toolguard/toolguard"
)

// ReadOnly returns p with ToolPolicy.ReadOnly set for each named tool,
// keeping every other field and every entry of p.Tools: a tool with its own
// entry keeps it with ReadOnly set; a tool that only a glob pattern of
// p.Tools matches gets its own entry copied from the pattern the Tracker
// would pick (exact names win over patterns, then the longest pattern, then
// the lexically smallest), so the pattern's settings still apply to it. An
// empty name, or one that would be a glob pattern (it holds * ? [ or \), is
// left out, and so is a tool whose entry (or pattern) sets NotReadOnly: the
// policy overrides the server's hint. p.Tools is not modified: the result
// holds a new map.
func ReadOnly(p toolguard.Policy, names ...string) toolguard.Policy {
	var out map[string]toolguard.ToolPolicy
	for _, name := range names {
		if name == "" || isPattern(name) {
			continue
		}
		if out == nil {
			out = maps.Clone(p.Tools)
			if out == nil {
				out = make(map[string]toolguard.ToolPolicy)
			}
		}
		tp := resolve(out, name)
		if tp.NotReadOnly {
			continue // the policy overrides the server's hint
		}
		tp.ReadOnly = true
		out[name] = tp
	}
	if out != nil {
		p.Tools = out
	}
	return p
}

// isPattern reports whether a Policy.Tools key is a glob pattern, as the
// Tracker reads it.
func isPattern(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// resolve returns the ToolPolicy the Tracker would use for name: its own
// entry, else that of the longest matching pattern (the lexically smallest
// among equals), else the zero ToolPolicy.
func resolve(tools map[string]toolguard.ToolPolicy, name string) toolguard.ToolPolicy {
	if tp, ok := tools[name]; ok {
		return tp
	}
	best, found := "", false
	for pat := range tools {
		if !isPattern(pat) {
			continue
		}
		if ok, err := path.Match(pat, name); err != nil || !ok {
			continue
		}
		if !found || len(pat) > len(best) || len(pat) == len(best) && pat < best {
			best, found = pat, true
		}
	}
	if !found {
		return toolguard.ToolPolicy{}
	}
	return tools[best]
}
