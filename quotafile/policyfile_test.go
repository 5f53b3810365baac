package quotafile_test

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/quotafile"

	"github.com/toolguard/toolguard/store"
)

// runtimeFields are the Policy fields a file does not hold: they are set in
// code.
var runtimeFields = map[string]bool{"Store": true, "Breaker": true, "Now": true, "OnEvent": true, "Logger": true}

// fullPolicy sets every field a file can hold to a value other than its
// zero.
func fullPolicy() toolguard.Policy {
	return toolguard.Policy{
		MaxCallsPerTurn:       -1,
		NudgeRatio:            0.5,
		CountRounds:           true,
		MaxRepeats:            4,
		MaxFailures:           -1,
		MaxFailureStreak:      8,
		MaxRewordings:         3,
		MaxRevisits:           5,
		SimilarityThreshold:   0.8,
		SearchTools:           []string{"find_*", "grep"},
		ThinkTools:            []string{"scratchpad"},
		SimilarIgnoresResults: true,
		Action:                toolguard.ActionAbort,
		Tools: map[string]toolguard.ToolPolicy{
			"mcp__*":      {Limit: 5, MaxRepeats: 6, Search: true, HighCost: true, IgnoreArgs: []string{"request_id"}},
			"poll_status": {Exempt: true, ReadOnly: true},
			"write_file":  {NoSearch: true, NotReadOnly: true, MaxRepeats: -1},
			"tools":       {Limit: 1},
		},
		CyclePeriod:   6,
		CycleRepeats:  2,
		Window:        20,
		WindowLimit:   7,
		LedgerSize:    100,
		KeepRaw:       true,
		SessionLimit:  40,
		HighCostLimit: -1,
		HighCostTools: []string{"WebFetch", "api_*"},
		AgentQuota:    &toolguard.Quota{Tools: map[string]int{"Bash": 10, "defaults": 3, "mcp__github__*": 8}, Default: 20},
		PlatformQuota: &toolguard.Quota{Tools: map[string]int{"Bash": 5}},
		SessionID:     "chat-42",
		SharedQuotas: []store.SharedQuota{
			{Name: "tenant:acme:hourly", Tools: []string{"WebFetch"}, Limit: 100, Window: time.Hour, PerTool: true},
			{Name: "all", Limit: 1000},
		},
		StoreTimeout:   time.Second,
		ReservationTTL: 2 * time.Minute,
		FailOpen:       true,
	}
}

// nonZero fails for every field of v (a struct, embedded structs walked)
// left at its zero value, but those in skip.
func nonZero(t *testing.T, v reflect.Value, prefix string, skip map[string]bool) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if skip[f.Name] {
			continue
		}
		if f.Anonymous {
			nonZero(t, v.Field(i), prefix+f.Name+".", skip)
			continue
		}
		assert.False(t, v.Field(i).IsZero(), "%s%s is not set in the round-trip policy: add it to the file format", prefix, f.Name)
	}
}

func TestFormatRoundTripsEveryField(t *testing.T) {
	p := fullPolicy()
	nonZero(t, reflect.ValueOf(p), "", runtimeFields)
	// Each ToolPolicy field is set in one entry or another.
	var all toolguard.ToolPolicy
	for _, tp := range p.Tools {
		rv, ra := reflect.ValueOf(tp), reflect.ValueOf(&all).Elem()
		for i := 0; i < rv.NumField(); i++ {
			if !rv.Field(i).IsZero() {
				ra.Field(i).Set(rv.Field(i))
			}
		}
	}
	nonZero(t, reflect.ValueOf(all), "ToolPolicy.", nil)

	data, err := quotafile.Format(p)
	require.NoError(t, err)
	back, err := quotafile.Parse("policy.yaml", data)
	require.NoError(t, err, "%s", data)
	assert.Equal(t, p, back, "%s", data)
}

func TestFormatRoundTripsPresets(t *testing.T) {
	for _, name := range toolguard.PresetNames() {
		t.Run(name, func(t *testing.T) {
			p, err := toolguard.Preset(name)
			require.NoError(t, err)
			data, err := quotafile.Format(p)
			require.NoError(t, err)
			back, err := quotafile.Parse("policy.yaml", data)
			require.NoError(t, err, "%s", data)
			assert.Equal(t, p, back, "%s", data)

			// And the preset by name gives the same policy.
			byName, err := quotafile.Parse("policy.yaml", []byte("preset: "+name+"\n"))
			require.NoError(t, err)
			assert.Equal(t, p, byName)
		})
	}
	data, err := quotafile.Format(toolguard.Policy{})
	require.NoError(t, err)
	assert.Empty(t, data, "the zero Policy is an empty file")
}

func TestFormatRefusesWhatAFileCannotHold(t *testing.T) {
	for _, p := range []toolguard.Policy{
		{NudgeRatio: nan()},
		{Action: toolguard.Action(7)},
		{StoreTimeout: -time.Second},
		{SharedQuotas: []store.SharedQuota{{Limit: 3}}},
		{Tools: map[string]toolguard.ToolPolicy{"x": {Limit: -1}}},
	} {
		_, err := quotafile.Format(p)
		assert.Error(t, err, "%+v", p)
	}
}

func nan() float64 { var z float64; return z / z }

func TestPolicyFile(t *testing.T) {
	const file = `# the proxy in front of a GitHub server
preset: loop-detection
max_calls_per_turn: off
max_repeats: 2
action: abort
tools:
  "mcp__*":
    max_repeats: 4
  get_status:
    exempt: true
  list_issues:
    read_only: false
  search_code:
    search: true
    read_only: true
tool_quota:
  create_issue: 3
`
	p, err := quotafile.Parse("policy.yaml", []byte(file))
	require.NoError(t, err)
	want, err := toolguard.Preset("loop-detection")
	require.NoError(t, err)
	want.MaxCallsPerTurn = -1
	want.MaxRepeats = 2
	want.Action = toolguard.ActionAbort
	want.Tools = map[string]toolguard.ToolPolicy{
		"mcp__*":      {MaxRepeats: 4},
		"get_status":  {Exempt: true},
		"list_issues": {NotReadOnly: true},
		"search_code": {Search: true, ReadOnly: true},
	}
	want.AgentQuota = &toolguard.Quota{Tools: map[string]int{"create_issue": 3}}
	assert.Equal(t, want, p)

	// The exempt tool never fires; the pattern's threshold applies.
	tr := toolguard.NewTracker(p)
	for i := 0; i < 10; i++ {
		c := call("get_status", `{}`)
		require.Equal(t, toolguard.Allow, tr.ShouldSkip(c).Verdict, "poll %d", i)
		tr.Record(c, toolguard.Outcome{Result: "pending"})
	}
	for i := 1; i <= 5; i++ {
		c := call("mcp__gh__get_issue", `{"n":1}`)
		d := tr.ShouldSkip(c)
		if i <= 4 {
			require.Equal(t, toolguard.Allow, d.Verdict, "call %d", i)
			tr.Record(c, toolguard.Outcome{Result: "same"})
		} else {
			require.Equal(t, toolguard.Abort, d.Verdict, "call %d", i)
		}
	}
}

func TestApplyMergesTools(t *testing.T) {
	base, err := toolguard.Preset("turn-tracker")
	require.NoError(t, err)
	before := base.Tools["read_file"]
	p, err := quotafile.Apply(base, "p.yaml", []byte("tools:\n  read_file: {exempt: true}\n  '*': {limit: 0}\n"))
	require.NoError(t, err)
	assert.Equal(t, toolguard.ToolPolicy{Limit: before.Limit, Exempt: true}, p.Tools["read_file"], "the file's fields over the base's")
	assert.Equal(t, toolguard.ToolPolicy{}, p.Tools["*"], "limit 0: no per-turn limit")
	assert.Equal(t, before, base.Tools["read_file"], "base is not modified")
	assert.Equal(t, base.Tools["write_file"], p.Tools["write_file"])

	// A preset in the file replaces the base.
	p, err = quotafile.Apply(base, "p.yaml", []byte("preset: turn-budget\n"))
	require.NoError(t, err)
	want, _ := toolguard.Preset("turn-budget")
	assert.Equal(t, want, p)
}

var position = regexp.MustCompile(`^quotafile: p\.yaml:[0-9]+:[0-9]+: `)

func TestPolicyFileErrors(t *testing.T) {
	tests := []struct {
		name, data   string
		line, column int
		key, problem string
	}{
		{"unknown key", "max_repeat: 3\n", 1, 1, "max_repeat", "unknown key; did you mean max_repeats?"},
		{"far from any key", "colour: blue\n", 1, 1, "colour", "unknown key (the keys are listed in docs/policy.md)"},
		{"unknown preset", "preset: fast\n", 1, 9, "preset", `unknown preset "fast"`},
		{"preset not a string", "preset: [a]\n", 1, 9, "preset", "want a string, got a list"},
		{"integer as a string", "max_repeats: '3'\n", 1, 14, "max_repeats", `want an integer or off, got "3"`},
		{"integer float", "max_calls_per_turn: 1.5\n", 1, 21, "max_calls_per_turn", "want an integer or off, got 1.5"},
		{"integer out of range", "window: 99999999999\n", 1, 9, "window", "out of range"},
		{"hex", "ledger_size: 0x10\n", 1, 14, "ledger_size", "decimal integer"},
		{"ratio not a number", "nudge_ratio: half\n", 1, 14, "nudge_ratio", `want a number or off, got "half"`},
		{"ratio NaN", "similarity_threshold: .nan\n", 1, 23, "similarity_threshold", "finite number"},
		{"bool", "keep_raw: yes\n", 1, 11, "keep_raw", `want true or false, got "yes"`},
		{"enum", "action: stop\n", 1, 9, "action", `want one of hint, abort, got "stop"`},
		{"unit", "budget_unit: turns\n", 1, 14, "budget_unit", "want one of calls, rounds"},
		{"duration", "store_timeout: 5\n", 1, 16, "store_timeout", "want a non-empty string, got 5"},
		{"bad duration", "reservation_ttl: soon\n", 1, 18, "reservation_ttl", "want a duration such as 250ms or 5m"},
		{"negative duration", "store_timeout: -1s\n", 1, 16, "store_timeout", "negative duration"},
		{"list", "search_tools: grep\n", 1, 15, "search_tools", "want a list of names, got \"grep\""},
		{"list item", "high_cost_tools: [a, 3]\n", 1, 22, "high_cost_tools[1]", "want a non-empty string, got 3"},
		{"list glob", "search_tools: ['x[']\n", 1, 16, "search_tools[0]", "malformed glob pattern"},
		{"tools kind", "tools: [a]\n", 1, 8, "tools", "want a mapping of tool names or patterns"},
		{"tool entry kind", "tools:\n  Bash: 3\n", 2, 9, "tools.Bash", "want a mapping of limit"},
		{"tool key", "tools:\n  Bash: {limt: 3}\n", 2, 10, "tools.Bash.limt", "unknown key; did you mean limit?"},
		{"tool limit negative", "tools:\n  Bash: {limit: -2}\n", 2, 17, "tools.Bash.limit", "negative limit -2"},
		{"tool read_only", "tools:\n  Bash:\n    read_only: 1\n", 3, 16, "tools.Bash.read_only", "want true or false, got 1"},
		{"tool name glob", "tools:\n  'mcp_[': {exempt: true}\n", 2, 3, `tools."mcp_["`, "malformed glob pattern"},
		{"tool name blank", "tools:\n  ' x': {exempt: true}\n", 2, 3, `tools." x"`, "leading or trailing blanks"},
		{"tool duplicate", "tools:\n  x: {exempt: true}\n  x: {limit: 1}\n", 3, 3, "tools.x", "duplicate key (first at line 2)"},
		{"tool ignore_args", "tools:\n  x: {ignore_args: id}\n", 2, 20, "tools.x.ignore_args", "want a list of names"},
		{"set twice", "max_failures: 2\nloop_detection: {max_retries: 3}\n", 2, 18, "loop_detection.max_retries", "sets MaxFailures, which max_failures already sets"},
		{"shared kind", "shared_quotas: {a: 1}\n", 1, 16, "shared_quotas", "want a list of quotas"},
		{"shared no name", "shared_quotas:\n  - limit: 3\n", 2, 5, "shared_quotas[0]", "needs a name"},
		{"shared no limit", "shared_quotas:\n  - name: a\n", 2, 5, "shared_quotas[0]", "needs a limit"},
		{"shared limit", "shared_quotas:\n  - {name: a, limit: 0}\n", 2, 22, "shared_quotas[0].limit", "limit 0 is not allowed"},
		{"shared key", "shared_quotas:\n  - {name: a, limit: 1, per: hour}\n", 2, 25, "shared_quotas[0].per", "unknown key"},
		{"shared window", "shared_quotas:\n  - {name: a, limit: 1, window: day}\n", 2, 33, "shared_quotas[0].window", "want a duration"},
		{"threshold above 1", "similarity_threshold: 1.5\n", 1, 23, "similarity_threshold", "above 1"},
		{"shared keys meet", "shared_quotas:\n  - {name: t, limit: 1, per_tool: true}\n  - {name: 't:web', limit: 1}\n", 2, 3, "shared_quotas", "uses its counter"},
		{"platform quota", "platform_quota: {Bash: 0}\n", 1, 24, "platform_quota.Bash", "limit 0 is not allowed"},
		{"alias value", "a: &x 3\nmax_repeats: *x\n", 1, 1, "a", "unknown key"},
		{"key with a newline", "? 0\n\n 0\n", 1, 3, `"0\n0"`, "unknown key"},
		{"alias value only", "max_failures: &x 3\nmax_repeats: *x\n", 2, 14, "max_repeats", "aliases are not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := quotafile.Parse("p.yaml", []byte(tt.data))
			require.Error(t, err)
			var e *quotafile.Error
			require.True(t, errors.As(err, &e), "%v", err)
			assert.Equal(t, "p.yaml", e.File)
			assert.Equal(t, tt.line, e.Line, "%v", err)
			assert.Equal(t, tt.column, e.Column, "%v", err)
			assert.Equal(t, tt.key, e.Key, "%v", err)
			assert.Contains(t, e.Problem, tt.problem)
			assert.Regexp(t, position, e.Error(), "FILE:LINE:COLUMN")
		})
	}
}

// TestSharedQuotaProblems: each problem the policy's own check finds in
// shared_quotas is an error of its own, so no line of the message lacks
// the file and the key.
func TestSharedQuotaProblems(t *testing.T) {
	_, err := quotafile.Parse("p.yaml", []byte("shared_quotas: [{name: a, limit: 1}, {name: a, limit: 1}, {name: a, limit: 1}]\n"))
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 3, "%v", err)
	for _, line := range lines {
		assert.True(t, strings.HasPrefix(line, "quotafile: p.yaml:1:16: shared_quotas: SharedQuotas["), line)
		assert.Contains(t, line, `uses its counter "quota:a" too`)
	}
}

// TestFrontMatterKeepsItsKeys: in an agent definition only tool_quota and
// loop_detection are read, so tools: Read, Grep stays the agent's.
func TestFrontMatterKeepsItsKeys(t *testing.T) {
	p, err := quotafile.Parse("agent.md", []byte("---\nname: a\ntools: Read, Grep\nmax_repeats: 9\ntool_quota: {Bash: 2}\n---\n"))
	require.NoError(t, err)
	assert.Equal(t, toolguard.Policy{AgentQuota: &toolguard.Quota{Tools: map[string]int{"Bash": 2}}}, p)
}
