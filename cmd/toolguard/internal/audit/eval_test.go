package audit

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard"
)

// The evaluation replays the bundled real traces (testdata/traces at the
// repository root) as a harness would — audit.Replay: a new Tracker per
// episode, Reset where user_turn changes, the calls of one model response as
// one round — and compares toolguard's zero Policy and presets with the
// published rules of four peer detectors. docs/evaluation.md explains the
// definitions; its tables are the ones this test logs and pins (pinnedFile).

const tracesDir = "../../../../testdata/traces"

// pinnedFile holds the evaluation's tables as measured with the core at
// the time of pinning: the one place with the expected figures. A change
// in the core that moves any figure fails TestEvaluation; -update rewrites
// the file with the new tables.
const pinnedFile = "../../testdata/evaluation.md"

var update = flag.Bool("update", false, "TestEvaluation: rewrite "+pinnedFile+" with the measured tables")

// olderFiles are the seven trace files of the first data set, on which the
// old loop measure is kept for comparison.
var olderFiles = map[string]bool{
	"mini-swe-agent.jsonl":           true,
	"openhands.jsonl":                true,
	"react_webshop.jsonl":            true,
	"reflexion_hotpotqa-react.jsonl": true,
	"swe-agent.jsonl":                true,
	"tau-bench_gpt-4o-airline.jsonl": true,
	"toolbench_dfsdt-examples.jsonl": true,
}

// evalEpisode is an episode with its canonical calls.
type evalEpisode struct {
	file    string // the trace file's base name
	ep      Episode
	keys    []string // tool + canonical arguments
	results []string // failure flag + recorded result
	pairs   []string // key + result
	failed  []bool
	turns   []int // the user turn of each call, 1-based
}

func (e *evalEpisode) id() string { return e.file + " " + e.ep.Name }

// newEvalEpisode derives the canonical calls of ep.
func newEvalEpisode(file string, ep Episode) evalEpisode {
	e := evalEpisode{file: file, ep: ep}
	for _, c := range ep.Calls {
		k := canonicalCall(c)
		r := fmt.Sprintf("%t\x00%s", c.Failed, c.Result)
		e.keys = append(e.keys, k)
		e.results = append(e.results, r)
		e.pairs = append(e.pairs, k+"\x00"+r)
		e.failed = append(e.failed, c.Failed)
		e.turns = append(e.turns, c.Turn)
	}
	return e
}

func loadEvalEpisodes(t testing.TB) []evalEpisode {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tracesDir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces in %s (err %v): the evaluation runs inside the repository", tracesDir, err)
	}
	sort.Strings(files)
	var out []evalEpisode
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		format, eps, err := Parse(filepath.Base(f), data)
		if err != nil {
			t.Fatal(err)
		}
		if format != FormatEpisodes {
			t.Fatalf("%s: format %s, want episodes", f, format)
		}
		for _, ep := range eps {
			out = append(out, newEvalEpisode(filepath.Base(f), ep))
		}
	}
	return out
}

// canonicalCall is the tool and the arguments with sorted keys, no
// whitespace (json.Marshal sorts map keys).
func canonicalCall(c Call) string {
	var v any
	if len(c.Args) == 0 || json.Unmarshal(c.Args, &v) != nil {
		return c.Tool + "\x00" + string(c.Args)
	}
	b, _ := json.Marshal(v)
	return c.Tool + "\x00" + string(b)
}

// userTurns splits [0, n) into the index ranges of the user turns.
func userTurns(turns []int) [][2]int {
	var out [][2]int
	for start := 0; start < len(turns); {
		end := start + 1
		for end < len(turns) && turns[end] == turns[start] {
			end++
		}
		out = append(out, [2]int{start, end})
		start = end
	}
	return out
}

// isStuck is the definition of a stuck stretch, independent of toolguard's
// code: within one user turn,
//
//   - some call (key) returns the same result (failure flag and text) 3 or
//     more times with no call in between that made progress of its own: a
//     call that succeeded and whose key was new in the user turn or whose
//     result differed from that key's previous result in the user turn; or
//   - four consecutive calls form A,B,A,B (A ≠ B) with A's two results
//     equal and B's two results equal.
func isStuck(e *evalEpisode) bool {
	for _, r := range userTurns(e.turns) {
		if stuckRepeat(e, r[0], r[1]) || stuckAlternation(e, r[0], r[1]) {
			return true
		}
	}
	return false
}

func stuckRepeat(e *evalEpisode, from, to int) bool {
	type run struct{ n, epoch int }
	last := map[string]string{} // key → its previous result in the user turn
	runs := map[string]*run{}   // key + result → occurrences since the last progress
	epoch := 0                  // progress calls so far
	for i := from; i < to; i++ {
		k, res := e.keys[i], e.results[i]
		r := runs[e.pairs[i]]
		if r == nil || r.epoch != epoch {
			r = &run{}
			runs[e.pairs[i]] = r
		}
		if r.n++; r.n >= 3 {
			return true
		}
		if prev, seen := last[k]; !e.failed[i] && (!seen || prev != res) {
			epoch++
		}
		r.epoch = epoch // its own progress is not "in between"
		last[k] = res
	}
	return false
}

func stuckAlternation(e *evalEpisode, from, to int) bool {
	for i := from; i+3 < to; i++ {
		if e.keys[i] != e.keys[i+1] && e.pairs[i] == e.pairs[i+2] && e.pairs[i+1] == e.pairs[i+3] {
			return true
		}
	}
	return false
}

// repeatsResult reports whether some call returns the same result n or
// more times in one user turn, whatever happened in between.
func repeatsResult(e *evalEpisode, n int) bool {
	for _, r := range userTurns(e.turns) {
		count := map[string]int{}
		for i := r[0]; i < r[1]; i++ {
			if count[e.pairs[i]]++; count[e.pairs[i]] >= n {
				return true
			}
		}
	}
	return false
}

// isOldLoop is the loop measure of the first evaluation, over the whole
// episode: some canonical call occurs 3 or more times, or four consecutive
// calls form A,B,A,B with A ≠ B (results not compared).
func isOldLoop(keys []string) bool {
	n := map[string]int{}
	for _, k := range keys {
		if n[k]++; n[k] >= 3 {
			return true
		}
	}
	for i := 3; i < len(keys); i++ {
		if keys[i-3] == keys[i-1] && keys[i-2] == keys[i] && keys[i-1] != keys[i] {
			return true
		}
	}
	return false
}

// stop is where a detector first stopped an episode: executed is the number
// of recorded calls that ran before the stop (the first call it refused is
// executed+1).
type stop struct {
	fired    bool
	executed int
}

// A detector replays one episode.
type detector struct {
	name string
	run  func(*evalEpisode) stop
}

// toolguardDetector replays with a policy, as toolguard audit does. The
// call that fires (hint or abort) is not executed.
func toolguardDetector(name string, p toolguard.Policy) detector {
	return detector{name: name, run: func(e *evalEpisode) stop {
		for _, d := range Replay(p, &e.ep) {
			if d.Fired() {
				return stop{true, d.Index - 1}
			}
		}
		return stop{}
	}}
}

// peerFunc is a peer's rule over one sequence of calls (e.keys, e.pairs):
// whether it fired and how many calls had run when it stopped the agent.
type peerFunc func(*evalEpisode) (bool, int)

// perUserTurn runs a peer rule on each user turn on its own: its state
// starts afresh at new user input, as toolguard's Reset does.
func perUserTurn(name string, f peerFunc) detector {
	return detector{name: name, run: func(e *evalEpisode) stop {
		for _, r := range userTurns(e.turns) {
			seg := &evalEpisode{keys: e.keys[r[0]:r[1]], pairs: e.pairs[r[0]:r[1]]}
			if fired, n := f(seg); fired {
				return stop{true, r[0] + n}
			}
		}
		return stop{}
	}}
}

// wholeEpisode runs a peer rule over the whole episode, across user turns.
func wholeEpisode(name string, f peerFunc) detector {
	return detector{name: name, run: func(e *evalEpisode) stop {
		fired, n := f(e)
		return stop{fired, n}
	}}
}

// The peers' published rules, as small reference functions
// (peers_test.go); P1..P4 in docs/evaluation.md.
var peerRules = []struct {
	name string
	f    peerFunc
}{
	{"peer P1", peerP1},
	{"peer P2", peerP2},
	{"peer P3", peerP3},
	{"peer P4", peerP4},
}

// evalDetectors are the rows of the tables: the zero Policy, every preset,
// the four peers replayed per user turn.
func evalDetectors(t testing.TB) []detector {
	ds := []detector{toolguardDetector("toolguard zero Policy", toolguard.Policy{})}
	for _, name := range toolguard.PresetNames() {
		p, err := toolguard.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, toolguardDetector("toolguard preset "+name, p))
	}
	for _, p := range peerRules {
		ds = append(ds, perUserTurn(p.name, p.f))
	}
	return ds
}

// figures are one detector's counts over a set of episodes.
type figures struct {
	Successes, FalseAlarms   int // success episodes; with a firing
	LossyFalseAlarms         int // false alarms whose refused call was new to its user turn
	Failures, Stopped        int // failure episodes; with a firing
	FailureCalls, SavedCalls int // calls of failure episodes; from the first refused call on
	Stuck, StuckCaught       int // stuck failure episodes; with a firing
	OldLoops, OldCaught      int // old-measure loop failure episodes; with a firing
}

func (f *figures) add(g figures) {
	f.Successes += g.Successes
	f.FalseAlarms += g.FalseAlarms
	f.LossyFalseAlarms += g.LossyFalseAlarms
	f.Failures += g.Failures
	f.Stopped += g.Stopped
	f.FailureCalls += g.FailureCalls
	f.SavedCalls += g.SavedCalls
	f.Stuck += g.Stuck
	f.StuckCaught += g.StuckCaught
	f.OldLoops += g.OldLoops
	f.OldCaught += g.OldCaught
}

// episodeFigures counts one episode under one detector's stop.
func episodeFigures(e *evalEpisode, s stop, stuck, oldLoop bool) figures {
	var f figures
	hit := 0
	if s.fired {
		hit = 1
	}
	switch e.ep.Label {
	case "success":
		f.Successes, f.FalseAlarms = 1, hit
		if s.fired && NewToTurn(e.ep.Calls, s.executed) {
			f.LossyFalseAlarms = 1
		}
	case "failure":
		f.Failures, f.Stopped = 1, hit
		f.FailureCalls = len(e.keys)
		if s.fired {
			f.SavedCalls = len(e.keys) - s.executed
		}
		if stuck {
			f.Stuck, f.StuckCaught = 1, hit
		}
		if oldLoop {
			f.OldLoops, f.OldCaught = 1, hit
		}
	}
	return f
}

// evaluation is every detector's stop on every episode.
type evaluation struct {
	eps       []evalEpisode
	detectors []string
	stops     [][]stop // [detector][episode]
	stuck     []bool   // [episode]
	oldLoop   []bool   // [episode]; older files only
}

func evaluate(t testing.TB, eps []evalEpisode, ds []detector) *evaluation {
	ev := &evaluation{eps: eps, stuck: make([]bool, len(eps)), oldLoop: make([]bool, len(eps))}
	for i := range eps {
		ev.stuck[i] = eps[i].ep.Label == "failure" && isStuck(&eps[i])
		ev.oldLoop[i] = eps[i].ep.Label == "failure" && olderFiles[eps[i].file] && isOldLoop(eps[i].keys)
	}
	for _, d := range ds {
		ev.detectors = append(ev.detectors, d.name)
		ss := make([]stop, len(eps))
		for i := range eps {
			ss[i] = d.run(&eps[i])
		}
		ev.stops = append(ev.stops, ss)
	}
	return ev
}

// figures sums detector d's figures over the episodes that in selects.
func (ev *evaluation) figures(d int, in func(*evalEpisode) bool) figures {
	var f figures
	for i := range ev.eps {
		if in(&ev.eps[i]) {
			f.add(episodeFigures(&ev.eps[i], ev.stops[d][i], ev.stuck[i], ev.oldLoop[i]))
		}
	}
	return f
}

// section is one table: a set of episodes.
type section struct {
	title string
	in    func(*evalEpisode) bool
	old   bool // only older files: show the old loop measure
}

func sections(eps []evalEpisode) []section {
	var files []string
	newer := 0
	seen := map[string]bool{}
	for i := range eps {
		if f := eps[i].file; !seen[f] {
			seen[f] = true
			files = append(files, f)
			if !olderFiles[f] {
				newer++
			}
		}
	}
	ss := []section{
		{fmt.Sprintf("all %d files", len(files)), func(*evalEpisode) bool { return true }, false},
		{fmt.Sprintf("the %d newer files", newer), func(e *evalEpisode) bool { return !olderFiles[e.file] }, false},
		{fmt.Sprintf("the %d older files", len(files)-newer), func(e *evalEpisode) bool { return olderFiles[e.file] }, true},
	}
	sort.Slice(files, func(i, j int) bool {
		if olderFiles[files[i]] != olderFiles[files[j]] {
			return !olderFiles[files[i]] // the newer files first
		}
		return files[i] < files[j]
	})
	for _, f := range files {
		ss = append(ss, section{f, func(e *evalEpisode) bool { return e.file == f }, olderFiles[f]})
	}
	return ss
}

// ofShare renders "k of n (p%)", or "–" when n is 0.
func ofShare(k, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%d of %d (%.0f%%)", k, n, 100*float64(k)/float64(n))
}

// tables renders every section as a Markdown table.
func (ev *evaluation) tables() string {
	var b strings.Builder
	var unlabelled []string
	for _, s := range sections(ev.eps) {
		f0 := ev.figures(0, s.in)
		if f0.Successes+f0.Failures == 0 {
			unlabelled = append(unlabelled, s.title)
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "### %s: %d successful, %d failed, %d stuck episodes\n\n", s.title, f0.Successes, f0.Failures, f0.Stuck)
		head := "| detector | false alarms on successes | lossy false alarms | failures stopped | calls saved on failed episodes | stuck episodes caught |"
		rule := "|---|---|---|---|---|---|"
		if s.old {
			head += " old loop episodes caught |"
			rule += "---|"
		}
		fmt.Fprintln(&b, head)
		fmt.Fprintln(&b, rule)
		for d, name := range ev.detectors {
			f := ev.figures(d, s.in)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |", name, ofShare(f.FalseAlarms, f.Successes), ofShare(f.LossyFalseAlarms, f.Successes),
				ofShare(f.Stopped, f.Failures), ofShare(f.SavedCalls, f.FailureCalls), ofShare(f.StuckCaught, f.Stuck))
			if s.old {
				fmt.Fprintf(&b, " %s |", ofShare(f.OldCaught, f.OldLoops))
			}
			b.WriteString("\n")
		}
	}
	if len(unlabelled) > 0 {
		fmt.Fprintf(&b, "\nNo episode labelled success or failure: %s.\n", strings.Join(unlabelled, ", "))
	}
	return b.String()
}

// writeRefusals lists every refusal (hint or abort) toolguard gives under
// p on the successful episodes, one line per run of calls refused alike:
// file, episode, call index (or range), tool, reason, verdict.
func writeRefusals(w io.Writer, p toolguard.Policy, eps []evalEpisode) {
	n := 0
	for i := range eps {
		e := &eps[i]
		if e.ep.Label != "success" {
			continue
		}
		ds := Replay(p, &e.ep)
		for j := 0; j < len(ds); j++ {
			d := ds[j]
			if !d.Fired() {
				continue
			}
			k := j
			for k+1 < len(ds) && ds[k+1].Fired() && ds[k+1].Tool == d.Tool && ds[k+1].Reason == d.Reason && ds[k+1].Verdict == d.Verdict {
				k++
			}
			calls := fmt.Sprintf("call %d", d.Index)
			if k > j {
				calls = fmt.Sprintf("calls %d–%d (%d)", d.Index, ds[k].Index, k-j+1)
			}
			fmt.Fprintf(w, "%s %s: %s (user turn %d) %s: %s, %s\n", e.file, e.ep.Name, calls, d.Turn, d.Tool, d.Reason, d.Verdict)
			n += k - j + 1
			j = k
		}
	}
	fmt.Fprintf(w, "%d refusals\n", n)
}

func TestEvaluation(t *testing.T) {
	start := time.Now()
	eps := loadEvalEpisodes(t)
	ev := evaluate(t, eps, evalDetectors(t))
	got := ev.tables()
	t.Logf("replay of %d episodes under %d detectors: %v", len(eps), len(ev.detectors), time.Since(start).Round(time.Millisecond))
	t.Log("\n" + got)

	// The lists behind the figures of the zero Policy (detector 0).
	var stuckMissed, stuckCaught, oldNotStuck, oldStuckMissed []string
	for i := range eps {
		fired := ev.stops[0][i].fired
		switch {
		case ev.stuck[i] && fired:
			stuckCaught = append(stuckCaught, eps[i].id())
		case ev.stuck[i]:
			stuckMissed = append(stuckMissed, eps[i].id())
		}
		if ev.oldLoop[i] && !ev.stuck[i] {
			oldNotStuck = append(oldNotStuck, eps[i].id())
		}
		if ev.oldLoop[i] && ev.stuck[i] && !fired {
			oldStuckMissed = append(oldStuckMissed, eps[i].id())
		}
	}
	var stopped []string
	for i := range eps {
		if s := ev.stops[0][i]; s.fired && eps[i].ep.Label == "failure" {
			stopped = append(stopped, fmt.Sprintf("%s at call %d", eps[i].id(), s.executed+1))
		}
	}
	t.Logf("zero Policy: failed episodes stopped (%d):\n  %s", len(stopped), strings.Join(stopped, "\n  "))
	t.Logf("zero Policy: stuck episodes caught (%d):\n  %s", len(stuckCaught), strings.Join(stuckCaught, "\n  "))
	t.Logf("zero Policy: stuck episodes missed (%d):\n  %s", len(stuckMissed), strings.Join(stuckMissed, "\n  "))
	t.Logf("old loop episodes that are not stuck by the new definition (%d):\n  %s", len(oldNotStuck), strings.Join(oldNotStuck, "\n  "))
	t.Logf("old loop episodes still stuck and missed by the zero Policy (%d): %v", len(oldStuckMissed), oldStuckMissed)

	// For the definition of stuck: episodes in which some call returns the
	// same result 3 or more times in one user turn, progress in between or
	// not. The progress condition is what separates them from stuck ones.
	for _, label := range []string{"failure", "success"} {
		count := map[string]int{}
		for i := range eps {
			if eps[i].ep.Label == label && repeatsResult(&eps[i], 3) {
				count[eps[i].file]++
			}
		}
		t.Logf("%s episodes with a call returning the same result 3+ times in a user turn, progress or not: %v", label, count)
	}

	// The peers across user turns, for the choice of replaying them per
	// user turn: which episodes the per-turn replay changes.
	for _, p := range peerRules {
		whole, turn := wholeEpisode(p.name, p.f), perUserTurn(p.name, p.f)
		var diff []string
		for i := range eps {
			a, b := whole.run(&eps[i]), turn.run(&eps[i])
			if a != b {
				diff = append(diff, fmt.Sprintf("%s %s (whole episode %v, per user turn %v)", eps[i].id(), eps[i].ep.Label, a, b))
			}
		}
		t.Logf("%s: episodes where a replay across user turns differs (%d): %v", p.name, len(diff), diff)
	}

	// Which rule stops each episode under the zero Policy (its first
	// firing), by file and label: the figures docs/patterns.md quotes per rule.
	byRule := map[string]int{}
	for i := range eps {
		for _, d := range decide(toolguard.Policy{}, &eps[i].ep) {
			if d.Fired() {
				byRule[fmt.Sprintf("%s %s %s", eps[i].file, eps[i].ep.Label, d.Reason)]++
				break
			}
		}
	}
	rules := make([]string, 0, len(byRule))
	for k, n := range byRule {
		rules = append(rules, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(rules)
	t.Logf("zero Policy: episodes by the rule of their first firing (%d):\n  %s", len(rules), strings.Join(rules, "\n  "))

	var refusals strings.Builder
	writeRefusals(&refusals, toolguard.Policy{}, eps)
	t.Logf("zero Policy: every refusal on a successful episode:\n%s", refusals.String())

	if *update {
		if err := os.WriteFile(pinnedFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", pinnedFile)
		return
	}
	pinned, err := os.ReadFile(pinnedFile)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(pinned) {
		t.Errorf("the evaluation figures differ from %s:%s\n\nIf the change is intended, pin the new figures with\n"+
			"  go test ./internal/audit -run TestEvaluation -update\n"+
			"and copy the tables logged above into docs/evaluation.md.", pinnedFile, diffLines(string(pinned), got))
	}
}

// diffLines names the lines where want and got differ, with both versions.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out = append(out, fmt.Sprintf("\n  line %d\n    was %s\n    now %s", i+1, a, b))
		}
	}
	return strings.Join(out, "")
}
