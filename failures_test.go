package toolguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFailuresDetector(t *testing.T) {
	type step struct {
		args    string
		err     string // "" : succeeds
		changes uint32
		want    string // "": runs; "hint", "abort": fires (hinted or abort firing)
	}
	const denied = "permission denied: /etc/x"
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"the same failing call, then a hint, one attempt, then abort", []step{
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"make"}`, "", 0, "hint"},
			{`{"cmd":"make -B"}`, denied, 0, ""}, // the attempt, tweaked, fails the same way
			{`{"cmd":"make"}`, "", 0, "abort"},
		}},
		{"tweaked arguments failing the same way are the same chain", []step{
			{`{"cmd":"npm test"}`, "error: 3 tests failed", 0, ""},
			{`{"cmd":"npm run test"}`, "error: 5 tests failed", 0, ""},
			{`{"cmd":"npm test --verbose"}`, "error: 4 tests failed", 0, ""},
			{`{"cmd":"npm test"}`, "", 0, "hint"},
		}},
		{"another approach runs", []step{
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"ls -la /etc/x"}`, "", 0, ""},
		}},
		{"a success ends the chain", []step{
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"make"}`, "", 0, ""},
			{`{"cmd":"make"}`, denied, 0, ""},
		}},
		{"a change of the world starts over", []step{
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"make"}`, denied, 0, ""},
			{`{"cmd":"make"}`, "", 1, ""},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDetTest(Policy{})
			fs := failures{cfg: d.cfg}
			for i, s := range tt.steps {
				p := d.probe("bash", s.args, uint64(i+1), s.changes)
				f, fired := fs.check(p)
				switch s.want {
				case "":
					assert.False(t, fired, "step %d", i)
				case "hint":
					assert.True(t, fired && !f.abort, "step %d: a firing to hint", i)
					fs.hinted(p)
					continue
				case "abort":
					assert.True(t, fired && f.abort, "step %d: an abort", i)
					continue
				}
				fs.allowed(p)
				o := okOut(uint64(i+1), "done", s.changes)
				if s.err != "" {
					o = failOut(uint64(i+1), p, s.err, s.changes)
				}
				fs.recorded(p, o)
			}
		})
	}
}

func TestFailuresAcrossTurns(t *testing.T) {
	d := newDetTest(Policy{})
	fs := failures{cfg: d.cfg}
	run := func(turn int, round uint64, err string) (firing, bool) {
		p := d.probe("bash", `{"cmd":"deploy"}`, round, 0)
		p.turnNo = turn
		f, fired := fs.check(p)
		if !fired {
			o := okOut(round, "ok", 0)
			if err != "" {
				o = failOut(round, p, err, 0)
			}
			fs.recorded(p, o)
		}
		return f, fired
	}
	for turn := 1; turn <= 3; turn++ {
		_, fired := run(turn, uint64(turn), "deploy failed: quota")
		assert.False(t, fired, "turn %d", turn)
		fs.endTurn(turn)
		for _, e := range d.tools {
			e.turn = toolState{} // the Tracker drops the tools' turn state
		}
	}
	f, fired := run(4, 4, "")
	assert.True(t, fired && f.once, "the fourth turn's call gets the hint across turns")
	assert.Equal(t, 3, f.count)

	// A success forgets the call.
	fs.recorded(d.probe("bash", `{"cmd":"deploy"}`, 5, 0), okOut(5, "ok", 0))
	fs.endTurn(4)
	_, fired = run(5, 6, "")
	assert.False(t, fired)
}

// A cancelled call after the failure hint did not run: it is not the one
// attempt, so the next call is, and only its failing the same way aborts.
func TestCancelledAttemptIsNotSpent(t *testing.T) {
	const denied = "permission denied: /etc/x"
	make1, make2, make3 := call("bash", `{"cmd":"make"}`), call("bash", `{"cmd":"make -B"}`), call("bash", `{"cmd":"make -j4"}`)
	tr := NewTracker(Policy{})
	run(t, tr, []step{fail(make1, denied), fail(make2, denied), fail(make3, denied), hint(make1, ReasonRepeatedFailure)})
	cancelled(t, tr, make2) // the attempt, given up
	run(t, tr, []step{fail(make3, denied), abort(make1, ReasonRepeatedFailure)})
}
