package mcpguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/toolguard/toolguard"
)

func TestReadOnly(t *testing.T) {
	t.Run("no name leaves the policy as it was", func(t *testing.T) {
		p := ReadOnly(toolguard.Policy{MaxRepeats: 3})
		assert.Nil(t, p.Tools)
		assert.Equal(t, 3, p.MaxRepeats)
	})
	t.Run("the user's entries and fields are kept", func(t *testing.T) {
		user := map[string]toolguard.ToolPolicy{
			"list_files": {Limit: 5, IgnoreArgs: []string{"request_id"}},
			"deploy":     {HighCost: true},
		}
		p := ReadOnly(toolguard.Policy{MaxRepeats: 3, Tools: user}, "list_files")
		assert.Equal(t, map[string]toolguard.ToolPolicy{
			"list_files": {Limit: 5, IgnoreArgs: []string{"request_id"}, ReadOnly: true},
			"deploy":     {HighCost: true},
		}, p.Tools)
		assert.Equal(t, 3, p.MaxRepeats)
		assert.False(t, user["list_files"].ReadOnly, "the caller's map is not modified")
	})
	t.Run("a tool matched by a pattern keeps the pattern's settings", func(t *testing.T) {
		user := map[string]toolguard.ToolPolicy{
			"*":        {MaxRepeats: 4},
			"list_*":   {Limit: 7},
			"list_f*":  {Limit: 8},
			"list_?il": {Limit: 9}, // does not match
		}
		p := ReadOnly(toolguard.Policy{Tools: user}, "list_files")
		assert.Equal(t, toolguard.ToolPolicy{Limit: 8, ReadOnly: true}, p.Tools["list_files"], "the longest matching pattern")
		assert.Len(t, p.Tools, 5)
	})
	t.Run("NotReadOnly overrides the hint", func(t *testing.T) {
		user := map[string]toolguard.ToolPolicy{"mcp__*": {NotReadOnly: true}, "get_time": {Exempt: true}}
		p := ReadOnly(toolguard.Policy{Tools: user}, "mcp__fs__read", "get_time")
		assert.Equal(t, toolguard.ToolPolicy{Exempt: true, ReadOnly: true}, p.Tools["get_time"])
		assert.False(t, p.Tools["mcp__fs__read"].ReadOnly, "the policy's read_only: false wins")
	})
	t.Run("an empty name or one that would be a pattern is left out", func(t *testing.T) {
		assert.Nil(t, ReadOnly(toolguard.Policy{}, "get*", "").Tools)
	})
}
