package toolguard

import "testing"

// Diagnosis before the hint (issue #30, item 6, built from its
// description): edits fail the same way, the agent reads the file on its
// own — a read-only call that brought new information — and its next, other
// edit is the evidence-backed attempt the failure hint would have asked
// for: it runs.
func TestDiagnosisBeforeTheHint(t *testing.T) {
	ro := Policy{Tools: map[string]ToolPolicy{"read_file": {ReadOnly: true}}}
	edit := func(old string) Call {
		return call("str_replace", `{"path":"app.py","old_str":"`+old+`","new_str":"return x"}`)
	}
	read := call("read_file", `{"path":"app.py"}`)
	const nf = "Error: old_str not found in app.py"
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"a read with new information, then another edit: runs", []step{
			fail(edit("return  y"), nf),
			fail(edit("return y "), nf),
			fail(edit(" return y"), nf),
			allow(read, "def f(x):\n    return y\n"),
			allow(edit("    return y"), "ok"),
		}},
		{"the attempt after the diagnosis fails the same way: the next retry is hinted", []step{
			fail(edit("return  y"), nf),
			fail(edit("return y "), nf),
			fail(edit(" return y"), nf),
			allow(read, "def f(x):\n    return y\n"),
			fail(edit("\treturn y"), nf),
			hint(edit("return y"), ReasonRepeatedFailure),
		}},
		{"no diagnosis: the retry is hinted, as before", []step{
			fail(edit("return  y"), nf),
			fail(edit("return y "), nf),
			fail(edit(" return y"), nf),
			hint(edit("    return y"), ReasonRepeatedFailure),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run(t, NewTracker(ro), tt.steps)
		})
	}
}
