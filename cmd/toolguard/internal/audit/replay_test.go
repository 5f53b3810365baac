package audit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolguard/toolguard"
)

// call builds a recorded call; args is a JSON object or "".
func call(round, turn int, tool, args, result string, failed bool) Call {
	c := Call{Round: round, Turn: turn, Tool: tool, Result: result, Failed: failed, ID: fmt.Sprintf("c%d", round)}
	if args != "" {
		c.Args = []byte(args)
	}
	return c
}

// seq builds one call per round, all in turn 1.
func seq(tool string, args []string, results []string, failed bool) []Call {
	var cs []Call
	for i := range args {
		cs = append(cs, call(i+1, 1, tool, args[i], results[i], failed))
	}
	return cs
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// verdicts renders decisions as "a a h:duplicate x:duplicate": a allow,
// h hint, x abort.
func verdicts(ds []Decision) string {
	var parts []string
	for _, d := range ds {
		switch d.Verdict {
		case toolguard.Allow:
			parts = append(parts, "a")
		case toolguard.Hint:
			parts = append(parts, "h:"+d.Reason.String())
		default:
			parts = append(parts, "x:"+d.Reason.String())
		}
	}
	return strings.Join(parts, " ")
}

func TestReplay(t *testing.T) {
	polls := []string{"running", "running 40%", "running 80%", "done"}
	distinct := make([]string, 32)
	for i := range distinct {
		distinct[i] = fmt.Sprintf(`{"path":"f%d.go"}`, i)
	}
	tests := []struct {
		name   string
		policy toolguard.Policy
		calls  []Call
		want   string
	}{
		{
			name:  "identical calls without progress: the third hints, the next aborts",
			calls: seq("get_weather", repeat(`{"city":"Paris"}`, 4), repeat("18°C", 4), false),
			want:  "a a h:duplicate x:duplicate",
		},
		{
			name:  "a poll whose result changes never fires",
			calls: seq("job_status", repeat(`{"id":"42"}`, 4), polls, false),
			want:  "a a a a",
		},
		{
			name: "a new user turn resets the counters",
			calls: []Call{
				call(1, 1, "get_weather", `{"city":"Paris"}`, "18°C", false),
				call(2, 1, "get_weather", `{"city":"Paris"}`, "18°C", false),
				call(3, 2, "get_weather", `{"city":"Paris"}`, "18°C", false),
				call(4, 2, "get_weather", `{"city":"Paris"}`, "18°C", false),
			},
			want: "a a a a",
		},
		{
			name: "skipped calls are not recorded; the replay goes on",
			calls: []Call{
				call(1, 1, "get_weather", `{"city":"Paris"}`, "18°C", false),
				call(2, 1, "get_weather", `{"city":"Paris"}`, "18°C", false),
				call(3, 1, "get_weather", `{"city":"Paris"}`, "18°C", false),
				call(4, 1, "get_weather", `{"city":"Rome"}`, "24°C", false),
			},
			want: "a a h:duplicate a",
		},
		{
			name:  "recorded failures count as failures",
			calls: seq("bash", []string{`{"c":"make a"}`, `{"c":"make b"}`, `{"c":"make c"}`, `{"c":"make d"}`}, repeat("make: *** No rule to make target", 4), true),
			want:  "a a a h:repeated_failure",
		},
		{
			name:   "a preset applies",
			policy: mustPreset("loop-detection-abort"),
			calls:  seq("get_weather", repeat(`{"city":"Paris"}`, 3), repeat("18°C", 3), false),
			want:   "a a x:duplicate",
		},
		{
			name:   "the turn budget: refused after the wind-down",
			policy: toolguard.Policy{MaxCallsPerTurn: 30},
			calls:  seq("read_file", distinct, repeat("package x", 32), false),
			want:   strings.TrimSpace(strings.Repeat("a ", 30)) + " x:budget x:budget",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := &Episode{Name: "e", Calls: tt.calls}
			ds := Replay(tt.policy, ep)
			if got := verdicts(ds); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			for i, d := range ds {
				c := tt.calls[i]
				if d.Index != i+1 || d.Tool != c.Tool || d.Round != c.Round || d.Turn != c.Turn || d.CallID != c.ID {
					t.Errorf("decision %d = %+v does not describe call %+v", i, d, c)
				}
				if d.Fired() != (d.Message != "") {
					t.Errorf("decision %d: message %q for verdict %s", i, d.Message, d.Verdict)
				}
				if d.Fired() && !strings.HasPrefix(d.Message, toolguard.HintMarker) && !strings.HasPrefix(d.Message, "[budget-exhausted] ") {
					t.Errorf("decision %d: message %q lacks the hint marker", i, d.Message)
				}
			}
		})
	}
}

func mustPreset(name string) toolguard.Policy {
	p, err := toolguard.Preset(name)
	if err != nil {
		panic(err)
	}
	return p
}

func TestReplayPhases(t *testing.T) {
	distinct := make([]string, 31)
	for i := range distinct {
		distinct[i] = fmt.Sprintf(`{"path":"f%d.go"}`, i)
	}
	ds := Replay(toolguard.Policy{MaxCallsPerTurn: 30}, &Episode{Calls: seq("read_file", distinct, repeat("x", 31), false)})
	for i, d := range ds {
		var want toolguard.Phase
		switch n := i + 1; {
		case n == 31:
			want = toolguard.PhaseExhausted
		case n == 30:
			want = toolguard.PhaseWindDown
		case n >= 22: // ⌊0.75·30⌋
			want = toolguard.PhaseNudge
		}
		if d.Phase != want {
			t.Errorf("call %d: phase %s, want %s", i+1, d.Phase, want)
		}
	}
}

func TestReplayRounds(t *testing.T) {
	// Similar queries asked together in one model response are distinct
	// questions; the same queries in separate responses are not.
	queries := []string{`{"query":"go loop detection library"}`, `{"query":"Go loop detection library"}`}
	together := []Call{
		call(1, 1, "web_search", queries[0], "r1", false),
		call(1, 1, "web_search", queries[1], "r2", false),
	}
	apart := []Call{
		call(1, 1, "web_search", queries[0], "r1", false),
		call(2, 1, "web_search", queries[1], "r2", false),
	}
	p := toolguard.Policy{MaxRepeats: -1, SimilarIgnoresResults: true}
	if got := verdicts(Replay(p, &Episode{Calls: together})); got != "a a" {
		t.Errorf("one round: %s", got)
	}
	if got := verdicts(Replay(p, &Episode{Calls: apart})); got != "a h:similar_query" {
		t.Errorf("two rounds: %s", got)
	}
}

func TestReplayFixtures(t *testing.T) {
	tests := []struct {
		file string
		want []string // per episode
	}{
		{"episodes.jsonl", []string{"a a a a", "a a a h:duplicate x:duplicate x:duplicate", "a a a"}},
		{"openai.json", []string{"a a a a h:duplicate a a"}},
		{"openai.jsonl", []string{"a a", "a a h:duplicate x:duplicate x:duplicate a"}},
		{"anthropic.json", []string{"a a a a a a"}}, // read_file may have changed the world: the test runs twice after it
		{"anthropic_array.json", []string{"a a"}},
	}
	for _, tt := range tests {
		_, eps, err := Parse(tt.file, readFixture(t, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		for i := range eps {
			if got := verdicts(Replay(toolguard.Policy{}, &eps[i])); got != tt.want[i] {
				t.Errorf("%s %s:\n got  %s\n want %s", tt.file, eps[i].Name, got, tt.want[i])
			}
		}
	}
}
