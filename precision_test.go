package toolguard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reproductions of legitimate work that the defaults once refused, and
// of loops that escaped escalation, each as the calls a harness makes.

func TestRerunAfterAChange(t *testing.T) {
	build := call("bash", `{"command":"go build ./..."}`)
	write := func(s string) Call { return call("write_file", fmt.Sprintf(`{"path":"a.go","content":%q}`, s)) }
	t.Run("build after each edit", func(t *testing.T) {
		run(t, NewTracker(Policy{}), []step{
			allow(write("a"), "ok"), allow(build, ""), allow(write("b"), "ok"), allow(build, ""),
			allow(write("c"), "ok"), allow(build, ""), allow(write("d"), "ok"), allow(build, ""),
		})
	})
	t.Run("a passing suite whose output differs only by a duration", func(t *testing.T) {
		test := call("bash", `{"command":"go test ./..."}`)
		run(t, NewTracker(Policy{}), []step{
			allow(test, "ok  pkg 0.512s"), allow(write("a"), "ok"), allow(test, "ok  pkg 0.498s"),
			allow(write("b"), "ok"), allow(test, "ok  pkg 0.533s"), allow(write("c"), "ok"), allow(test, "ok  pkg 0.507s"),
		})
	})
	t.Run("a check after a setting changed", func(t *testing.T) {
		speed := call("run_speed_test", `{}`)
		run(t, NewTracker(Policy{}), []step{
			allow(speed, "no connection"), allow(call("toggle_roaming", `{}`), "roaming on"),
			allow(speed, "no connection"), allow(call("toggle_airplane_mode", `{}`), "airplane mode off"),
			allow(speed, "no connection"), allow(call("reset_apn_settings", `{}`), "APN reset"),
			allow(speed, "download 80 Mbps"),
		})
	})
	t.Run("a reproduction script after an install", func(t *testing.T) {
		repro := call("bash", `{"command":"python reproduce.py"}`)
		run(t, NewTracker(Policy{}), []step{
			allow(repro, "Error: x"), allow(call("bash", `{"command":"pip install -e ."}`), "Successfully installed"),
			allow(repro, "Error: x"), allow(call("bash", `{"command":"sed -i 's/a/b/' x.py"}`), ""),
			allow(repro, "Error: x"), allow(call("bash", `{"command":"sed -i 's/b/c/' x.py"}`), ""),
			allow(repro, "fixed"),
		})
	})
	t.Run("nothing changed in between: still a loop", func(t *testing.T) {
		status := call("get_status", `{}`)
		run(t, NewTracker(Policy{Tools: map[string]ToolPolicy{"read_*": {ReadOnly: true}}}), []step{
			allow(status, "down"), allow(call("read_log", `{"n":1}`), "l1"), allow(status, "down"),
			allow(call("read_log", `{"n":2}`), "l2"), hint(status, ReasonDuplicate),
		})
	})
	t.Run("a failed call changes nothing", func(t *testing.T) {
		status := call("get_status", `{}`)
		run(t, NewTracker(Policy{}), []step{
			allow(status, "down"), fail(call("restart", `{}`), "permission denied"), allow(status, "down"),
			fail(call("restart", `{"force":true}`), "permission denied"), hint(status, ReasonDuplicate),
		})
	})
	t.Run("A,B,A,B with unchanged results is a loop", func(t *testing.T) {
		a, b := call("ls", `{}`), call("read_file", `{"path":"x"}`)
		run(t, NewTracker(Policy{}), []step{
			allow(a, "x y"), allow(b, "1"), allow(a, "x y"), allow(b, "1"), allow(a, "x y"), hint(b, ReasonDuplicate),
		})
	})
}

func TestFailingRerunsAfterChanges(t *testing.T) {
	repro := call("bash", `{"command":"python reproduce.py"}`)
	tb := func(line int) error {
		return fmt.Errorf("Traceback (most recent call last):\n  File \"x.py\", line %d\nTypeError: bad operand in step %d", line, line)
	}
	t.Run("a different traceback after each change runs", func(t *testing.T) {
		run(t, NewTracker(Policy{}), []step{
			{call: repro, err: tb(1), want: Allow},
			allow(call("bash", `{"command":"pip install six"}`), "Successfully installed six"),
			{call: repro, err: errors.New("ImportError: cannot import name 'x'"), want: Allow},
			allow(call("bash", `{"command":"sed -i 's/x/y/' a.py"}`), ""),
			{call: repro, err: errors.New("AttributeError: 'NoneType' object has no attribute 'y'"), want: Allow},
			allow(call("bash", `{"command":"sed -i 's/y/z/' a.py"}`), ""),
			allow(repro, "all good"),
		})
	})
	t.Run("the same failure after each change runs too", func(t *testing.T) {
		run(t, NewTracker(Policy{}), []step{
			fail(repro, "ImportError: x"), allow(call("bash", `{"command":"pip install x"}`), "ok"),
			fail(repro, "ImportError: x"), allow(call("bash", `{"command":"pip install x==2"}`), "ok"),
			fail(repro, "ImportError: x"), allow(call("bash", `{"command":"pip install x==3"}`), "ok"),
			fail(repro, "ImportError: x"),
		})
	})
	t.Run("an unchanged call failing with nothing in between fires, whatever its error", func(t *testing.T) {
		run(t, NewTracker(Policy{}), []step{
			{call: repro, err: errors.New("TypeError: a"), want: Allow}, {call: repro, err: errors.New("KeyError: b"), want: Allow},
			{call: repro, err: errors.New("ValueError: c"), want: Allow},
			hint(repro, ReasonRepeatedFailure),
		})
	})
	t.Run("a masked-equal failure is no progress for the repeat count", func(t *testing.T) {
		run(t, NewTracker(Policy{}), []step{
			{call: repro, err: tb(1), want: Allow}, {call: repro, err: tb(2), want: Allow},
			hint(repro, ReasonDuplicate),
		})
	})
}

func TestDefaultsFitLongCodingTurns(t *testing.T) {
	tr := NewTracker(Policy{})
	for i := 1; i <= 200; i++ {
		c := call("bash", fmt.Sprintf(`{"command":"step %d"}`, i))
		require.Equal(t, Allow, tr.ShouldSkip(c).Verdict, i)
		require.Equal(t, PhaseNormal, tr.Record(c, Outcome{Result: fmt.Sprint("out ", i)}), i)
	}
	// No per-tool session quota: the next turns go on.
	for turn := 0; turn < 3; turn++ {
		tr.Reset()
		for i := 1; i <= 100; i++ {
			c := call("bash", fmt.Sprintf(`{"command":"turn %d step %d"}`, turn, i))
			require.Equal(t, Allow, tr.ShouldSkip(c).Verdict, i)
			tr.Record(c, Outcome{Result: "ok"})
		}
	}
	// The presets keep the seeds' numbers.
	p, err := Preset("turn-budget")
	require.NoError(t, err)
	assert.Equal(t, 30, newConfig(p).maxCalls)
	p, err = Preset("quota-rule")
	require.NoError(t, err)
	qc := newConfig(p)
	assert.Equal(t, 30, qc.resolve("bash").quota)
}

func TestOneEscalationPerCall(t *testing.T) {
	t.Run("a failing call sent seven times", func(t *testing.T) {
		c := call("bash", `{"command":"make"}`)
		run(t, NewTracker(Policy{MaxRepeats: 4}), []step{
			fail(c, "No rule to make target"), fail(c, "No rule to make target"), fail(c, "No rule to make target"),
			hint(c, ReasonRepeatedFailure),
			fail(c, "No rule to make target"), // the one evidence-backed attempt
			abort(c, ReasonDuplicate),
			abort(c, ReasonDuplicate),
		})
	})
	t.Run("a hinted cycle continued aborts", func(t *testing.T) {
		ls, read := call("ls", `{}`), call("read_file", `{"path":"a"}`)
		run(t, NewTracker(Policy{MaxRepeats: 100}), []step{
			allow(ls, "a"), allow(read, "x"), allow(ls, "a"), allow(read, "x"), allow(ls, "a"), allow(read, "x"),
			hint(ls, ReasonCycle), abort(read, ReasonCycle), abort(ls, ReasonCycle),
		})
	})
	t.Run("an A,B,C cycle is aborted after its hint", func(t *testing.T) {
		a, b, c := call("a", `{}`), call("b", `{}`), call("c", `{}`)
		run(t, NewTracker(Policy{MaxRepeats: 100}), []step{
			allow(a, "1"), allow(b, "2"), allow(c, "3"), allow(a, "1"), allow(b, "2"), allow(c, "3"),
			allow(a, "1"), allow(b, "2"), allow(c, "3"), hint(a, ReasonCycle), abort(b, ReasonCycle), abort(c, ReasonCycle),
		})
	})
	t.Run("the hinted call after a read-only call aborts", func(t *testing.T) {
		a := call("fetch_page", `{"url":"x"}`)
		run(t, NewTracker(Policy{Tools: map[string]ToolPolicy{"*": {ReadOnly: true}}}), []step{
			allow(a, "p"), allow(a, "p"), hint(a, ReasonDuplicate), allow(call("read_file", `{"path":"b"}`), "b"),
			abort(a, ReasonDuplicate),
		})
	})
	t.Run("after a change the hinted call runs again", func(t *testing.T) {
		a := call("get_status", `{}`)
		run(t, NewTracker(Policy{}), []step{
			allow(a, "down"), allow(a, "down"), hint(a, ReasonDuplicate), allow(call("restart", `{}`), "restarted"),
			allow(a, "down"),
		})
	})
}

func TestWrapRounds(t *testing.T) {
	tr := NewTracker(Policy{})
	exec := func(ctx context.Context, c Call) (string, error) { return "results for " + string(c.Args), nil }
	queries := []string{"golang generics tutorial", "golang generics tutorials", "golang generic tutorial"}
	ctx := tr.WithRound(context.Background())
	var wg sync.WaitGroup
	outs := make([]string, len(queries))
	for i, q := range queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := tr.Run(ctx, call("web_search", fmt.Sprintf(`{"query":%q}`, q)), exec)
			assert.NoError(t, r.Err)
			assert.False(t, r.Decision.Skip())
			outs[i] = r.Text
		}()
	}
	wg.Wait()
	for i, out := range outs {
		assert.NotContains(t, out, HintMarker, queries[i])
	}
	rounds := map[uint64]bool{}
	for _, e := range tr.Ledger() {
		rounds[e.Round] = true
	}
	assert.Len(t, rounds, 1, "the calls of one response are one round")

	// A context from another Tracker is ignored: a round of its own.
	other := NewTracker(Policy{}).WithRound(context.Background())
	require.NoError(t, tr.Run(other, call("web_search", `{"query":"rust traits"}`), exec).Err)
	l := tr.Ledger()
	assert.NotEqual(t, l[0].Round, l[len(l)-1].Round)
}

func TestFailingCallAcrossTurns(t *testing.T) {
	c := call("cancel_order", `{"order_id":"W123"}`)
	const e = "Error: order W123 cannot be cancelled: status delivered"
	t.Run("the same failure in three turns in a row, then a hint that is not escalated", func(t *testing.T) {
		tr := NewTracker(Policy{})
		for i := 0; i < 3; i++ {
			run(t, tr, []step{fail(c, e)})
			tr.Reset()
		}
		run(t, tr, []step{hint(c, ReasonRepeatedFailure), fail(c, e), fail(c, e)})
		tr.Reset()
		d := tr.ShouldSkip(c)
		require.Equal(t, Hint, d.Verdict)
		assert.Contains(t, d.Message, "in each of the last 4 turns")
	})
	t.Run("a success forgets", func(t *testing.T) {
		tr := NewTracker(Policy{})
		for _, s := range []step{fail(c, e), fail(c, e), allow(c, "cancelled"), fail(c, e), fail(c, e), fail(c, e)} {
			run(t, tr, []step{s})
			tr.Reset()
		}
		run(t, tr, []step{hint(c, ReasonRepeatedFailure)})
	})
	t.Run("another error or a skipped turn starts over", func(t *testing.T) {
		tr := NewTracker(Policy{})
		run(t, tr, []step{fail(c, e)})
		tr.Reset()
		run(t, tr, []step{fail(c, "Error: service unavailable")})
		tr.Reset()
		run(t, tr, []step{fail(c, e)})
		tr.Reset()
		tr.Reset() // a turn without the call
		run(t, tr, []step{fail(c, e)})
		tr.Reset()
		run(t, tr, []step{fail(c, e)})
	})
	t.Run("MaxFailures off switches it off", func(t *testing.T) {
		tr := NewTracker(Policy{MaxFailures: -1})
		for i := 0; i < 5; i++ {
			run(t, tr, []step{fail(c, e)})
			tr.Reset()
		}
	})
}
