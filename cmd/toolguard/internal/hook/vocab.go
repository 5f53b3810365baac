package hook

import (
	"encoding/json"
	"strings"

	"github.com/toolguard/toolguard"
)

// toTranscript maps a call as an agent's hook names it to the name and
// arguments its transcript records, which `toolguard audit` reads, so that
// both key one call identically.
//
// Codex: the hook sees the shell as Bash {"command": S}; the rollout (and
// the model) as exec_command {"cmd": S}. MCP tools are mcp__SERVER__TOOL in
// Claude Code's and Codex's hooks and transcripts alike.
func toTranscript(agentName string, ev *Event) {
	if agentName == "codex" && ev.Tool == "Bash" {
		var in map[string]json.RawMessage
		if json.Unmarshal(ev.Args, &in) == nil {
			if cmd, ok := in["command"]; ok {
				// The rollout's cmd is a string; an argv array is joined.
				var argv []string
				if json.Unmarshal(cmd, &argv) == nil {
					b, _ := json.Marshal(strings.Join(argv, " "))
					cmd = b
				}
				ev.Args, _ = json.Marshal(map[string]json.RawMessage{"cmd": cmd})
			}
		}
		ev.Tool = "exec_command"
	}
}

// cliPolicy is the policy of the agent CLIs' hooks before a --policy file:
// the library's defaults, with the turn budget lifted (an autonomous coding
// CLI runs thousands of calls in one user turn; see docs/hooks.md for the
// replay of the labelled traces behind it), and the agent's read-only tools
// marked so that their results do not count as changes to the world.
// exempt names tools (or glob patterns) that may repeat freely.
func cliPolicy(a *agent, exempt []string) toolguard.Policy {
	p := toolguard.Policy{MaxCallsPerTurn: CLITurnBudget}
	p.Tools = map[string]toolguard.ToolPolicy{}
	for _, t := range a.readOnly {
		p.Tools[t] = toolguard.ToolPolicy{ReadOnly: true}
	}
	for _, t := range exempt {
		if t = strings.TrimSpace(t); t != "" {
			tp := p.Tools[t]
			tp.Exempt = true
			p.Tools[t] = tp
		}
	}
	return p
}

// CLITurnBudget is the hooks' turn budget: no budget. See docs/hooks.md.
const CLITurnBudget = -1
