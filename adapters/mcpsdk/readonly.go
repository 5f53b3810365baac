package mcpsdk

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/mcpguard"
)

// ReadOnlyHints returns p with ToolPolicy.ReadOnly set for every tool whose
// annotations carry readOnlyHint: true (Tool.Annotations.ReadOnlyHint).
// The calls of such a tool never count as progress for other calls, so a
// status check repeated around reads is still a repeat. A false hint, nil
// Annotations or a nil tool change nothing.
//
// The other fields of p are kept, and so is every entry of p.Tools: a tool
// with its own entry keeps it with ReadOnly set; a tool that only a glob
// pattern of p.Tools matches gets its own entry copied from the pattern
// the Tracker would pick (exact names win over patterns, then the longest
// pattern, then the lexically smallest), so the pattern's settings still
// apply to it. A tool whose name would be a glob pattern (it holds * ? [
// or \) is left out. p.Tools is not modified: the result holds a new map.
//
// Pass the tools the server registers (the *mcp.Tool values given to
// Server.AddTool or mcp.AddTool) before the Tracker or Sessions is made: a
// Tracker keeps the Policy it was made with. readOnlyHint is the server
// author's word about their own tools; marking a tool that does change
// something as read-only can make toolguard skip a repeat that would have
// seen the change.
func ReadOnlyHints(p toolguard.Policy, tools ...*mcp.Tool) toolguard.Policy {
	var names []string
	for _, tool := range tools {
		if tool != nil && tool.Annotations != nil && tool.Annotations.ReadOnlyHint {
			names = append(names, tool.Name)
		}
	}
	return mcpguard.ReadOnly(p, names...)
}
