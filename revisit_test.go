package toolguard

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRevisitsDetector feeds the rule outcomes directly: each recorded call
// made progress ("new") or not ("same"), then a call of a key the turn has
// seen, or a new one, is checked.
func TestRevisitsDetector(t *testing.T) {
	for _, tt := range []struct {
		name  string
		p     Policy
		runs  []bool // progress of each recorded call
		seen  bool   // the checked call's key ran in the turn
		fired bool
	}{
		{"four calls with nothing new, then a known call", Policy{}, []bool{true, false, false, false, false}, true, true},
		{"three only", Policy{}, []bool{true, false, false, false}, true, false},
		{"a call new to the turn runs", Policy{}, []bool{true, false, false, false, false}, false, false},
		{"a call that made progress ends the run", Policy{}, []bool{false, false, false, true, false}, true, false},
		{"MaxRevisits 2", Policy{MaxRevisits: 2}, []bool{true, false, false}, true, true},
		{"MaxRevisits negative: off", Policy{MaxRevisits: -1}, []bool{false, false, false, false, false, false}, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDetTest(tt.p)
			var r revisits
			for i, progress := range tt.runs {
				p := d.probe("bash", fmt.Sprintf(`{"command":"ls %d"}`, i%2), uint64(i+1), 0)
				r.recorded(p, &outcome{seq: uint64(i + 1), progress: progress})
			}
			p := d.probe("bash", `{"command":"ls 0"}`, uint64(len(tt.runs)+1), 0)
			p.ks.seen = tt.seen
			f, fired := r.check(p)
			assert.Equal(t, tt.fired, fired)
			if fired {
				assert.Equal(t, ReasonCycle, f.reason)
				assert.Equal(t, hintScope{rule: ruleRevisit, chain: r.run}, f.scope)
			}
			r.endTurn(1)
			_, fired = r.check(p)
			assert.False(t, fired, "the run is the turn's")
		})
	}
}

func TestRevisitsExemptTool(t *testing.T) {
	d := newDetTest(Policy{Tools: map[string]ToolPolicy{"poll": {Exempt: true}}})
	var r revisits
	for i := range 6 {
		p := d.probe("poll", `{}`, uint64(i+1), 0)
		r.recorded(p, &outcome{seq: uint64(i + 1)})
	}
	assert.Zero(t, r.n, "an exempt tool's calls are not counted")
	p := d.probe("poll", `{}`, 7, 0)
	p.ks.seen = true
	_, fired := r.check(p)
	assert.False(t, fired)
}

// A turn that keeps coming back to results it has already seen (issue #30,
// item 2, second half). The InterCode Bash traces hold loops broken up by
// calls that change nothing; these sequences are built from the issue's
// description, with a no-op that is not blank (`true`, new to the turn, so
// it starts the repeat rule's counts over).
func TestRevisitsCatchLoopsWithNoOps(t *testing.T) {
	x := call("bash", `{"command":"cat notes.txt"}`)
	a := call("bash", `{"command":"ls /data"}`)
	b := call("bash", `{"command":"wc -l /data/a.csv"}`)
	noop := call("bash", `{"command":"true"}`)
	empty := call("bash", `{"command":""}`)
	loop := []step{ // A, A, B, B, (no-op), A, A, B, B
		allow(a, "a.csv b.csv"), allow(a, "a.csv b.csv"), allow(b, "12 /data/a.csv"), allow(b, "12 /data/a.csv"),
		allow(noop, ""),
		allow(a, "a.csv b.csv"), allow(a, "a.csv b.csv"), allow(b, "12 /data/a.csv"), allow(b, "12 /data/a.csv"),
	}
	for _, tt := range []struct {
		name  string
		p     Policy
		steps []step
	}{
		{"A, A, B, B, (no-op), A, A, B, B, (no-op): the tenth call", Policy{}, append(slices.Clip(loop),
			hint(noop, ReasonCycle),
			hint(a, ReasonDuplicate), // the repeat rule, first in order, gives its own hint
			abort(noop, ReasonCycle), // the hinted call again, nothing new since
		)},
		{"A, A, B, B, (empty), A, A, B, B: caught at the second B", Policy{}, []step{
			allow(a, "a.csv b.csv"),
			allow(a, "a.csv b.csv"),
			allow(b, "12 /data/a.csv"),
			allow(b, "12 /data/a.csv"),
			allow(empty, ""),
			allow(a, "a.csv b.csv"),
			allow(a, "a.csv b.csv"),
			hint(b, ReasonDuplicate),
		}},
		{"X, X, (no-op), X, X", Policy{}, []step{
			allow(x, "hello"),
			allow(x, "hello"),
			allow(noop, ""),
			allow(x, "hello"),
			allow(x, "hello"),
			hint(x, ReasonDuplicate),
		}},
		{"X, (no-op), X, (no-op), X, (no-op)", Policy{}, []step{
			allow(x, "hello"),
			allow(noop, ""),
			allow(x, "hello"),
			allow(noop, ""),
			allow(x, "hello"),
			hint(noop, ReasonDuplicate),
		}},
		{"edit, test, edit, test with new results stays work", Policy{}, []step{
			allow(call("bash", `{"command":"sed -i s/a/b/ x.py"}`), ""),
			fail(call("bash", `{"command":"pytest"}`), "1 failed: test_x"),
			allow(call("bash", `{"command":"cat x.py"}`), "b"),
			allow(call("bash", `{"command":"sed -i s/b/c/ x.py"}`), ""),
			fail(call("bash", `{"command":"pytest"}`), "1 failed: test_y"),
			allow(call("bash", `{"command":"cat x.py"}`), "c"),
			allow(call("bash", `{"command":"sed -i s/c/d/ x.py"}`), ""),
			fail(call("bash", `{"command":"pytest"}`), "1 failed: test_z"),
			allow(call("bash", `{"command":"cat x.py"}`), "d"),
			allow(call("bash", `{"command":"sed -i s/d/e/ x.py"}`), ""),
			allow(call("bash", `{"command":"pytest"}`), "3 passed"),
		}},
		{"re-reading after each step that brought something new", Policy{}, []step{
			allow(a, "a.csv"),
			allow(call("bash", `{"command":"touch /data/b.csv"}`), ""),
			allow(a, "a.csv b.csv"),
			allow(call("bash", `{"command":"touch /data/c.csv"}`), ""),
			allow(a, "a.csv b.csv c.csv"),
			allow(b, "0 /data/a.csv"),
			allow(b, "0 /data/a.csv"),
			allow(a, "a.csv b.csv c.csv"),
		}},
		{"MaxRevisits negative: off", Policy{MaxRevisits: -1}, append(slices.Clip(loop), allow(noop, ""))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run(t, NewTracker(tt.p), tt.steps)
		})
	}
}

func TestRevisitsPresetsOff(t *testing.T) {
	seq := []Call{call("bash", `{"command":"ls"}`), call("bash", `{"command":"pwd"}`), call("bash", `{"command":"true"}`)}
	for _, name := range PresetNames() {
		p, err := Preset(name)
		assert.NoError(t, err)
		tr := NewTracker(p)
		assert.Zero(t, tr.cfg.resolve("bash").revisits, name) // off
		for i := range 12 {
			c := seq[(i/2)%len(seq)]
			d := tr.ShouldSkip(c)
			assert.NotContains(t, d.Message, "returned what it had returned before", "%s: call %d", name, i)
			if !d.Skip() {
				tr.Record(c, Outcome{Result: string(c.Args)})
			}
		}
	}
}

func TestRevisitsFailures(t *testing.T) {
	d := newDetTest(Policy{})
	var r revisits
	rec := func(o outcome) {
		p := d.probe("bash", `{"command":"make"}`, 1, 0)
		r.recorded(p, &o)
	}
	rec(outcome{})
	rec(outcome{})
	rec(outcome{failed: true}) // failed as before: the failure rule's
	assert.EqualValues(t, 2, r.n)
	rec(outcome{failed: true, progress: true}) // a failure that reads differently is news
	assert.Zero(t, r.n)
}
