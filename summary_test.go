package toolguard

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummaryPlurals(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: 1})
	run(t, tr, []step{allow(call("read_file", `{"path":"a"}`), "x")})
	assert.Equal(t, "toolguard summary, turn 1: 1 call executed, 0 failed, 1 with a new result, 0 skipped.\n"+
		"The turn was stopped: the turn budget is used up.\n"+
		"Budget: 1 of 1 tool call used, 0 left (phase wind_down).\n"+
		"- read_file: 1 call, 0 failed, 1 new result.\n"+
		"Next: Summarize your work and answer the user's question.", tr.Summary().String())
}

// The turn is stopped by the first Abort; Next is about the tool that
// stopped it, even when another tool's failures look more pressing.
func TestSummaryStoppedBy(t *testing.T) {
	tr := NewTracker(Policy{})
	boom := errors.New("exit status 1: no such file")
	for i := 0; i < 2; i++ { // two failures in a row: Next would name bash
		c := call("bash", `{"command":"cat missing"}`)
		require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
		tr.Record(c, Outcome{Err: boom})
	}
	run(t, tr, []step{
		allow(call("read", `{"path":"a"}`), "same"),
		allow(call("read", `{"path":"a"}`), "same"),
		hint(call("read", `{"path":"a"}`), ReasonDuplicate),
		abort(call("read", `{"path":"a"}`), ReasonDuplicate),
	})
	s := tr.Summary()
	assert.True(t, s.Stopped)
	assert.Equal(t, ReasonDuplicate, s.StoppedBy)
	assert.Equal(t, "read", s.StoppedTool)
	assert.Equal(t, "Use the earlier result of 'read' instead of repeating the call, or change the approach.", s.Next)
	assert.Contains(t, s.String(), "The turn was stopped: a call of 'read' was aborted (duplicate).\n")

	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"stopped":true,"stopped_by":"duplicate","stopped_tool":"read"`)

	// A later Abort does not change what stopped the turn.
	tr.ShouldSkip(Call{})
	assert.Equal(t, "read", tr.Summary().StoppedTool)

	tr.Reset()
	s = tr.Summary()
	assert.False(t, s.Stopped)
	assert.Contains(t, s.String(), "The turn was not stopped.\n")
	b, err = json.Marshal(s)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "stopped_by")
}

// The session summary keeps what Reset clears from the turn's.
func TestSessionSummary(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: 2})
	run(t, tr, []step{
		allow(call("search", `{"query":"a"}`), "1"),
		allow(call("read", `{"path":"a"}`), "2"),
		abort(call("read", `{"path":"b"}`), ReasonBudget),
	})
	tr.Reset()
	run(t, tr, []step{allow(call("read", `{"path":"c"}`), "3")})
	tr.ShouldSkip(Call{}) // no tool name: skipped, counted in the session
	tr.Reset()

	turn := tr.Summary()
	assert.Equal(t, 0, turn.Calls)
	s := tr.SessionSummary()
	assert.True(t, s.Session)
	assert.Equal(t, 3, s.Turn)
	assert.Equal(t, 2, s.StoppedTurns)
	assert.Equal(t, 3, s.Calls)
	assert.Equal(t, 3, s.NewResults)
	assert.Equal(t, 2, s.Skipped)
	require.Len(t, s.Tools, 2)
	assert.Equal(t, "read", s.Tools[0].Tool)
	assert.Equal(t, 2, s.Tools[0].Calls)
	assert.Equal(t, map[Reason]int{ReasonBudget: 1}, s.Tools[0].SkipReasons)
	assert.Contains(t, s.String(), "toolguard session summary, 3 turns (2 stopped): 3 calls executed, 0 failed, 3 with new results, 2 skipped.\n")
	assert.Contains(t, s.String(), "The current turn was not stopped.\n")
}
