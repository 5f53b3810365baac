package toolguard

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func preset(t *testing.T, name string) Policy {
	t.Helper()
	p, err := Preset(name)
	require.NoError(t, err)
	return p
}

func TestPresetNames(t *testing.T) {
	assert.Equal(t, []string{"loop-detection", "loop-detection-abort", "quota-rule", "turn-budget", "turn-tracker"}, PresetNames())
	_, err := Preset("nope")
	assert.ErrorContains(t, err, `unknown preset "nope"`)
}

// The portable agent rule: 3 failing retries, 5 similar in the window, 30
// calls to one tool per session, 10 to a high-cost tool, min-of-three.
func TestPresetQuotaRule(t *testing.T) {
	t.Run("same failing call retried", func(t *testing.T) {
		run(t, NewTracker(preset(t, "quota-rule")), []step{
			fail(call("Bash", `{"command":"npm test"}`), "npm ERR! missing script: test (code 1)"),
			fail(call("Bash", `{"command":"npm run test"}`), "npm ERR! missing script: test (code 1)"),
			fail(call("Bash", `{"command":"npm test --silent"}`), "npm ERR! missing script: test (code 1)"),
			hint(call("Bash", `{"command":"npm test --verbose"}`), ReasonRepeatedFailure),
		})
	})
	t.Run("broad search churn", func(t *testing.T) {
		q := func(s string) Call { return call("WebSearch", fmt.Sprintf(`{"query":%q}`, s)) }
		run(t, NewTracker(preset(t, "quota-rule")), []step{
			allow(q("go tool call guard"), "same"), allow(q("go tool-call guard"), "same"), allow(q("golang tool call guard"), "same"),
			allow(q("go tool call guards"), "same"), allow(q("go tool call guard lib"), "same"), hint(q("go toolcall guard"), ReasonChurn),
		})
	})
	t.Run("30 calls to one tool per session, across turns", func(t *testing.T) {
		tr := NewTracker(preset(t, "quota-rule"))
		for i := 0; i < 30; i++ {
			if i == 15 {
				tr.Reset()
			}
			run(t, tr, []step{allow(call("Read", fmt.Sprintf(`{"path":"f%d"}`, i)), "ok")})
		}
		d := tr.ShouldSkip(call("Read", `{"path":"g"}`))
		require.Equal(t, Hint, d.Verdict)
		assert.Equal(t, ReasonToolLimit, d.Reason)
		assert.Contains(t, d.Message, "Tool 'Read' has reached its session quota (rule quota: 30 calls, 30 made)")
		assert.Contains(t, d.Message, "report the progress so far, the budget state")
		assert.Contains(t, d.Message, "next narrower action")
		// A new Tracker is a new session.
		run(t, NewTracker(preset(t, "quota-rule")), []step{allow(call("Read", `{"path":"g"}`), "ok")})
	})
	t.Run("10 calls to a high-cost tool", func(t *testing.T) {
		tr := NewTracker(preset(t, "quota-rule"))
		for i := 0; i < 10; i++ {
			run(t, tr, []step{allow(call("WebFetch", fmt.Sprintf(`{"url":"https://x.org/%d"}`, i)), fmt.Sprint(i))})
		}
		run(t, tr, []step{hint(call("WebFetch", `{"url":"https://y.org/"}`), ReasonToolLimit)})
	})
	t.Run("agent-declared quota, min of three", func(t *testing.T) {
		p := preset(t, "quota-rule")
		p.AgentQuota = &Quota{Tools: map[string]int{"Bash": 10, "WebFetch": 5}, Default: 20}
		tr := NewTracker(p)
		for i := 0; i < 5; i++ {
			run(t, tr, []step{allow(call("WebFetch", fmt.Sprintf(`{"url":"https://x.org/%d"}`, i)), fmt.Sprint(i))})
		}
		d := tr.ShouldSkip(call("WebFetch", `{"url":"https://y.org/"}`))
		assert.Contains(t, d.Message, "agent quota: 5 calls, 5 made")
	})
	t.Run("escalation with a summary", func(t *testing.T) {
		tr := NewTracker(preset(t, "quota-rule"))
		run(t, tr, []step{
			fail(call("Bash", `{"command":"make"}`), "make: *** No rule to make target 'all'. Stop."),
			fail(call("Bash", `{"command":"make all"}`), "make: *** No rule to make target 'build'. Stop."),
			fail(call("Bash", `{"command":"make -j4"}`), "make: *** No rule to make target 'x'. Stop."),
			hint(call("Bash", `{"command":"make -B"}`), ReasonRepeatedFailure),
		})
		s := tr.Summary()
		require.Len(t, s.Tools, 1)
		assert.Equal(t, 3, s.Tools[0].Failed)
		assert.Equal(t, 3, s.Tools[0].SameFailure)
		assert.Equal(t, 1, s.Tools[0].SkipReasons[ReasonRepeatedFailure])
		assert.Contains(t, s.Next, "Stop retrying 'Bash'")
		assert.NotContains(t, s.String(), "make -j4")
	})
}

// The chat service's per-turn three-tier tracker.
func TestPresetTurnTracker(t *testing.T) {
	t.Run("per-tool limits", func(t *testing.T) {
		tr := NewTracker(preset(t, "turn-tracker"))
		run(t, tr, []step{
			allow(call("composio_execute", `{"action":"a"}`), "1"),
			allow(call("composio_execute", `{"action":"b"}`), "2"),
		})
		d := tr.ShouldSkip(call("composio_execute", `{"action":"c"}`))
		assert.Equal(t, Hint, d.Verdict)
		assert.Equal(t, "[loop-detected] Tool 'composio_execute' has reached its execution limit (2) for this turn. "+
			"This call was not executed. Use the results you already have, change the approach, or answer the user.", d.Message)
		limits := map[string]int{"search_knowledge": 2, "semantic_search": 2, "search_codebase": 2, "smart_query_database": 2,
			"query_database": 2, "read_file": 3, "write_file": 2, "list_directory": 2, "anything_else": 3}
		for tool, limit := range limits {
			tr := NewTracker(preset(t, "turn-tracker"))
			for i := 0; i < limit; i++ {
				run(t, tr, []step{allow(call(tool, fmt.Sprintf(`{"query":"distinct question number %d about %s"}`, i, strings.Repeat("x", i*7))), "r")})
			}
			run(t, tr, []step{hint(call(tool, `{"query":"one more unrelated thing"}`), ReasonToolLimit)})
			tr.Reset()
			run(t, tr, []step{allow(call(tool, `{"query":"next turn"}`), "r")})
		}
	})
	t.Run("the second identical call is blocked", func(t *testing.T) {
		c := call("read_file", `{"path":"main.go"}`)
		tr := NewTracker(preset(t, "turn-tracker"))
		run(t, tr, []step{allow(c, "package main")})
		d := tr.ShouldSkip(c)
		assert.Equal(t, Hint, d.Verdict)
		assert.True(t, strings.HasPrefix(d.Message, "[loop-detected] Tool 'read_file' was already executed with identical parameters"))
	})
	t.Run("similar query for search tools", func(t *testing.T) {
		tr := NewTracker(preset(t, "turn-tracker"))
		run(t, tr, []step{
			allow(call("search_knowledge", `{"query":"How do I reset my password?"}`), "r"),
			hint(call("search_knowledge", `{"query":"how do i reset my password"}`), ReasonSimilarQuery),
		})
		tr = NewTracker(preset(t, "turn-tracker"))
		run(t, tr, []step{
			allow(call("query_database", `{"query":"delete user"}`), "r"),
			allow(call("query_database", `{"query":"deactivate user"}`), "r"),
		})
		// Not a search tool in this preset: no similar-query check.
		tr = NewTracker(preset(t, "turn-tracker"))
		run(t, tr, []step{
			allow(call("web_search", `{"query":"fix bug"}`), "r"),
			allow(call("web_search", `{"query":"fix the bug"}`), "r"),
		})
	})
}

// The agent SDK's tool executor: maxRepeats and hint or abort.
func TestPresetLoopDetection(t *testing.T) {
	c := call("get_weather", `{"city":"Paris"}`)
	t.Run("hint after maxRepeats, then abort", func(t *testing.T) {
		tr := NewTracker(preset(t, "loop-detection"))
		run(t, tr, []step{allow(c, "sunny"), allow(c, "sunny"), allow(c, "sunny")})
		d := tr.ShouldSkip(c)
		require.Equal(t, Hint, d.Verdict)
		assert.True(t, strings.HasPrefix(d.Message, HintMarker))
		assert.Contains(t, d.Message, "loop-detected")
		d = tr.ShouldSkip(c)
		require.Equal(t, Abort, d.Verdict)
		var le *LoopError
		require.True(t, errors.As(d.Err, &le))
		assert.Equal(t, "get_weather", le.Tool)
		assert.Equal(t, 3, le.Count)
		assert.Equal(t, hashArgs([]byte(`{"city":"Paris"}`), nil), le.Key)
		assert.ErrorIs(t, d.Err, ErrLoop)
	})
	t.Run("different arguments start their own counter", func(t *testing.T) {
		p := preset(t, "loop-detection")
		p.Tools = map[string]ToolPolicy{"get_weather": {ReadOnly: true}}
		run(t, NewTracker(p), []step{
			allow(c, "sunny"), allow(c, "sunny"), allow(call("get_weather", `{"city":"Rome"}`), "rain"), allow(c, "sunny"),
			hint(c, ReasonDuplicate),
		})
	})
	t.Run("abort variant", func(t *testing.T) {
		run(t, NewTracker(preset(t, "loop-detection-abort")), []step{allow(c, "sunny"), allow(c, "sunny"), abort(c, ReasonDuplicate)})
	})
	t.Run("polling tools opt out or raise their threshold", func(t *testing.T) {
		p := preset(t, "loop-detection")
		p.Tools = map[string]ToolPolicy{"get_weather": {Exempt: true}, "job_status": {MaxRepeats: 6}}
		tr := NewTracker(p)
		for i := 0; i < 10; i++ {
			run(t, tr, []step{allow(c, "sunny")})
		}
		j := call("job_status", `{}`)
		for i := 0; i < 6; i++ {
			run(t, tr, []step{allow(j, "running")})
		}
		run(t, tr, []step{hint(j, ReasonDuplicate)})
	})
	t.Run("every hint and abort is an event", func(t *testing.T) {
		p := preset(t, "loop-detection-abort")
		var got []Event
		p.OnEvent = func(e Event) { got = append(got, e) }
		run(t, NewTracker(p), []step{allow(c, "sunny"), allow(c, "sunny"), abort(c, ReasonDuplicate)})
		last := got[len(got)-1]
		assert.Equal(t, EventDecision, last.Kind)
		assert.Equal(t, Abort, last.Decision.Verdict)
	})
}

// The agent runtime's turn budget.
func TestPresetTurnBudget(t *testing.T) {
	tr := NewTracker(preset(t, "turn-budget"))
	n := func(i int) Call { return call("t", fmt.Sprintf(`{"i":%d}`, i)) }
	// 3 parallel calls count 3.
	ds := tr.ShouldSkipRound([]Call{n(1), n(2), n(3)})
	for i, d := range ds {
		require.Equal(t, Allow, d.Verdict)
		tr.Record(n(i+1), Outcome{Result: "r"})
	}
	for i := 4; i <= 30; i++ {
		require.Equal(t, Allow, tr.ShouldSkip(n(i)).Verdict)
		p := tr.Record(n(i), Outcome{Result: "r"})
		if i == 22 {
			require.Equal(t, PhaseNudge, p)
			require.Equal(t, "You have used 22 of 30 tool calls. Start wrapping up.", tr.Guidance().Message)
		}
	}
	g := tr.Guidance()
	require.Equal(t, PhaseWindDown, g.Phase)
	require.True(t, g.StripTools)
	require.Equal(t, "You have used all 30 tool calls for this turn. Summarize your work and answer the user's question.", g.Message)
	d := tr.ShouldSkip(n(31))
	require.Equal(t, Abort, d.Verdict)
	require.Equal(t, PhaseExhausted, d.Phase)
	require.ErrorIs(t, d.Err, ErrBudgetExhausted)
	assert.Equal(t, "toolguard: all 30 available tool calls for this turn were used; this call was not executed: summarize your work and answer the user's question", d.Err.Error())
	// Loops are not this preset's business.
	tr.Reset()
	for i := 0; i < 5; i++ {
		run(t, tr, []step{allow(n(1), "same")})
	}
}
