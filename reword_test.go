package toolguard

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/toolguard/toolguard/internal/canon"
)

func TestRewordForm(t *testing.T) {
	form := func(args string) (rewordForm, bool) {
		var s canon.Args
		s.Scan([]byte(args))
		return rewordFormOf(&s, nil)
	}
	for _, tt := range []struct {
		name string
		a, b string
		same bool
	}{
		{"flags reordered", `{"command":"ls -la src"}`, `{"command":"ls -al src"}`, true},
		{"flags split", `{"command":"ls -la src"}`, `{"command":"ls -l -a src"}`, true},
		{"flag moved", `{"command":"grep -n -r TODO src"}`, `{"command":"grep TODO -rn src"}`, true},
		{"long flags reordered", `{"command":"pytest --tb=short --quiet tests"}`, `{"command":"pytest --quiet --tb=short tests"}`, true},
		{"path written another way", `{"command":"cat ./src//main.go"}`, `{"command":"cat src/main.go"}`, true},
		{"trailing slash", `{"path":"src/"}`, `{"path":"./src"}`, true},
		{"quotes", `{"command":"cat 'notes.txt'"}`, `{"command":"cat \"notes.txt\""}`, true},
		{"white space", `{"command":"ls   -la\tsrc"}`, `{"command":" ls -la src "}`, true},
		{"an edit asked in new words", `{"path":"a.py","instruction":"fix the remaining indentation"}`,
			`{"path":"./a.py","instruction":"Please fix the remaining indentation."}`, true},
		{"arguments in another order", `{"command":"cp a.py b.py"}`, `{"command":"cp b.py a.py"}`, false},
		{"another file", `{"command":"cat src/main.go"}`, `{"command":"cat src/util.go"}`, false},
		{"another flag", `{"command":"ls -la src"}`, `{"command":"ls -lh src"}`, false},
		{"another sed expression", `{"command":"sed -i s/a/b/ x.py"}`, `{"command":"sed -i s/b/c/ x.py"}`, false},
		{"another package", `{"command":"pip install pytz"}`, `{"command":"pip install sqlparse"}`, false},
		{"another request", `{"path":"a.py","instruction":"add a docstring to parse"}`,
			`{"path":"a.py","instruction":"add a docstring to render"}`, false},
		{"another argument", `{"path":"a.py"}`, `{"file":"a.py"}`, false},
		{"a number changed", `{"path":"a.py","line":3}`, `{"path":"a.py","line":4}`, false},
		{"the root is not a trailing slash", `{"path":"/"}`, `{"path":""}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, okA := form(tt.a)
			b, okB := form(tt.b)
			assert.True(t, okA && okB)
			assert.Equal(t, tt.same, a.same(&b, defaultSimilarityThreshold))
			assert.Equal(t, tt.same, b.same(&a, defaultSimilarityThreshold), "symmetric")
		})
	}
}

func TestRewordFormNotCompared(t *testing.T) {
	long := fmt.Sprintf(`{"command":"cat > x.py << EOF\n%0600d\nEOF"}`, 0)
	for _, args := range []string{``, `{}`, `null`, `[1,2]`, `{"a":{"b":1}}`, `{"a":[1]}`, long, `{"a":`} {
		var s canon.Args
		s.Scan([]byte(args))
		_, ok := rewordFormOf(&s, nil)
		assert.False(t, ok, args)
	}
}

func TestRewordFormIgnores(t *testing.T) {
	var a, b canon.Args
	a.Scan([]byte(`{"command":"ls -la","request_id":"1"}`))
	b.Scan([]byte(`{"command":"ls -al","request_id":"2"}`))
	fa, _ := rewordFormOf(&a, []string{"request_id"})
	fb, _ := rewordFormOf(&b, []string{"request_id"})
	assert.True(t, fa.same(&fb, defaultSimilarityThreshold))
}

// TestRewordedDetector feeds the rule probes directly: each call allowed
// and recorded in its own round, with progress as the repeat rule finds
// it (a key new to the turn, or a changed result), then the next call
// checked.
func TestRewordedDetector(t *testing.T) {
	type rec struct {
		tool, args, result string
		failed             bool
		other              bool // another call that made progress after it
	}
	lsA, lsB, lsC := `{"command":"ls -la src"}`, `{"command":"ls -al ./src/"}`, `{"command":"ls -l -a src"}`
	for _, tt := range []struct {
		name  string
		p     Policy
		calls []rec
		next  string
		fired bool
		count int
	}{
		{"two rewordings, the same result: the third fires", Policy{},
			[]rec{{"bash", lsA, "a.go", false, false}, {"bash", lsB, "a.go", false, false}}, lsC, true, 2},
		{"one call: a first rewording runs", Policy{},
			[]rec{{"bash", lsA, "a.go", false, false}}, lsC, false, 0},
		{"the same call twice is the repeat rule's", Policy{},
			[]rec{{"bash", lsA, "a.go", false, false}, {"bash", lsA, "a.go", false, false}}, lsC, false, 0},
		{"a new result starts over", Policy{},
			[]rec{{"bash", lsA, "a.go", false, false}, {"bash", lsB, "a.go b.go", false, false}}, lsC, false, 0},
		{"another call's progress in between", Policy{},
			[]rec{{"bash", lsA, "a.go", false, true}, {"bash", lsB, "a.go", false, false}}, lsC, false, 0},
		{"another call's progress since", Policy{},
			[]rec{{"bash", lsA, "a.go", false, false}, {"bash", lsB, "a.go", false, true}}, lsC, false, 0},
		{"failures are the failure rule's", Policy{},
			[]rec{{"bash", lsA, "no such dir", true, false}, {"bash", lsB, "no such dir", true, false}}, lsC, false, 0},
		{"another tool's calls in between are skipped over", Policy{},
			[]rec{{"bash", lsA, "a.go", false, false}, {"view", `{"path":"a.go"}`, "package a", false, false},
				{"bash", lsB, "a.go", false, false}}, lsC, false, 0}, // view's new result is progress
		{"MaxRewordings 3", Policy{MaxRewordings: 3},
			[]rec{{"bash", lsA, "a.go", false, false}, {"bash", lsB, "a.go", false, false}}, lsC, false, 0},
		{"MaxRewordings negative: off", Policy{MaxRewordings: -1},
			[]rec{{"bash", lsA, "a.go", false, false}, {"bash", lsB, "a.go", false, false}}, lsC, false, 0},
		{"a search tool is the similar rule's", Policy{},
			[]rec{{"web_search", `{"query":"go generics","n":"5"}`, "hits", false, false},
				{"web_search", `{"query":"go generics","n":" 5"}`, "hits", false, false}},
			`{"query":"go generics","n":"5 "}`, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDetTest(tt.p)
			r := reworded{}
			last := map[callKey]Hash{}
			round, seq := uint64(0), uint64(0)
			record := func(tool, args, result string, failed bool) {
				round++
				seq++
				p := d.probe(tool, args, round, 0)
				p.seq = seq
				r.allowed(p)
				o := okOut(p.seq, result, 0)
				if failed {
					o = failOut(p.seq, p, result, 0)
				}
				res := o.digest
				prev, seen := last[p.key]
				o.progress = !seen || prev != res
				last[p.key], p.ks.seen = res, true
				r.recorded(p, o)
			}
			for i, c := range tt.calls {
				record(c.tool, c.args, c.result, c.failed)
				if c.other {
					record("other", fmt.Sprintf(`{"n":%d}`, i), "news", false)
				}
			}
			tool := tt.calls[0].tool
			f, fired := r.check(d.probe(tool, tt.next, round+1, 0))
			assert.Equal(t, tt.fired, fired)
			if fired {
				assert.Equal(t, ReasonDuplicate, f.reason)
				assert.Equal(t, tt.count, f.count)
				assert.Equal(t, ruleReword, f.scope.rule)
			}
			r.endTurn(1)
			_, fired = r.check(d.probe(tool, tt.next, round+2, 0))
			assert.False(t, fired, "the chain is the turn's")
		})
	}
}

func TestRewordedPendingBound(t *testing.T) {
	d := newDetTest(Policy{})
	r := reworded{}
	for i := range 3 * maxRewordPending {
		p := d.probe("bash", fmt.Sprintf(`{"command":"echo %d"}`, i), uint64(i+1), 0)
		p.seq = uint64(i + 1)
		r.allowed(p) // never recorded
	}
	assert.Len(t, r.st.pending, maxRewordPending)
	r.endTurn(1)
	assert.Empty(t, r.st.pending)
}

// The same non-search tool with reworded arguments and nothing new (issue
// #30, item 4). The repository's traces hold no such chain (a call of a
// tool that is not a search tool, reworded twice, returning the same result
// with nothing else changed: none in the 1,283 episodes of
// testdata/traces, docs/evaluation.md), so these scenarios are built from
// the description.
func TestRewordedCalls(t *testing.T) {
	ls := func(cmd string) Call { return call("bash", `{"command":"`+cmd+`"}`) }
	edit := func(instr string) Call {
		return call("edit_file", `{"path":"app/models.py","instruction":"`+instr+`"}`)
	}
	const unchanged = "No changes made: app/models.py already matches the request."
	for _, tt := range []struct {
		name  string
		p     Policy
		steps []step
	}{
		{"flags reordered, a path written another way", Policy{}, []step{
			allow(ls("ls -la src"), "main.go util.go"),
			allow(ls("ls -al ./src/"), "main.go util.go"),
			hint(ls("ls -l -a src"), ReasonDuplicate),
			abort(ls("ls -a -l src/"), ReasonDuplicate),
		}},
		{"an edit asked in new words", Policy{}, []step{
			allow(edit("fix the remaining indentation"), unchanged),
			allow(edit("Fix remaining indentation."), unchanged),
			hint(edit("please fix the remaining indentation"), ReasonDuplicate),
		}},
		{"after the hint, something else runs", Policy{}, []step{
			allow(ls("ls -la src"), "main.go"),
			allow(ls("ls -al src"), "main.go"),
			hint(ls("ls -l -a src"), ReasonDuplicate),
			allow(ls("cat src/main.go"), "package main"),
		}},
		{"a rewording that brings something new starts over", Policy{}, []step{
			allow(ls("ls -la src"), "main.go"),
			allow(ls("ls -al src"), "main.go util.go"),
			allow(ls("ls -l -a src"), "main.go util.go"),
			hint(ls("ls -a -l src"), ReasonDuplicate),
		}},
		{"edit, test, edit, test with new results stays work", Policy{}, []step{
			allow(edit("rename foo to bar"), "edited: 1 line"),
			fail(call("bash", `{"command":"pytest -x tests"}`), "1 failed: test_bar"),
			allow(edit("rename foo to bar in the tests"), "edited: 1 line"),
			fail(call("bash", `{"command":"pytest tests -x"}`), "1 failed: test_baz"),
			allow(edit("rename foo to bar in conftest"), "edited: 1 line"),
			allow(call("bash", `{"command":"pytest  -x  ./tests/"}`), "3 passed"),
		}},
		{"the same rewordings around a test that fails the same way", Policy{}, []step{
			allow(edit("fix the remaining indentation"), unchanged),
			fail(call("bash", `{"command":"pytest"}`), "IndentationError: line 3"),
			allow(edit("fix remaining indentation"), unchanged),
			fail(call("bash", `{"command":"pytest"}`), "IndentationError: line 3"),
			allow(edit("please fix the remaining indentation"), unchanged), // the first test was news
			fail(call("bash", `{"command":"pytest"}`), "IndentationError: line 3"),
			hint(edit("Fix the indentation that remains."), ReasonDuplicate),
		}},
		{"an edit between rewordings is a change", Policy{}, []step{
			allow(ls("cat src/main.go"), "package main"),
			allow(ls("cat ./src/main.go"), "package main"),
			allow(call("write_file", `{"path":"src/main.go","content":"package main // x"}`), "ok"),
			allow(ls("cat src//main.go"), "package main"),
			allow(ls("cat src/main.go/"), "package main"),
			hint(ls("cat ./src/./main.go"), ReasonDuplicate),
		}},
		{"the same command in other words with other arguments is another call", Policy{}, []step{
			allow(ls("cp a.py a.py.bak"), ""),
			allow(ls("cp a.py.bak a.py"), ""),
			allow(ls("cp a.py a.py.orig"), ""),
			allow(ls("cp a.py.orig a.py"), ""),
		}},
		{"installs of other packages", Policy{}, []step{
			allow(ls("pip install pytz -q"), "<returncode>0</returncode>"),
			allow(ls("pip install sqlparse -q"), "<returncode>0</returncode>"),
			allow(ls("pip install asgiref -q"), "<returncode>0</returncode>"),
		}},
		{"MaxRewordings negative: off", Policy{MaxRewordings: -1}, []step{
			allow(ls("ls -la src"), "main.go"),
			allow(ls("ls -al src"), "main.go"),
			allow(ls("ls -l -a src"), "main.go"),
		}},
		{"an exempt tool", Policy{Tools: map[string]ToolPolicy{"bash": {Exempt: true}}}, []step{
			allow(ls("ls -la src"), "main.go"),
			allow(ls("ls -al src"), "main.go"),
			allow(ls("ls -l -a src"), "main.go"),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run(t, NewTracker(tt.p), tt.steps)
		})
	}
}

func TestRewordedPresetsOff(t *testing.T) {
	for _, name := range PresetNames() {
		p, err := Preset(name)
		assert.NoError(t, err)
		tr := NewTracker(p)
		for _, cmd := range []string{"ls -la src", "ls -al src", "ls -l -a src", "ls -a -l src"} {
			c := call("bash", `{"command":"`+cmd+`"}`)
			d := tr.ShouldSkip(c)
			assert.NotEqual(t, ReasonDuplicate, d.Reason, "%s: %s", name, cmd)
			if !d.Skip() {
				tr.Record(c, Outcome{Result: "main.go"})
			}
		}
	}
}
