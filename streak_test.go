package toolguard

import (
	"fmt"
	"testing"
)

// Failures across tools (issue #30, item 3; the InterCode Bash traces hold
// runs of ten failing commands of different tools, these scenarios are
// built from the description): every call failing, whatever the tool, with
// no success in between.
func TestStreakDetector(t *testing.T) {
	tools := []string{"read_file", "list_dir", "write_file", "exec"}
	failing := func(n int) []step {
		var ss []step
		for i := 0; i < n; i++ {
			ss = append(ss, fail(call(tools[i%len(tools)], fmt.Sprintf(`{"path":"/srv/%d"}`, i)), fmt.Sprintf("error %d: no such file", i)))
		}
		return ss
	}
	next := call("exec", `{"cmd":"ls /"}`)
	cat := func(ss ...[]step) []step {
		var out []step
		for _, s := range ss {
			out = append(out, s...)
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		p     Policy
		steps []step
	}{
		{"six failures across tools: the seventh call gets a hint, then runs", Policy{}, cat(failing(6), []step{
			hint(next, ReasonRepeatedFailure),
			allow(next, "bin etc srv"),
		})},
		{"one hint per run: after the hint, further calls run", Policy{}, cat(failing(6), []step{
			hint(next, ReasonRepeatedFailure),
			fail(next, "exec: permission denied"),
			fail(call("read_file", `{"path":"/x"}`), "no such file"),
			allow(call("read_file", `{"path":"/y"}`), "y"),
		})},
		{"five failures: no hint (a coding agent's misses run to 4)", Policy{}, cat(failing(5), []step{
			allow(next, "bin etc srv"),
		})},
		{"a success ends the run", Policy{}, cat(failing(5), []step{allow(next, "bin etc srv")}, failing(5), []step{
			allow(call("exec", `{"cmd":"pwd"}`), "/"),
		})},
		{"a new run gets its own hint", Policy{}, cat(failing(6), []step{
			hint(next, ReasonRepeatedFailure),
			allow(next, "bin etc srv"),
		}, failing(6), []step{
			hint(call("exec", `{"cmd":"pwd"}`), ReasonRepeatedFailure),
		})},
		{"MaxFailureStreak 3", Policy{MaxFailureStreak: 3}, cat(failing(3), []step{
			hint(next, ReasonRepeatedFailure),
		})},
		{"MaxFailureStreak negative: off", Policy{MaxFailureStreak: -1}, cat(failing(9), []step{
			allow(next, "bin etc srv"),
		})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run(t, NewTracker(tt.p), tt.steps)
		})
	}
}

func TestStreakEndTurn(t *testing.T) {
	tr := NewTracker(Policy{MaxFailureStreak: 2})
	run(t, tr, []step{fail(call("a", `{"x":1}`), "e1"), fail(call("b", `{"x":2}`), "e2")})
	tr.Reset()
	run(t, tr, []step{fail(call("a", `{"x":3}`), "e3"), fail(call("b", `{"x":4}`), "e4"), hint(call("c", `{}`), ReasonRepeatedFailure)})
}
