package toolguard

import (
	"fmt"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The worked table of docs/policy.md.
func TestMinOfThree(t *testing.T) {
	p := Policy{
		AgentQuota:    &Quota{Tools: map[string]int{"Bash": 10, "WebFetch": 5}, Default: 20},
		PlatformQuota: &Quota{Tools: map[string]int{"WebFetch": 8, "mcp_*": 4}},
		HighCostTools: []string{"WebFetch", "mcp_browser"},
	}
	tests := []struct {
		policy Policy
		tool   string
		limit  int
		from   string
	}{
		{p, "Bash", 10, "agent"},
		{p, "WebFetch", 5, "agent"},
		{p, "mcp_browser", 4, "platform"},
		{p, "Read", 20, "agent"},
		{Policy{}, "Read", 0, ""}, // the zero Policy sets no session quota
		{Policy{SessionLimit: 30}, "Read", 30, "rule"},
		{Policy{HighCostTools: []string{"WebFetch"}}, "WebFetch", 10, "rule"},
		{Policy{Tools: map[string]ToolPolicy{"pay": {HighCost: true}}}, "pay", 10, "rule"},
		{Policy{HighCostLimit: -1, SessionLimit: 30, HighCostTools: []string{"x"}}, "x", 30, "rule"},
		{Policy{SessionLimit: -1}, "Read", 0, ""},
		{Policy{SessionLimit: 7, PlatformQuota: &Quota{Default: 9}}, "Read", 7, "rule"},
		{Policy{PlatformQuota: &Quota{Tools: map[string]int{"a*": 9, "ab*": 12}}}, "abc", 12, "platform"},
		{Policy{SessionLimit: 30, AgentQuota: &Quota{Tools: map[string]int{"Bash": -3}, Default: 4}}, "Bash", 30, "rule"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+"/"+tt.from, func(t *testing.T) {
			c := newConfig(tt.policy)
			r := c.resolve(tt.tool)
			assert.Equal(t, tt.limit, r.quota)
			assert.Equal(t, tt.from, r.quotaFrom)
			if tt.limit == 0 {
				return
			}
			// The Tracker enforces it over the session, across turns.
			tt.policy.MaxCallsPerTurn = -1
			tr := NewTracker(tt.policy)
			for i := 0; i < tt.limit; i++ {
				if i%3 == 2 {
					tr.Reset()
				}
				c := call(tt.tool, fmt.Sprintf(`{"i":%d}`, i))
				require.Equal(t, Allow, tr.ShouldSkip(c).Verdict, i)
				tr.Record(c, Outcome{Result: fmt.Sprint(i)})
			}
			d := tr.ShouldSkip(call(tt.tool, `{"i":-1}`))
			require.Equal(t, Hint, d.Verdict)
			assert.Equal(t, ReasonToolLimit, d.Reason)
			assert.Contains(t, d.Message, fmt.Sprintf("(%s quota: %d calls, %d made)", tt.from, tt.limit, tt.limit))
			assert.Equal(t, Abort, tr.ShouldSkip(call(tt.tool, `{"i":-2}`)).Verdict)
		})
	}
}

func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
	}{
		{"*search*", "web_search"}, {"*search*", "search"}, {"*search*", "searches_x"}, {"*search*", "web_fetch"},
		{"query_*", "query_db"}, {"query_*", "query"}, {"*_query", "db_query"}, {"a*b*c", "abc"}, {"a*b*c", "axxbyyc"},
		{"a*b*c", "acb"}, {"a*", "a/b"}, {"*", ""}, {"**", "x"}, {"a*a", "a"}, {"a*a", "aa"}, {"web_?etch", "web_fetch"},
		{"[", "["}, {"mcp_[ab]*", "mcp_browser"}, {"x\\*", "x*"},
	} {
		want, err := path.Match(tt.pattern, tt.name)
		want = want && err == nil
		assert.Equal(t, want, match(tt.pattern, tt.name), "%q %q", tt.pattern, tt.name)
	}
}
