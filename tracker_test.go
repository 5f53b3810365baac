package toolguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// step is one call of a scenario: the call, what running it returns, and
// what the Tracker must decide. wantPhase, when set, is checked against
// Record's answer (allowed calls) or Decision.Phase (skipped calls).
type step struct {
	call      Call
	result    string
	err       error
	want      Verdict
	reason    Reason
	wantPhase *Phase
	round     int // steps with the same non-zero round are checked together
}

func call(tool, args string) Call { return Call{Tool: tool, Args: json.RawMessage(args)} }

func ph(p Phase) *Phase { return &p }

func allow(c Call, result string) step { return step{call: c, result: result, want: Allow} }

func fail(c Call, err string) step { return step{call: c, err: errors.New(err), want: Allow} }

func hint(c Call, r Reason) step { return step{call: c, want: Hint, reason: r} }

func abort(c Call, r Reason) step { return step{call: c, want: Abort, reason: r} }

// run plays the steps against tr and names the first step that goes wrong.
func run(t *testing.T, tr *Tracker, steps []step) {
	t.Helper()
	for i := 0; i < len(steps); i++ {
		// Gather a round.
		j := i + 1
		for steps[i].round != 0 && j < len(steps) && steps[j].round == steps[i].round {
			j++
		}
		var ds []Decision
		if j-i > 1 {
			calls := make([]Call, 0, j-i)
			for _, s := range steps[i:j] {
				calls = append(calls, s.call)
			}
			ds = tr.ShouldSkipRound(calls)
		} else {
			ds = []Decision{tr.ShouldSkip(steps[i].call)}
		}
		for k, d := range ds {
			s := steps[i+k]
			name := fmt.Sprintf("step %d (%s %s)", i+k+1, s.call.Tool, s.call.Args)
			require.Equal(t, s.want, d.Verdict, "%s: verdict; message %q", name, d.Message)
			require.Equal(t, s.reason, d.Reason, "%s: reason", name)
			if d.Verdict != Allow {
				marker := HintMarker
				if d.Reason == ReasonBudget {
					marker = budgetMarker // a used-up budget is not a loop
				}
				require.True(t, strings.HasPrefix(d.Message, marker), "%s: message %q lacks the marker %s", name, d.Message, marker)
				require.Contains(t, d.Message, "not executed", name)
				if s.wantPhase != nil {
					require.Equal(t, *s.wantPhase, d.Phase, "%s: phase", name)
				}
			}
			if d.Verdict == Abort {
				require.Error(t, d.Err, name)
			}
		}
		for k, d := range ds {
			s := steps[i+k]
			if d.Verdict != Allow {
				continue
			}
			p := tr.Record(s.call, Outcome{Result: s.result, Err: s.err})
			if s.wantPhase != nil {
				require.Equal(t, *s.wantPhase, p, "step %d (%s): phase after Record", i+k+1, s.call.Tool)
			}
		}
		i = j - 1
	}
}

func TestExactDuplicates(t *testing.T) {
	a := call("read", `{"path":"a.go"}`)
	aReordered := call("read", `{ "path" : "a.go" }`)
	b := call("read", `{"path":"b.go"}`)
	readOnly := Policy{Tools: map[string]ToolPolicy{"read": {ReadOnly: true}}}
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{"third identical call fires with the default MaxRepeats 2", Policy{}, []step{
			allow(a, "x"), allow(aReordered, "x"), hint(a, ReasonDuplicate),
		}},
		{"different arguments of a read-only tool count on their own", readOnly, []step{
			allow(a, "x"), allow(b, "y"), allow(a, "x"), allow(b, "y"), hint(a, ReasonDuplicate), hint(b, ReasonDuplicate),
		}},
		{"a call that may have changed the world starts the count over", Policy{}, []step{
			// b is new and not read-only: a may answer differently after it.
			allow(a, "x"), allow(a, "x"), allow(b, "y"), allow(a, "x"), allow(a, "x"), hint(a, ReasonDuplicate),
		}},
		{"MaxRepeats 1 blocks the second identical call", Policy{MaxRepeats: 1}, []step{
			allow(a, "x"), hint(a, ReasonDuplicate),
		}},
		{"a poll whose result changes never fires", Policy{}, []step{
			allow(a, "1"), allow(a, "2"), allow(a, "3"), allow(a, "4"), allow(a, "5"), allow(a, "6"),
		}},
		{"the call that made progress counts as 1", Policy{}, []step{
			allow(a, "1"), allow(a, "1"), hint(a, ReasonDuplicate),
		}},
		{"progress after a repeat restarts the count", Policy{MaxRepeats: 3}, []step{
			allow(a, "1"), allow(a, "1"), allow(a, "2"), allow(a, "2"), allow(a, "2"), hint(a, ReasonDuplicate),
		}},
		{"a failure that reads differently is progress, the same failure is not", Policy{MaxFailures: -1}, []step{
			allow(a, "1"), fail(a, "boom"), fail(a, "boom"), hint(a, ReasonDuplicate),
		}},
		{"a failure is masked like a result", Policy{MaxFailures: -1}, []step{
			fail(a, "timeout after 1.5s"), fail(a, "timeout after 2.1s"), hint(a, ReasonDuplicate),
		}},
		{"hint, then abort when the model insists", Policy{}, []step{
			allow(a, "x"), allow(a, "x"), hint(a, ReasonDuplicate), abort(a, ReasonDuplicate),
		}},
		{"hint, another call, then abort on the hinted call", readOnly, []step{
			allow(a, "x"), allow(a, "x"), hint(a, ReasonDuplicate), allow(b, "y"), abort(a, ReasonDuplicate),
		}},
		{"ActionAbort aborts the first firing", Policy{Action: ActionAbort}, []step{
			allow(a, "x"), allow(a, "x"), abort(a, ReasonDuplicate),
		}},
		{"negative MaxRepeats switches the check off", Policy{MaxRepeats: -1}, []step{
			allow(a, "x"), allow(a, "x"), allow(a, "x"), allow(a, "x"),
		}},
		{"a per-tool MaxRepeats raises the threshold of a polling tool", Policy{Tools: map[string]ToolPolicy{"read": {MaxRepeats: 4}}}, []step{
			allow(a, "x"), allow(a, "x"), allow(a, "x"), allow(a, "x"), hint(a, ReasonDuplicate),
		}},
		{"exempt tools never repeat", Policy{Tools: map[string]ToolPolicy{"read": {Exempt: true}}}, []step{
			allow(a, "x"), allow(a, "x"), allow(a, "x"), allow(a, "x"),
		}},
		{"ignored argument fields do not make a call different", Policy{Tools: map[string]ToolPolicy{"poll": {IgnoreArgs: []string{"request_id"}}}}, []step{
			allow(call("poll", `{"job":1,"request_id":"r1"}`), "x"),
			allow(call("poll", `{"job":1,"request_id":"r2"}`), "x"),
			hint(call("poll", `{"job":1,"request_id":"r3"}`), ReasonDuplicate),
		}},
		{"numbers compare by value", Policy{}, []step{
			allow(call("get", `{"n":1}`), "x"), allow(call("get", `{"n":1.0}`), "x"), hint(call("get", `{"n":1e0}`), ReasonDuplicate),
		}},
		{"no arguments, null and {} are one call", Policy{}, []step{
			allow(call("now", ``), "x"), allow(call("now", `null`), "x"), hint(call("now", `{}`), ReasonDuplicate),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { run(t, NewTracker(tt.policy), tt.steps) })
	}
}

func TestProgressIgnoresVolatileNoise(t *testing.T) {
	status := call("status", `{"job":"build"}`)
	run(t, NewTracker(Policy{}), []step{
		allow(status, "running, checked at 2024-05-20T10:00:00Z, took 1.23s, trace 0123456789abcdef0123"),
		allow(status, "running, checked at 2024-05-20T10:00:05Z, took 450ms, trace fedcba9876543210fedc"),
		hint(status, ReasonDuplicate),
	})
	run(t, NewTracker(Policy{}), []step{
		allow(status, "request 123e4567-e89b-12d3-a456-426614174000: running"),
		allow(status, "request 9b2c7f1e-1d2a-4c3b-8e9f-0a1b2c3d4e5f: running"),
		hint(status, ReasonDuplicate),
	})
	run(t, NewTracker(Policy{}), []step{
		allow(status, "running at 2024-05-20T10:00:00Z"),
		allow(status, "done at 2024-05-20T10:00:05Z"),
		allow(status, "done at 2024-05-20T10:00:09Z"),
		hint(status, ReasonDuplicate),
	})
}

func TestPendingCallsCount(t *testing.T) {
	// Calls allowed but not yet recorded count toward MaxRepeats.
	tr := NewTracker(Policy{})
	a := call("read", `{"path":"a"}`)
	require.Equal(t, Allow, tr.ShouldSkip(a).Verdict)
	require.Equal(t, Allow, tr.ShouldSkip(a).Verdict)
	require.Equal(t, Hint, tr.ShouldSkip(a).Verdict)
	tr.Record(a, Outcome{Result: "1"})
	tr.Record(a, Outcome{Result: "2"})
	// The second result was new: one call with progress, none pending.
	require.Equal(t, Allow, tr.ShouldSkip(a).Verdict)
}

func TestToolLimitPerTurn(t *testing.T) {
	p := Policy{Tools: map[string]ToolPolicy{"search_*": {Limit: 2}, "search_web": {Limit: 1}}}
	tr := NewTracker(p)
	run(t, tr, []step{
		allow(call("search_web", `{"q":"a"}`), "1"),
		hint(call("search_web", `{"q":"b totally different"}`), ReasonToolLimit),
		allow(call("search_docs", `{"x":1}`), "1"),
		allow(call("search_docs", `{"x":2}`), "2"),
		hint(call("search_docs", `{"x":3}`), ReasonToolLimit),
		abort(call("search_docs", `{"x":4}`), ReasonToolLimit),
	})
	d := NewTracker(Policy{Tools: map[string]ToolPolicy{"t": {Limit: 1}}})
	d.ShouldSkip(call("t", `{}`))
	d.Record(call("t", `{}`), Outcome{})
	got := d.ShouldSkip(call("t", `{"n":2}`))
	assert.Contains(t, got.Message, "Tool 't' has reached its execution limit (1) for this turn")
	// A new turn restores the per-turn limit.
	tr.Reset()
	run(t, tr, []step{allow(call("search_web", `{"q":"c"}`), "1")})
}

func TestCheckOrder(t *testing.T) {
	// Per-turn limit first, then identical, then similar.
	p := Policy{MaxRepeats: 1, SimilarIgnoresResults: true, Tools: map[string]ToolPolicy{"web_search": {Limit: 2}}}
	q := call("web_search", `{"query":"fix bug"}`)
	run(t, NewTracker(p), []step{
		allow(q, "r"),
		hint(q, ReasonDuplicate),
		hint(call("web_search", `{"query":"fix the bug"}`), ReasonSimilarQuery),
		allow(call("web_search", `{"query":"weather in paris"}`), "r2"),
		hint(call("web_search", `{"query":"golang generics"}`), ReasonToolLimit),
		abort(q, ReasonDuplicate), // hinted before: one escalation per call
	})
}

func TestSimilarQueries(t *testing.T) {
	a := call("web_search", `{"query":"How do I reset my password?"}`)
	b := call("web_search", `{"query":"how do i reset my password"}`)
	c := call("web_search", `{"query":"weather in paris"}`)
	d := call("web_search", `{"query":"weather in london"}`)
	del := call("db_query", `{"q":"delete user"}`)
	deact := call("db_query", `{"q":"deactivate user"}`)
	blind := Policy{SimilarIgnoresResults: true}
	t.Run("result-blind: a similar query from an earlier round fires", func(t *testing.T) {
		run(t, NewTracker(blind), []step{
			allow(a, "r"), hint(b, ReasonSimilarQuery),
		})
	})
	t.Run("a reworded query after a fruitful one is refinement", func(t *testing.T) {
		run(t, NewTracker(Policy{}), []step{
			allow(call("web_search", `{"query":"Chariots of Fire true story"}`), "a film of 1981"),
			allow(call("web_search", `{"query":"Chariots of Fire true story runners"}`), "Harold Abrahams and Eric Liddell"),
		})
	})
	t.Run("a similar query after similar ones that brought nothing new fires", func(t *testing.T) {
		run(t, NewTracker(Policy{}), []step{
			allow(call("web_search", `{"query":"fix bug"}`), "r"),
			allow(call("web_search", `{"query":"fix the bug"}`), "r"),
			hint(call("web_search", `{"query":"fix a bug"}`), ReasonSimilarQuery),
			abort(call("web_search", `{"query":"Fix the bugs!"}`), ReasonSimilarQuery),
		})
	})
	t.Run("another similar query after the hint aborts", func(t *testing.T) {
		run(t, NewTracker(blind), []step{
			allow(call("web_search", `{"query":"fix bug"}`), "r"),
			hint(call("web_search", `{"query":"fix the bug"}`), ReasonSimilarQuery),
			abort(call("web_search", `{"query":"Fix the bug!"}`), ReasonSimilarQuery),
		})
	})
	t.Run("different questions do not fire", func(t *testing.T) {
		run(t, NewTracker(blind), []step{allow(c, "r"), allow(d, "r"), allow(del, "r"), allow(deact, "r")})
	})
	t.Run("word order does not matter", func(t *testing.T) {
		run(t, NewTracker(blind), []step{
			allow(call("web_search", `{"query":"how to fix null pointer exception java"}`), "r"),
			hint(call("web_search", `{"query":"java null pointer exception fix"}`), ReasonSimilarQuery),
		})
		run(t, NewTracker(blind), []step{
			allow(call("web_search", `{"query":"weather in Paris today"}`), "r"),
			hint(call("web_search", `{"query":"Paris weather today"}`), ReasonSimilarQuery),
		})
	})
	t.Run("another page, offset or scope is a new question", func(t *testing.T) {
		q := func(args string) Call { return call("web_search", args) }
		run(t, NewTracker(Policy{}), []step{
			allow(q(`{"query":"golang generics tutorial"}`), "r"),
			allow(q(`{"query":"golang generics tutorial","page":2}`), "r"),
			allow(q(`{"query":"golang generics tutorial","page":3}`), "r"),
			allow(q(`{"query":"golang generics tutorial","page":4}`), "r"),
		})
		run(t, NewTracker(blind), []step{
			allow(call("search_code", `{"query":"ctx.TODO()","path":"pkg/api"}`), "r"),
			allow(call("search_code", `{"query":"ctx.TODO()","path":"pkg/store"}`), "r"),
			allow(call("search_code", `{"query":"ctx TODO","path":"pkg/cmd"}`), "r"),
			hint(call("search_code", `{"query":"ctx TODO","path":"pkg/api"}`), ReasonSimilarQuery),
		})
	})
	t.Run("similar queries inside one round are distinct questions", func(t *testing.T) {
		s1, s2 := allow(a, "r"), allow(b, "r")
		s1.round, s2.round = 1, 1
		run(t, NewTracker(blind), []step{s1, s2, hint(call("web_search", `{"query":"how do I reset my password"}`), ReasonSimilarQuery)})
	})
	t.Run("only search tools", func(t *testing.T) {
		run(t, NewTracker(blind), []step{
			allow(call("send_email", `{"text":"fix bug"}`), "ok"),
			allow(call("send_email", `{"text":"fix the bug"}`), "ok"),
		})
	})
	t.Run("ToolPolicy.Search and SearchTools opt tools in, NoSearch takes one out", func(t *testing.T) {
		p := blind
		p.SearchTools = []string{"ask_*"}
		p.Tools = map[string]ToolPolicy{"kb": {Search: true}, "ask_human": {NoSearch: true}}
		run(t, NewTracker(p), []step{
			allow(call("ask_docs", `{"question":"fix bug"}`), "r"),
			hint(call("ask_docs", `{"question":"fix the bug"}`), ReasonSimilarQuery),
			allow(call("kb", `{"prompt":"fix bug"}`), "r"),
			hint(call("kb", `{"prompt":"fix the bug"}`), ReasonSimilarQuery),
			allow(call("web_search", `{"query":"fix bug"}`), "r"),
			allow(call("web_search", `{"query":"fix the bug"}`), "r"),
			allow(call("ask_human", `{"question":"fix bug"}`), "r"),
			allow(call("ask_human", `{"question":"fix the bug"}`), "r"),
		})
		p = blind
		p.Tools = map[string]ToolPolicy{"web_search": {NoSearch: true}}
		run(t, NewTracker(p), []step{
			allow(call("web_search", `{"query":"fix bug"}`), "r"),
			allow(call("web_search", `{"query":"fix the bug"}`), "r"),
		})
	})
	t.Run("the query comes from the first key in order", func(t *testing.T) {
		run(t, NewTracker(blind), []step{
			allow(call("web_search", `{"text":"alpha beta","query":"fix bug"}`), "r"),
			hint(call("web_search", `{"query":"fix the bug","text":"alpha beta"}`), ReasonSimilarQuery),
		})
	})
	t.Run("a threshold out of range switches the check off", func(t *testing.T) {
		run(t, NewTracker(Policy{SimilarityThreshold: 1.5, SimilarIgnoresResults: true}), []step{allow(a, "r"), allow(b, "r")})
		run(t, NewTracker(Policy{SimilarityThreshold: -1, SimilarIgnoresResults: true}), []step{allow(a, "r"), allow(b, "r")})
	})
	t.Run("the message", func(t *testing.T) {
		tr := NewTracker(blind)
		tr.ShouldSkip(a)
		tr.Record(a, Outcome{Result: "r"})
		assert.Contains(t, tr.ShouldSkip(b).Message, "Tool 'web_search' was already executed with a similar query")
	})
}

func TestRepeatedFailures(t *testing.T) {
	run1 := call("bash", `{"command":"pytest tests/a.py --maxfail=1"}`)
	run2 := call("bash", `{"command":"pytest tests/a.py --maxfail=2"}`)
	run3 := call("bash", `{"command":"pytest -x tests/a.py"}`)
	diag := call("bash", `{"command":"ls tests"}`)
	next := call("bash", `{"command":"pip list"}`)
	retry := call("bash", `{"command":"pytest -v tests/a.py"}`)
	edit := call("bash", `{"command":"sed -i s/x/y/ tests/a.py"}`)
	e1 := "exit status 4: file not found: '/work/tests/a.py' (line 12)"
	e2 := "exit status 4: file not found: '/work/tests/b.py' (line 7)"
	tests := []struct {
		name  string
		steps []step
	}{
		{"three equivalent failures, then a hint on the next retry, one attempt, then abort", []step{
			fail(run1, e1), fail(run2, e2), fail(run3, e1),
			hint(retry, ReasonRepeatedFailure),
			fail(diag, e2),
			abort(retry, ReasonRepeatedFailure),
			allow(next, "pip 24.0"), // another approach is not a retry
		}},
		{"another approach after three failures runs", []step{
			fail(run1, e1), fail(run2, e2), fail(run3, e1),
			allow(next, "pip 24.0"),
		}},
		{"the evidence-backed attempt may succeed and starts over", []step{
			fail(run1, e1), fail(run2, e2), fail(run3, e1),
			hint(retry, ReasonRepeatedFailure),
			allow(diag, "a.py"),
			fail(run1, e1), fail(run2, e1),
			allow(retry, "ok"),
		}},
		{"progress elsewhere starts over: an edit between the runs", []step{
			fail(run1, e1), fail(run2, e2), allow(edit, "ok"), fail(run3, e1), fail(run1, e1),
			allow(retry, "ok"),
		}},
		{"the same call fails whatever its error text", []step{
			fail(run1, e1), fail(run1, "segmentation fault"), fail(run1, "killed"),
			hint(run1, ReasonRepeatedFailure),
		}},
		{"a different failure is a new fact", []step{
			fail(run1, e1), fail(run2, e2),
			fail(run3, "permission denied"),
			allow(next, "ok"),
		}},
		{"a success starts over", []step{
			fail(run1, e1), fail(run2, e2), allow(diag, "ok"), fail(run3, e1), allow(next, "ok"),
		}},
		{"failures of other tools do not count", []step{
			fail(run1, e1), fail(call("grep", `{"p":"x"}`), e1), fail(run2, e2), allow(next, "ok"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { run(t, NewTracker(Policy{}), tt.steps) })
	}
	t.Run("the message tells the model to diagnose", func(t *testing.T) {
		tr := NewTracker(Policy{MaxFailures: 1})
		tr.ShouldSkip(run1)
		tr.Record(run1, Outcome{Err: errors.New(e1)})
		d := tr.ShouldSkip(run2)
		require.Equal(t, Hint, d.Verdict)
		for _, w := range []string{"Stop retrying", "read the full error", "interface, path, permission or precondition", "one evidence-backed attempt", "report the blocker"} {
			assert.Contains(t, d.Message, w)
		}
	})
	t.Run("ActionAbort aborts at once", func(t *testing.T) {
		run(t, NewTracker(Policy{Action: ActionAbort}), []step{
			fail(run1, e1), fail(run2, e2), fail(run3, e1), abort(retry, ReasonRepeatedFailure),
		})
	})
	t.Run("exempt tools never count as repeated failures", func(t *testing.T) {
		run(t, NewTracker(Policy{Tools: map[string]ToolPolicy{"bash": {Exempt: true}}}), []step{
			fail(run1, e1), fail(run2, e2), fail(run3, e1), allow(next, "ok"),
		})
	})
}

func TestCycles(t *testing.T) {
	A := call("a", `{"n":1}`)
	B := call("b", `{"n":2}`)
	C := call("c", `{"n":3}`)
	D := call("d", `{"n":4}`)
	high := Policy{MaxRepeats: 10}
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{"A,B three times, then A fires", high, []step{
			allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), hint(A, ReasonCycle), abort(A, ReasonCycle),
		}},
		{"A,B,C three times, then A fires", high, []step{
			allow(A, "1"), allow(B, "2"), allow(C, "3"), allow(A, "1"), allow(B, "2"), allow(C, "3"),
			allow(A, "1"), allow(B, "2"), allow(C, "3"), hint(A, ReasonCycle),
		}},
		{"period 4 is found at the default maximum", high, []step{
			allow(A, "1"), allow(B, "2"), allow(C, "3"), allow(D, "4"), allow(A, "1"), allow(B, "2"), allow(C, "3"), allow(D, "4"),
			allow(A, "1"), allow(B, "2"), allow(C, "3"), allow(D, "4"), hint(A, ReasonCycle),
		}},
		{"a broken cycle starts over", high, []step{
			allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), allow(C, "3"), allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"),
			allow(A, "1"), allow(B, "2"), hint(A, ReasonCycle),
		}},
		{"a repeated call with a new result is progress", high, []step{
			allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "new"), allow(A, "1"), allow(B, "new"), allow(A, "1"),
		}},
		{"breaking the cycle after the hint is allowed", high, []step{
			allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), hint(A, ReasonCycle), allow(C, "3"), allow(A, "1"),
		}},
		{"with the default MaxRepeats the duplicate rule fires first", Policy{Tools: map[string]ToolPolicy{"*": {ReadOnly: true}}}, []step{
			allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), hint(A, ReasonDuplicate),
		}},
		{"CycleRepeats 2 fires earlier", Policy{MaxRepeats: 10, CycleRepeats: 2}, []step{
			allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), hint(A, ReasonCycle),
		}},
		{"period beyond CyclePeriod is not detected", Policy{MaxRepeats: 10, CyclePeriod: 2}, []step{
			allow(A, "1"), allow(B, "2"), allow(C, "3"), allow(A, "1"), allow(B, "2"), allow(C, "3"), allow(A, "1"), allow(B, "2"), allow(C, "3"), allow(A, "1"),
		}},
		{"cycle detection off", Policy{MaxRepeats: 10, CyclePeriod: -1}, []step{
			allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), allow(A, "1"),
		}},
		{"A,A,B,B is not a cycle of distinct calls", high, []step{
			allow(A, "1"), allow(A, "1"), allow(B, "2"), allow(B, "2"), allow(A, "1"), allow(A, "1"), allow(B, "2"), allow(B, "2"),
			allow(A, "1"), allow(A, "1"), allow(B, "2"), allow(B, "2"), allow(A, "1"),
		}},
		{"exempt tools never form cycles", Policy{MaxRepeats: 10, Tools: map[string]ToolPolicy{"a": {Exempt: true}}}, []step{
			allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { run(t, NewTracker(tt.policy), tt.steps) })
	}
}

func TestRollingWindow(t *testing.T) {
	noSimilar := Policy{SimilarityThreshold: -1}
	q := func(s string) Call { return call("web_search", fmt.Sprintf(`{"query":%q}`, s)) }
	f := func(u string) Call { return call("fetch_page", fmt.Sprintf(`{"url":%q}`, u)) }
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{"the sixth similar search without new results fires", noSimilar, []step{
			allow(q("fix bug"), "same"), allow(q("fix the bug"), "same"), allow(q("fix a bug"), "same"),
			allow(q("fix bugs"), "same"), allow(q("fix the bugs"), "same"), hint(q("fix that bug"), ReasonChurn),
		}},
		{"searches with new results are not counted", noSimilar, []step{
			allow(q("fix bug"), "1"), allow(q("fix the bug"), "2"), allow(q("fix a bug"), "3"),
			allow(q("fix bugs"), "4"), allow(q("fix the bugs"), "5"), allow(q("fix that bug"), "6"), allow(q("fix this bug"), "7"),
		}},
		{"fetches of one host and path, query and fragment ignored", Policy{}, []step{
			allow(f("https://example.com/a?page=1"), "same"), allow(f("https://example.com/a?page=2"), "same"),
			allow(f("https://EXAMPLE.com/a#x"), "same"), allow(f("https://example.com/a?page=3"), "same"),
			allow(f("https://example.com/a?page=4"), "same"), hint(f("https://example.com/a?page=5"), ReasonChurn),
		}},
		{"fetches of different paths are batch work", Policy{}, []step{
			allow(f("https://example.com/1"), "same"), allow(f("https://example.com/2"), "same"), allow(f("https://example.com/3"), "same"),
			allow(f("https://example.com/4"), "same"), allow(f("https://example.com/5"), "same"), allow(f("https://example.com/6"), "same"),
			allow(f("https://example.com/7"), "same"),
		}},
		{"other tools are not subject to the window", Policy{}, []step{
			allow(call("edit", `{"file":"a"}`), "ok"), allow(call("edit", `{"file":"b"}`), "ok"), allow(call("edit", `{"file":"c"}`), "ok"),
			allow(call("edit", `{"file":"d"}`), "ok"), allow(call("edit", `{"file":"e"}`), "ok"), allow(call("edit", `{"file":"f"}`), "ok"),
			allow(call("edit", `{"file":"g"}`), "ok"),
		}},
		{"identical calls stay governed by MaxRepeats", Policy{Tools: map[string]ToolPolicy{"fetch_page": {MaxRepeats: 8}}}, []step{
			allow(f("https://example.com/a"), "same"), allow(f("https://example.com/a"), "same"), allow(f("https://example.com/a"), "same"),
			allow(f("https://example.com/a"), "same"), allow(f("https://example.com/a"), "same"), allow(f("https://example.com/a"), "same"),
			allow(f("https://example.com/a"), "same"), allow(f("https://example.com/a"), "same"), hint(f("https://example.com/a"), ReasonDuplicate),
		}},
		{"calls older than the window fall out", Policy{Window: 6}, []step{
			allow(f("https://example.com/a?1"), "same"), allow(f("https://example.com/a?2"), "same"), allow(f("https://example.com/a?3"), "same"),
			allow(f("https://example.com/a?4"), "same"), allow(call("x", `{"url":"https://other.org/1"}`), "o"), allow(call("x", `{"url":"https://other.org/2"}`), "p"),
			allow(f("https://example.com/a?5"), "same"), allow(f("https://example.com/a?6"), "same"),
		}},
		{"WindowLimit from a quota file", Policy{WindowLimit: 2}, []step{
			allow(f("https://example.com/a?1"), "same"), allow(f("https://example.com/a?2"), "same"), hint(f("https://example.com/a?3"), ReasonChurn),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { run(t, NewTracker(tt.policy), tt.steps) })
	}
}

func TestBudget(t *testing.T) {
	n := func(i int) Call { return call("tool", fmt.Sprintf(`{"i":%d}`, i)) }
	with := func(s step, p Phase) step { s.wantPhase = ph(p); return s }
	t.Run("nudge at 75%, wind-down at 100%, refusal after", func(t *testing.T) {
		tr := NewTracker(Policy{MaxCallsPerTurn: 4})
		run(t, tr, []step{
			with(allow(n(1), "r"), PhaseNormal),
			with(allow(n(2), "r"), PhaseNormal),
			with(allow(n(3), "r"), PhaseNudge), // ⌊0.75·4⌋ = 3
			with(allow(n(4), "r"), PhaseWindDown),
			with(abort(n(5), ReasonBudget), PhaseExhausted),
		})
		d := tr.ShouldSkip(n(6))
		require.ErrorIs(t, d.Err, ErrBudgetExhausted)
		var be *BudgetError
		require.ErrorAs(t, d.Err, &be)
		assert.Equal(t, 4, be.Limit)
		assert.Contains(t, d.Err.Error(), "all 4 available tool calls for this turn were used")
		assert.Equal(t, PhaseExhausted, tr.Guidance().Phase)
	})
	t.Run("the default is 300 calls with a nudge at 225", func(t *testing.T) {
		tr := NewTracker(Policy{})
		for i := 1; i <= 300; i++ {
			require.Equal(t, Allow, tr.ShouldSkip(n(i)).Verdict)
			p := tr.Record(n(i), Outcome{Result: "r"})
			switch {
			case i < 225:
				require.Equal(t, PhaseNormal, p, i)
			case i < 300:
				require.Equal(t, PhaseNudge, p, i)
				require.Equal(t, fmt.Sprintf("You have used %d of 300 tool calls. Start wrapping up.", i), tr.Guidance().Message)
			default:
				require.Equal(t, PhaseWindDown, p)
			}
		}
		g := tr.Guidance()
		assert.True(t, g.StripTools)
		assert.Contains(t, g.Message, "Summarize your work and answer the user's question.")
		assert.Equal(t, Abort, tr.ShouldSkip(n(301)).Verdict)
	})
	t.Run("parallel calls that would overrun are refused", func(t *testing.T) {
		tr := NewTracker(Policy{MaxCallsPerTurn: 3})
		for i := 1; i <= 3; i++ {
			require.Equal(t, Allow, tr.ShouldSkip(n(i)).Verdict)
		}
		d := tr.ShouldSkip(n(4))
		require.Equal(t, Abort, d.Verdict)
		require.ErrorIs(t, d.Err, ErrBudgetExhausted)
		// Three parallel calls count three.
		for i := 1; i <= 3; i++ {
			tr.Record(n(i), Outcome{Result: "r"})
		}
		assert.Equal(t, PhaseWindDown, tr.Guidance().Phase)
	})
	t.Run("counters reset between turns", func(t *testing.T) {
		tr := NewTracker(Policy{MaxCallsPerTurn: 2})
		run(t, tr, []step{allow(n(1), "r"), allow(n(2), "r"), abort(n(3), ReasonBudget)})
		tr.Reset()
		assert.Equal(t, PhaseNormal, tr.Guidance().Phase)
		run(t, tr, []step{allow(n(1), "r"), allow(n(2), "r"), abort(n(3), ReasonBudget)})
	})
	t.Run("negative is unlimited", func(t *testing.T) {
		tr := NewTracker(Policy{MaxCallsPerTurn: -1, SessionLimit: -1})
		for i := 0; i < 100; i++ {
			require.Equal(t, Allow, tr.ShouldSkip(n(i)).Verdict)
			require.Equal(t, PhaseNormal, tr.Record(n(i), Outcome{Result: "r"}))
		}
	})
	t.Run("a nudge ratio out of range means no nudge", func(t *testing.T) {
		for _, r := range []float64{-1, 1, 2} {
			tr := NewTracker(Policy{MaxCallsPerTurn: 4, NudgeRatio: r})
			run(t, tr, []step{
				with(allow(n(1), "r"), PhaseNormal), with(allow(n(2), "r"), PhaseNormal),
				with(allow(n(3), "r"), PhaseNormal), with(allow(n(4), "r"), PhaseWindDown),
			})
		}
	})
	t.Run("rounds count once per model response", func(t *testing.T) {
		tr := NewTracker(Policy{MaxCallsPerTurn: 2, CountRounds: true})
		ds := tr.ShouldSkipRound([]Call{n(1), n(2), n(3)})
		for _, d := range ds {
			require.Equal(t, Allow, d.Verdict)
		}
		for i := 1; i <= 3; i++ {
			// ⌊0.75·2⌋ = 1: the first round brings the nudge.
			require.Equal(t, PhaseNudge, tr.Record(n(i), Outcome{Result: "r"}), i)
		}
		ds = tr.ShouldSkipRound([]Call{n(4), n(5)})
		require.Equal(t, Allow, ds[1].Verdict)
		require.Equal(t, PhaseWindDown, tr.Record(n(4), Outcome{Result: "r"}))
		require.Equal(t, PhaseWindDown, tr.Record(n(5), Outcome{Result: "r"}))
		d := tr.ShouldSkip(n(6))
		require.ErrorIs(t, d.Err, ErrBudgetExhausted)
		assert.Contains(t, d.Err.Error(), "all 2 available tool rounds")
	})
}

func TestSkippedCallsInLedger(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Second); return now }
	tr := NewTracker(Policy{MaxRepeats: 1, Now: clock})
	a := call("web_search", `{"query":"Secret Project X status","api_key":"sk-123"}`)
	run(t, tr, []step{allow(a, "token=abc"), hint(a, ReasonDuplicate)})
	b := Call{ID: "call_1", Tool: "bash", Args: json.RawMessage(`{"command":"cat /etc/passwd","timeout":5}`)}
	run(t, tr, []step{fail(b, "denied")})
	l := tr.Ledger()
	require.Len(t, l, 3)
	assert.Equal(t, []uint64{1, 2, 3}, []uint64{l[0].Seq, l[1].Seq, l[2].Seq})
	assert.Equal(t, Allow, l[0].Verdict)
	assert.True(t, l[0].Done && !l[0].Failed)
	assert.True(t, l[0].NewResult)
	assert.Equal(t, time.Second, l[0].Duration)
	assert.Equal(t, "secret project x status", l[0].Purpose)
	assert.Equal(t, Hint, l[1].Verdict)
	assert.Equal(t, ReasonDuplicate, l[1].Reason)
	assert.False(t, l[1].Done || l[1].Failed)
	assert.Equal(t, l[0].ArgsHash, l[1].ArgsHash)
	assert.True(t, l[2].Done && l[2].Failed)
	assert.Equal(t, "call_1", l[2].CallID)
	assert.Equal(t, "command,timeout", l[2].Purpose)
	raw, err := json.Marshal(l)
	require.NoError(t, err)
	for _, secret := range []string{"sk-123", "token=abc", "/etc/passwd", "denied"} {
		assert.NotContains(t, string(raw), secret)
	}
	// KeepRaw keeps them when asked.
	tr = NewTracker(Policy{KeepRaw: true})
	run(t, tr, []step{allow(b, "root:x:0:0")})
	l = tr.Ledger()
	assert.JSONEq(t, string(b.Args), string(l[0].Args))
	assert.Equal(t, "root:x:0:0", l[0].Result)
}

func TestLedgerIsBounded(t *testing.T) {
	tr := NewTracker(Policy{LedgerSize: 10, MaxCallsPerTurn: -1, SessionLimit: -1})
	for i := 0; i < 1000; i++ {
		c := call("t", fmt.Sprintf(`{"i":%d}`, i))
		tr.ShouldSkip(c)
		tr.Record(c, Outcome{Result: "r"})
	}
	l := tr.Ledger()
	require.Len(t, l, 10)
	assert.Equal(t, uint64(991), l[0].Seq)
	assert.Equal(t, uint64(1000), l[9].Seq)
	assert.Equal(t, 1000, tr.Summary().Calls)
}

func TestRecordAfterReset(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: 2})
	slow := Call{ID: "slow", Tool: "build", Args: json.RawMessage(`{}`)}
	require.Equal(t, Allow, tr.ShouldSkip(slow).Verdict)
	tr.Reset()
	// The late Record belongs to turn 1: it does not use turn 2's budget.
	assert.Equal(t, PhaseNormal, tr.Record(slow, Outcome{Result: "done"}))
	run(t, tr, []step{allow(call("a", `{}`), "1"), allow(call("b", `{}`), "2")})
	l := tr.Ledger()
	require.Len(t, l, 3)
	assert.Equal(t, 1, l[0].Turn)
	assert.True(t, l[0].Done && !l[0].Failed)
	assert.Equal(t, 2, l[1].Turn)
	assert.Equal(t, 2, tr.Summary().Calls)
}

func TestRecordWithoutCheck(t *testing.T) {
	tr := NewTracker(Policy{})
	a := call("read", `{"p":1}`)
	tr.Record(a, Outcome{Result: "x"})
	tr.Record(a, Outcome{Result: "x"})
	assert.Equal(t, Hint, tr.ShouldSkip(a).Verdict)
	assert.Len(t, tr.Ledger(), 3)
}

func TestBadInput(t *testing.T) {
	t.Run("empty tool name aborts with a clear error", func(t *testing.T) {
		tr := NewTracker(Policy{})
		d := tr.ShouldSkip(Call{Args: json.RawMessage(`{}`)})
		require.Equal(t, Abort, d.Verdict)
		require.ErrorIs(t, d.Err, ErrInvalidCall)
		assert.Contains(t, d.Err.Error(), "no tool name")
		assert.Equal(t, ReasonInvalidCall, d.Reason)
		assert.Equal(t, PhaseNormal, tr.Record(Call{}, Outcome{}))
		assert.Len(t, tr.Ledger(), 1)
	})
	t.Run("invalid JSON is compared as raw bytes", func(t *testing.T) {
		run(t, NewTracker(Policy{}), []step{
			allow(call("t", `{not json`), "r"), allow(call("t", `{not json`), "r"), hint(call("t", `{not json`), ReasonDuplicate),
			allow(call("t", `{not  json`), "r"),
		})
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		bad := Call{Tool: "web_search\xff", Args: json.RawMessage("{\"query\":\"caf\xe9 \xff\"}")}
		run(t, NewTracker(Policy{}), []step{allow(bad, "\xff\xfe"), allow(bad, "\xff\xfe"), hint(bad, ReasonDuplicate)})
	})
	t.Run("deep nesting", func(t *testing.T) {
		deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
		run(t, NewTracker(Policy{}), []step{allow(call("t", deep), "r"), allow(call("t", deep), "r"), hint(call("t", deep), ReasonDuplicate)})
	})
	t.Run("an 8 MB argument", func(t *testing.T) {
		big := `{"data":"` + strings.Repeat("x", 8<<20) + `"}`
		tr := NewTracker(Policy{})
		run(t, tr, []step{allow(call("upload", big), "r"), allow(call("upload", big), "r"), hint(call("upload", big), ReasonDuplicate)})
		assert.Less(t, len(tr.Ledger()[0].Purpose), 100)
	})
	t.Run("absurd policy values fall back", func(t *testing.T) {
		nan := func() float64 { var z float64; return z / z }()
		p := Policy{
			NudgeRatio: nan, SimilarityThreshold: nan, Action: 42, CyclePeriod: 1000, CycleRepeats: 1 << 30, Window: 1 << 30,
			Tools: map[string]ToolPolicy{"[": {Limit: -5}}, SearchTools: []string{"["}}
		require.Error(t, p.Validate())
		tr := NewTracker(p)
		assert.Equal(t, 0.75, tr.cfg.threshold)
		assert.Equal(t, 225, tr.cfg.nudgeAt)
		assert.Equal(t, ActionHint, tr.cfg.action)
		assert.Equal(t, maxCyclePeriod, tr.cfg.cyclePeriod)
		assert.Equal(t, maxWindow, tr.cfg.window)
		run(t, tr, []step{allow(call("[", `{}`), "r"), allow(call("x", `{}`), "r")})
		assert.NoError(t, Policy{}.Validate())
		for _, name := range PresetNames() {
			p, err := Preset(name)
			require.NoError(t, err)
			assert.NoError(t, p.Validate(), name)
		}
	})
}

func TestConcurrency(t *testing.T) {
	t.Run("64 goroutines against a budget of 10", func(t *testing.T) {
		tr := NewTracker(Policy{MaxCallsPerTurn: 10})
		var wg sync.WaitGroup
		var mu sync.Mutex
		allowed := 0
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				c := call("t", fmt.Sprintf(`{"i":%d}`, i))
				if tr.ShouldSkip(c).Verdict == Allow {
					mu.Lock()
					allowed++
					mu.Unlock()
					tr.Record(c, Outcome{Result: "r"})
				}
			}(i)
		}
		wg.Wait()
		assert.Equal(t, 10, allowed)
	})
	t.Run("32 identical parallel calls with MaxRepeats 2", func(t *testing.T) {
		tr := NewTracker(Policy{MaxRepeats: 2})
		var wg sync.WaitGroup
		var mu sync.Mutex
		verdicts := map[Verdict]int{}
		c := call("t", `{"same":true}`)
		for i := 0; i < 32; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := tr.ShouldSkip(c)
				mu.Lock()
				verdicts[d.Verdict]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		assert.Equal(t, map[Verdict]int{Allow: 2, Hint: 1, Abort: 29}, verdicts)
	})
	t.Run("hammer", func(t *testing.T) {
		var events sync.Map
		tr := NewTracker(Policy{MaxCallsPerTurn: 200, OnEvent: func(ev Event) {
			events.Store(ev.Seq, true)
			_ = tr0(ev) // hooks may call back into the Tracker
		}})
		hookTracker = tr
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 300; i++ {
					c := call([]string{"web_search", "read", "bash"}[i%3], fmt.Sprintf(`{"query":"q %d","i":%d}`, i%7, i%5))
					d := tr.ShouldSkip(c)
					if d.Verdict == Allow {
						var err error
						if i%11 == 0 {
							err = errors.New("boom")
						}
						tr.Record(c, Outcome{Result: fmt.Sprint(i % 4), Err: err})
					}
					switch {
					case i%97 == 0 && g == 0:
						tr.Reset()
					case i%13 == 0:
						_ = tr.Ledger()
						_ = tr.Summary().String()
					}
				}
			}(g)
		}
		wg.Wait()
		l := tr.Ledger()
		for i := 1; i < len(l); i++ {
			require.Equal(t, l[i-1].Seq+1, l[i].Seq)
		}
	})
}

var hookTracker *Tracker

func tr0(ev Event) Phase {
	if hookTracker == nil {
		return PhaseNormal
	}
	return hookTracker.Guidance().Phase
}

func TestRun(t *testing.T) {
	tr := NewTracker(Policy{MaxRepeats: 1, MaxCallsPerTurn: 4})
	runs := 0
	exec := func(ctx context.Context, c Call) (string, error) {
		runs++
		if c.Tool == "fail" {
			return "partial output", errors.New("nope")
		}
		return "result", nil
	}
	ctx := context.Background()
	a := call("t", `{}`)
	r := tr.Run(ctx, a, exec)
	require.NoError(t, r.Err)
	assert.Equal(t, Result{Text: "result", Phase: PhaseNormal}, r)

	// A hint reaches the model as the call's text, and the caller knows it.
	r = tr.Run(ctx, a, exec)
	require.NoError(t, r.Err)
	assert.True(t, r.Decision.Skip())
	assert.Equal(t, Hint, r.Decision.Verdict)
	assert.Equal(t, ReasonDuplicate, r.Decision.Reason)
	assert.Equal(t, r.Decision.Message, r.Text)
	assert.True(t, strings.HasPrefix(r.Text, HintMarker))
	assert.Contains(t, r.Text, "not executed")

	r = tr.Run(ctx, a, exec)
	require.ErrorIs(t, r.Err, ErrLoop)
	assert.Equal(t, Abort, r.Decision.Verdict)
	assert.Equal(t, r.Decision.Message, r.Text, "an Abort still has a text for the model")
	var le *LoopError
	require.ErrorAs(t, r.Err, &le)
	assert.Equal(t, "t", le.Tool)
	assert.Equal(t, ReasonDuplicate, le.Reason)
	assert.Equal(t, 1, le.Count)

	// A failure is the tool's: its output and error, and the phase after it.
	r = tr.Run(ctx, call("fail", `{}`), exec)
	assert.EqualError(t, r.Err, "nope")
	assert.Equal(t, "partial output", r.Text)
	assert.Equal(t, Allow, r.Decision.Verdict)
	assert.Equal(t, 2, runs)
	assert.True(t, tr.Ledger()[3].Done && tr.Ledger()[3].Failed)

	// The phase after the call, without asking the Tracker again.
	assert.Equal(t, PhaseNudge, tr.Run(ctx, call("t", `{"n":3}`), exec).Phase)
	assert.Equal(t, PhaseWindDown, tr.Run(ctx, call("t", `{"n":4}`), exec).Phase)
	r = tr.Run(ctx, call("t", `{"n":5}`), exec)
	assert.ErrorIs(t, r.Err, ErrBudgetExhausted)
	assert.Equal(t, PhaseExhausted, r.Phase)
	assert.Equal(t, 4, runs)
}

func TestRunNilExecutor(t *testing.T) {
	tr := NewTracker(Policy{})
	r := tr.Run(context.Background(), call("t", `{}`), nil)
	assert.ErrorIs(t, r.Err, errNoExecutor)
	assert.True(t, tr.Ledger()[0].Done && tr.Ledger()[0].Failed, "the allowed call is recorded, not left holding its slot")
}

// RunRound checks the calls of one model response as one round, then runs
// the allowed ones in order.
func TestRunRound(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: 3})
	var ran []string
	exec := func(ctx context.Context, c Call) (string, error) {
		ran = append(ran, string(c.Args))
		return "results for " + string(c.Args), nil
	}
	calls := []Call{
		call("web_search", `{"query":"golang generics tutorial"}`),
		call("web_search", `{"query":"golang generics tutorials"}`), // similar, same round: a distinct question
		call("read", `{"path":"a"}`),
		call("read", `{"path":"b"}`), // past the budget: refused before anything ran
	}
	rs := tr.RunRound(context.Background(), calls, exec)
	require.Len(t, rs, 4)
	for i := 0; i < 3; i++ {
		assert.Equal(t, Allow, rs[i].Decision.Verdict, i)
		assert.Equal(t, "results for "+string(calls[i].Args), rs[i].Text)
	}
	assert.Equal(t, Abort, rs[3].Decision.Verdict)
	assert.ErrorIs(t, rs[3].Err, ErrBudgetExhausted)
	assert.Equal(t, []string{`{"query":"golang generics tutorial"}`, `{"query":"golang generics tutorials"}`, `{"path":"a"}`}, ran)
	assert.Equal(t, PhaseWindDown, rs[2].Phase)
	rounds := map[uint64]bool{}
	for _, e := range tr.Ledger() {
		rounds[e.Round] = true
	}
	assert.Len(t, rounds, 1)

	// With CountRounds the round uses one unit.
	tr = NewTracker(Policy{MaxCallsPerTurn: 2, CountRounds: true})
	rs = tr.RunRound(context.Background(), calls, func(context.Context, Call) (string, error) { return "ok", nil })
	for _, r := range rs {
		assert.Equal(t, Allow, r.Decision.Verdict)
	}
	assert.Equal(t, 1, tr.Summary().Budget.Used)
}

// The calls of one WithRound context use one budget unit under CountRounds
// whether they overlap or run one after another.
func TestWithRoundSequentialCallsUseOneUnit(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: 2, CountRounds: true})
	exec := func(context.Context, Call) (string, error) { return "ok", nil }
	round := tr.WithRound(context.Background())
	for i := 0; i < 3; i++ {
		r := tr.Run(round, call("read", fmt.Sprintf(`{"path":"f%d"}`, i)), exec)
		require.Equal(t, Allow, r.Decision.Verdict, "call %d", i)
	}
	assert.Equal(t, 1, tr.Summary().Budget.Used)
	r := tr.Run(context.Background(), call("read", `{"path":"g"}`), exec)
	assert.Equal(t, PhaseWindDown, r.Phase)
	assert.Equal(t, 2, tr.Summary().Budget.Used)

	// A turn remembers a bounded number of finished rounds.
	tr = NewTracker(Policy{MaxCallsPerTurn: -1, CountRounds: true})
	exec = func(context.Context, Call) (string, error) { return "ok", nil }
	for i := 0; i < 10*maxFinishedRounds; i++ {
		tr.Run(tr.WithRound(context.Background()), call("read", fmt.Sprintf(`{"path":"f%d"}`, i)), exec)
	}
	tr.mu.Lock()
	n := len(tr.turn.rounds.open)
	tr.mu.Unlock()
	assert.LessOrEqual(t, n, maxFinishedRounds)
}

// TestShouldSkipRoundContextJoinsTheRound: a round checked with a context
// from WithRound is that round, and a call checked later with the same
// context joins it.
func TestShouldSkipRoundContextJoinsTheRound(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: 2, CountRounds: true})
	check := func(ctx context.Context, calls ...Call) {
		t.Helper()
		for i, d := range tr.ShouldSkipRoundContext(ctx, calls) {
			require.Equal(t, Allow, d.Verdict)
			tr.Record(calls[i], Outcome{Result: "ok"})
		}
	}
	round := tr.WithRound(context.Background())
	check(round, call("read", `{"path":"a"}`), call("read", `{"path":"b"}`))
	c := call("read", `{"path":"c"}`)
	require.Equal(t, Allow, tr.ShouldSkipContext(round, c).Verdict)
	tr.Record(c, Outcome{Result: "ok"})
	assert.Equal(t, 1, tr.Summary().Budget.Used)
	check(context.Background(), call("read", `{"path":"d"}`))
	assert.Equal(t, 2, tr.Summary().Budget.Used, "a context without a round is a new round")
}

func TestEnumStrings(t *testing.T) {
	assert.Equal(t, "allow hint abort", fmt.Sprint(Allow, Hint, Abort))
	assert.Equal(t, "normal nudge wind_down exhausted", fmt.Sprint(PhaseNormal, PhaseNudge, PhaseWindDown, PhaseExhausted))
	assert.Equal(t, "none tool_limit duplicate similar_query repeated_failure cycle budget churn invalid_call",
		fmt.Sprint(ReasonNone, ReasonToolLimit, ReasonDuplicate, ReasonSimilarQuery, ReasonRepeatedFailure, ReasonCycle, ReasonBudget, ReasonChurn, ReasonInvalidCall))
	assert.Equal(t, "hint abort", fmt.Sprint(ActionHint, ActionAbort))
	assert.Equal(t, "calls rounds", fmt.Sprint(unitCalls, unitRounds))
	assert.Equal(t, "Reason(99) Phase(-1)", fmt.Sprint(Reason(99), Phase(-1)))
	var r Reason
	require.NoError(t, r.UnmarshalText([]byte("cycle")))
	assert.Equal(t, ReasonCycle, r)
	require.Error(t, r.UnmarshalText([]byte("nope")))
}

func TestErrors(t *testing.T) {
	le := &LoopError{Tool: "t", Reason: ReasonCycle, Count: 3, Limit: 3}
	assert.ErrorIs(t, le, ErrLoop)
	assert.NotErrorIs(t, le, ErrBudgetExhausted)
	assert.True(t, strings.HasPrefix(le.Error(), "toolguard: "))
	be := &BudgetError{Used: 30, Limit: 30}
	assert.ErrorIs(t, be, ErrBudgetExhausted)
	assert.NotErrorIs(t, be, ErrLoop)
	assert.ErrorIs(t, fmt.Errorf("wrapped: %w", le), ErrLoop)
}

func TestHintCoversItsRound(t *testing.T) {
	// Copies in the round that got the hint were sent before the model could
	// read it: they get the hint too; the next round aborts.
	tr := NewTracker(Policy{})
	c := call("t", `{"a":1}`)
	ds := tr.ShouldSkipRound([]Call{c, c, c, c})
	got := []Verdict{ds[0].Verdict, ds[1].Verdict, ds[2].Verdict, ds[3].Verdict}
	assert.Equal(t, []Verdict{Allow, Allow, Hint, Hint}, got)
	assert.Equal(t, Abort, tr.ShouldSkip(c).Verdict)
}

// TestKeyBound runs more distinct calls than maxKeys through one turn:
// the per-turn key state stays bounded, settled calls seen once are
// forgotten first, and a call still pending keeps its state.
func TestKeyBound(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: -1, MaxRepeats: 2, Tools: map[string]ToolPolicy{"read": {ReadOnly: true}}})
	repeated := call("read", `{"path":"kept"}`)
	require.Equal(t, Allow, tr.ShouldSkip(repeated).Verdict)
	tr.Record(repeated, Outcome{Result: "same"})
	require.Equal(t, Allow, tr.ShouldSkip(repeated).Verdict)
	tr.Record(repeated, Outcome{Result: "same"}) // count 2: not forgotten first
	pending := call("read", `{"path":"pending"}`)
	require.Equal(t, Allow, tr.ShouldSkip(pending).Verdict)

	for i := 0; i < maxKeys+100; i++ {
		c := call("read", fmt.Sprintf(`{"path":"f%d"}`, i))
		require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
		tr.Record(c, Outcome{Result: "x"})
	}
	tr.mu.Lock()
	keys := tr.turn.keys.len()
	tr.mu.Unlock()
	assert.LessOrEqual(t, keys, maxKeys)

	// The repeated call kept its count: the third identical call is a loop.
	d := tr.ShouldSkip(repeated)
	assert.Equal(t, Hint, d.Verdict)
	assert.Equal(t, ReasonDuplicate, d.Reason)
	// The pending call's Record still finds its state.
	tr.Record(pending, Outcome{Result: "late"})
	tr.mu.Lock()
	ks := tr.turn.keys.get(testKey("read", hashArgs(pending.Args, nil)))
	tr.mu.Unlock()
	require.NotNil(t, ks, "a pending call's key is never forgotten")
	assert.True(t, ks.seen)
	assert.Zero(t, ks.pending)
}

// TestToolBound calls more distinct tool names than a session keeps state
// for: every call is still checked and recorded, and the per-tool state
// stays bounded.
func TestToolBound(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: -1})
	n := maxTools + 500
	for i := 0; i < n; i++ {
		c := call(fmt.Sprintf("tool_%d", i), `{}`)
		require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
		tr.Record(c, Outcome{Result: "ok"})
	}
	tr.toolMu.Lock()
	kept := tr.tools.len()
	tr.toolMu.Unlock()
	assert.Equal(t, maxTools, kept)
	s := tr.Summary()
	assert.Equal(t, maxTools, len(s.Tools), "the summary lists the tools with kept state")
	// A kept tool still has its quota.
	first := call("tool_0", `{"i":1}`)
	assert.Equal(t, Allow, tr.ShouldSkip(first).Verdict)
	// A tool past the bound is still checked for repeats.
	extra := call("one_more_tool", `{"q":1}`)
	for i := 0; i < 2; i++ {
		require.Equal(t, Allow, tr.ShouldSkip(extra).Verdict)
		tr.Record(extra, Outcome{Result: "same"})
	}
	d := tr.ShouldSkip(extra)
	assert.Equal(t, Hint, d.Verdict)
	assert.Equal(t, ReasonDuplicate, d.Reason)
}
