package toolguard

import "testing"

func TestBlankArgs(t *testing.T) {
	for _, tt := range []struct {
		args string
		want bool
	}{
		{`{"command":""}`, true},
		{` { "command" : "  \n\t " } `, true},
		{`{"command":"","cwd":" "}`, true},
		{`{"command":"\r\n"}`, true},
		{`{"command":"ls"}`, false},
		{`{"command":"","cwd":"/tmp"}`, false},
		{`{"command":"\u0020"}`, false}, // kept simple: any other escape is a value
		{`{"n":0}`, false},
		{`{"command":null}`, false},
		{`{}`, false}, // no arguments: submit, reset, next_page act
		{``, false},
		{`null`, false},
		{`""`, false},
		{`["",""]`, false},
		{`{"command":""`, false},
		{`{"command":"",}`, false},
		{`{"command":"" x}`, false},
		{`{"command":""} x`, false},
		{`{"command":"\`, false},
		{`{"command`, false},
		{`{"a" "b"}`, false},
	} {
		if got := blankArgs([]byte(tt.args)); got != tt.want {
			t.Errorf("blankArgs(%s) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// Loops broken up by calls that change nothing (issue #30, item 2; the
// InterCode Bash traces hold empty commands between repeats, these
// scenarios are built from the description): an empty command
// succeeds with a result new to the turn, but it did nothing, so it does
// not start the other calls' counts over.
func TestBlankCallsAreNotProgress(t *testing.T) {
	x := call("bash", `{"command":"cat notes.txt"}`)
	a := call("bash", `{"command":"ls /data"}`)
	b := call("bash", `{"command":"wc -l /data/a.csv"}`)
	empty := call("bash", `{"command":""}`)
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"X, X, (empty), X", []step{
			allow(x, "hello"),
			allow(x, "hello"),
			allow(empty, ""),
			hint(x, ReasonDuplicate),
		}},
		{"A, A, B, B, (empty), A, A, B, B", []step{
			allow(a, "a.csv b.csv"),
			allow(a, "a.csv b.csv"),
			allow(b, "12 /data/a.csv"),
			allow(b, "12 /data/a.csv"),
			allow(empty, ""),
			allow(a, "a.csv b.csv"), // B was new after A last ran: A starts over
			allow(a, "a.csv b.csv"),
			hint(b, ReasonDuplicate),
		}},
		{"edit, test, edit, test with new results stays work", []step{
			allow(call("bash", `{"command":"sed -i s/a/b/ x.py"}`), ""),
			fail(call("bash", `{"command":"pytest"}`), "1 failed: test_x"),
			allow(call("bash", `{"command":"sed -i s/b/c/ x.py"}`), ""),
			fail(call("bash", `{"command":"pytest"}`), "1 failed: test_x"),
			allow(call("bash", `{"command":"sed -i s/c/d/ x.py"}`), ""),
			fail(call("bash", `{"command":"pytest"}`), "1 failed: test_x"),
			allow(call("bash", `{"command":"sed -i s/d/e/ x.py"}`), ""),
			allow(call("bash", `{"command":"pytest"}`), "1 passed"),
		}},
		{"a call with no arguments may act", []step{
			allow(x, "hello"),
			allow(x, "hello"),
			allow(call("next_page", `{}`), "page 2"),
			allow(x, "hello"),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run(t, NewTracker(Policy{}), tt.steps)
		})
	}
}
