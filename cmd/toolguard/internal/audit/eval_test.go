package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toolguard/toolguard"
)

// The evaluation replays the bundled real traces (testdata/traces at the
// repository root) and compares toolguard's default policy and presets with
// the published rules of four peer detectors. docs/evaluation.md explains
// the definitions; the table it shows is the one this test logs.

const tracesDir = "../../../../testdata/traces"

// evalEpisode is an episode with its canonical calls.
type evalEpisode struct {
	ep    Episode
	keys  []string // tool + canonical arguments
	pairs []string // key + recorded result (and failure flag)
}

func loadEvalEpisodes(t *testing.T) []evalEpisode {
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
			ee := evalEpisode{ep: ep}
			for _, c := range ep.Calls {
				k := canonicalCall(c)
				ee.keys = append(ee.keys, k)
				ee.pairs = append(ee.pairs, fmt.Sprintf("%s\x00%t\x00%s", k, c.Failed, c.Result))
			}
			out = append(out, ee)
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

// isLoop: some canonical call occurs 3 or more times, or four consecutive
// calls form A,B,A,B with A ≠ B.
func isLoop(keys []string) bool {
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

// A detector reports whether it fired in an episode and how many calls had
// been executed when it first did.
type detector struct {
	name string
	run  func(*evalEpisode) (fired bool, executed int)
}

// toolguardDetector replays with a policy; the call that fires is not
// executed, so the calls executed are those before it.
func toolguardDetector(name string, p toolguard.Policy) detector {
	return detector{name: name, run: func(e *evalEpisode) (bool, int) {
		for _, d := range Replay(p, &e.ep) {
			if d.Fired() {
				return true, d.Index - 1
			}
		}
		return false, 0
	}}
}

// The peers' published rules, as small reference functions.
var peers = []detector{
	{"peer P1", peerP1},
	{"peer P2", peerP2},
	{"peer P3", peerP3},
	{"peer P4", peerP4},
}

// peerP1: 5 identical calls in a row, or a cycle of 1-5 calls repeated 5
// times; the completing call is blocked (not executed).
func peerP1(e *evalEpisode) (bool, int) {
	k := e.keys
	for i := range k {
		for period := 1; period <= 5; period++ {
			n := 5 * period
			if i+1 < n {
				continue
			}
			ok := true
			for j := i - n + 1 + period; j <= i && ok; j++ {
				ok = k[j] == k[j-period]
			}
			if ok {
				return true, i
			}
		}
	}
	return false, 0
}

// peerP2: the 4th identical call in a row is blocked.
func peerP2(e *evalEpisode) (bool, int) {
	if i, ok := runOf(e.keys, 4); ok {
		return true, i
	}
	return false, 0
}

// peerP3: 4 identical call-and-result pairs in a row, or an A,B
// alternation (of call-and-result pairs) over the last 6 calls; it stops
// the agent after the completing call ran.
func peerP3(e *evalEpisode) (bool, int) {
	p := e.pairs
	run, _ := runOf(p, 4)
	for i := range p {
		if i == run && run >= 0 {
			return true, i + 1
		}
		if i >= 5 && p[i] != p[i-1] &&
			p[i] == p[i-2] && p[i] == p[i-4] && p[i-1] == p[i-3] && p[i-1] == p[i-5] {
			return true, i + 1
		}
	}
	return false, 0
}

// peerP4: a warning at the 3rd identical call in a row; the call runs.
func peerP4(e *evalEpisode) (bool, int) {
	if i, ok := runOf(e.keys, 3); ok {
		return true, i + 1
	}
	return false, 0
}

// runOf returns the index of the first element that completes a run of n
// equal elements, and -1, false when there is none.
func runOf(k []string, n int) (int, bool) {
	run := 0
	for i := range k {
		if i > 0 && k[i] == k[i-1] {
			run++
		} else {
			run = 1
		}
		if run == n {
			return i, true
		}
	}
	return -1, false
}

// evalRow is one detector's figures.
type evalRow struct {
	Detector    string
	FalseAlarms int     // success episodes in which it fired
	Caught      int     // loop episodes in which it fired
	Median      float64 // median calls executed at the first firing, over the caught loop episodes
	MedianAll   float64 // the same over all loop episodes, an episode never stopped counting all its calls
}

type evalResult struct {
	row      evalRow
	missed   []string       // loop episodes not caught
	falsePos []string       // success episodes with a firing
	executed map[string]int // loop episode → calls executed at the first firing, caught ones only
}

func evaluate(d detector, eps []evalEpisode) evalResult {
	res := evalResult{row: evalRow{Detector: d.name}, executed: map[string]int{}}
	var caught, all []int
	for i := range eps {
		e := &eps[i]
		fired, n := d.run(e)
		id := e.ep.File + " " + e.ep.Name
		switch {
		case e.ep.Label == "success" && fired:
			res.row.FalseAlarms++
			res.falsePos = append(res.falsePos, id)
		case e.ep.Label == "failure" && isLoop(e.keys):
			if fired {
				res.row.Caught++
				caught = append(caught, n)
				all = append(all, n)
				res.executed[id] = n
			} else {
				res.missed = append(res.missed, id)
				all = append(all, len(e.keys))
			}
		}
	}
	res.row.Median = median(caught)
	res.row.MedianAll = median(all)
	return res
}

// pairRow compares the defaults with one peer on the loop episodes both
// caught.
type pairRow struct {
	Peer                  string
	Both                  int
	Toolguard, PeerMedian float64
	Earlier, Same, Later  int // episodes where toolguard stopped earlier, at the same call, later
}

func compare(def, peer evalResult) pairRow {
	r := pairRow{Peer: peer.row.Detector}
	var a, b []int
	for id, n := range peer.executed {
		m, ok := def.executed[id]
		if !ok {
			continue
		}
		r.Both++
		a, b = append(a, m), append(b, n)
		switch {
		case m < n:
			r.Earlier++
		case m == n:
			r.Same++
		default:
			r.Later++
		}
	}
	r.Toolguard, r.PeerMedian = median(a), median(b)
	return r
}

func median(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int(nil), xs...)
	sort.Ints(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return float64(s[m])
	}
	return float64(s[m-1]+s[m]) / 2
}

func evalDetectors() []detector {
	ds := []detector{toolguardDetector("toolguard defaults", toolguard.Policy{})}
	for _, name := range toolguard.PresetNames() {
		p, err := toolguard.Preset(name)
		if err != nil {
			panic(err)
		}
		ds = append(ds, toolguardDetector("toolguard preset "+name, p))
	}
	return append(ds, peers...)
}

// pinnedEval holds the measured figures. A change in the core that moves
// any of them fails this test; if the change is intended, replace this
// table with the one the failure prints (and docs/evaluation.md with the
// logged table).
var pinnedEval = []evalRow{
	{"toolguard defaults", 0, 35, 5, 5},
	{"toolguard preset loop-detection", 0, 27, 6, 7},
	{"toolguard preset loop-detection-abort", 0, 35, 5, 5},
	{"toolguard preset quota-rule", 0, 35, 5, 5},
	{"toolguard preset turn-budget", 0, 0, 0, 9},
	{"toolguard preset turn-tracker", 23, 35, 3, 3},
	{"peer P1", 0, 13, 6, 7},
	{"peer P2", 0, 14, 5, 7},
	{"peer P3", 0, 26, 6.5, 7},
	{"peer P4", 0, 16, 5, 7},
}

var pinnedPairs = []pairRow{
	{"peer P1", 13, 4, 6, 13, 0, 0},
	{"peer P2", 14, 4, 5, 14, 0, 0},
	{"peer P3", 26, 4.5, 6.5, 26, 0, 0},
	{"peer P4", 16, 4, 5, 16, 0, 0},
}

func TestEvaluation(t *testing.T) {
	eps := loadEvalEpisodes(t)
	success, loops := 0, 0
	for i := range eps {
		switch {
		case eps[i].ep.Label == "success":
			success++
		case eps[i].ep.Label == "failure" && isLoop(eps[i].keys):
			loops++
		}
	}
	var (
		rows    []evalRow
		results []evalResult
	)
	for _, d := range evalDetectors() {
		r := evaluate(d, eps)
		rows = append(rows, r.row)
		results = append(results, r)
	}

	def := results[0]
	var pairs []pairRow
	for _, r := range results[len(results)-len(peers):] {
		pairs = append(pairs, compare(def, r))
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%d episodes; %d labelled success; %d labelled failure with a loop\n\n", len(eps), success, loops)
	fmt.Fprintln(&b, "| detector | false alarms (of success) | loop episodes caught | median calls executed at the first stop (caught episodes) | median over all loop episodes (never stopped = all calls) |")
	fmt.Fprintln(&b, "|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d of %d | %d of %d (%.0f%%) | %g | %g |\n", r.Detector, r.FalseAlarms, success,
			r.Caught, loops, 100*float64(r.Caught)/float64(max(loops, 1)), r.Median, r.MedianAll)
	}
	fmt.Fprintln(&b, "\nOn the loop episodes that both the defaults and the peer caught:")
	fmt.Fprintln(&b, "\n| peer | episodes | median calls executed, toolguard defaults | median calls executed, peer | toolguard earlier / same / later |")
	fmt.Fprintln(&b, "|---|---|---|---|---|")
	for _, p := range pairs {
		fmt.Fprintf(&b, "| %s | %d | %g | %g | %d / %d / %d |\n", p.Peer, p.Both, p.Toolguard, p.PeerMedian, p.Earlier, p.Same, p.Later)
	}
	t.Log("\n" + b.String())

	t.Logf("defaults: missed loop episodes: %v", def.missed)
	t.Logf("defaults: false alarms: %v", def.falsePos)
	checkTargets(t, rows, loops)

	var lit strings.Builder
	fmt.Fprintln(&lit, "var pinnedEval = []evalRow{")
	for _, r := range rows {
		fmt.Fprintf(&lit, "\t{%q, %d, %d, %g, %g},\n", r.Detector, r.FalseAlarms, r.Caught, r.Median, r.MedianAll)
	}
	fmt.Fprintln(&lit, "}\n\nvar pinnedPairs = []pairRow{")
	for _, p := range pairs {
		fmt.Fprintf(&lit, "\t{%q, %d, %g, %g, %d, %d, %d},\n", p.Peer, p.Both, p.Toolguard, p.PeerMedian, p.Earlier, p.Same, p.Later)
	}
	fmt.Fprintln(&lit, "}")
	if fmt.Sprint(rows) != fmt.Sprint(pinnedEval) || fmt.Sprint(pairs) != fmt.Sprint(pinnedPairs) {
		t.Errorf("the evaluation figures changed; if intended, pin them:\n%s", lit.String())
	}
}

// checkTargets logs whether the defaults meet the targets: no false alarm,
// at least 90%% of the loop episodes caught, at least as many caught as
// every peer, and a lower median of calls executed than every peer.
func checkTargets(t *testing.T, rows []evalRow, loops int) {
	def := rows[0]
	ok := func(b bool) string {
		if b {
			return "met"
		}
		return "MISSED"
	}
	t.Logf("target no false alarm: %s", ok(def.FalseAlarms == 0))
	t.Logf("target >= 90%% caught: %s", ok(10*def.Caught >= 9*loops))
	for _, p := range rows[len(rows)-len(peers):] {
		t.Logf("target vs %s: caught %d >= %d: %s; median %g < %g: %s", p.Detector,
			def.Caught, p.Caught, ok(def.Caught >= p.Caught), def.Median, p.Median, ok(def.Median < p.Median))
	}
}
