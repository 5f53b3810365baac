package audit

import (
	"strings"
	"testing"
)

// The peers' published rules as reference functions over one sequence of
// canonical calls (e.keys) and call-and-result pairs (e.pairs). Each
// returns whether it fired and how many calls had run when it stopped the
// agent: a rule that blocks a call counts the calls before it, one that
// stops the agent after the call ran, or only warns, counts that call too.

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

// TestPeers pins the reference functions of the peer rules on small
// sequences. Each letter is one canonical call; a digit after it is its
// result (P3 compares call-and-result pairs).
func TestPeers(t *testing.T) {
	tests := []struct {
		seq            string
		p1, p2, p3, p4 int // calls executed when the rule first fired; -1: never
	}{
		{"A B C D E", -1, -1, -1, -1},
		{"A A", -1, -1, -1, -1},
		{"A A A", -1, -1, -1, 3},              // P4 warns at the 3rd, after it ran
		{"A A A A", -1, 3, 4, 3},              // P2 blocks the 4th; P3 stops after it
		{"A1 A2 A3 A4", -1, 3, -1, 3},         // results changed: not P3
		{"A A A A A", 4, 3, 4, 3},             // P1 blocks the 5th
		{"A B A B", -1, -1, -1, -1},           // no peer sees a short alternation
		{"A B A B A B", -1, -1, 6, -1},        // P3: A,B over the last 6
		{"A B A B A B A B A B", 9, -1, 6, -1}, // P1: cycle of 2, 5 times
		{"X A B C A B C A B C A B C A B C", 15, -1, -1, -1},
		{"A1 B A2 B A1 B", -1, -1, -1, -1}, // P3 compares results too
	}
	for _, tt := range tests {
		e := &evalEpisode{}
		for _, tok := range strings.Fields(tt.seq) {
			e.keys = append(e.keys, tok[:1])
			e.pairs = append(e.pairs, tok)
		}
		for i, f := range []func(*evalEpisode) (bool, int){peerP1, peerP2, peerP3, peerP4} {
			want := []int{tt.p1, tt.p2, tt.p3, tt.p4}[i]
			fired, n := f(e)
			if !fired {
				n = -1
			}
			if n != want {
				t.Errorf("%s: P%d = %d, want %d", tt.seq, i+1, n, want)
			}
		}
	}
}

func TestIsOldLoop(t *testing.T) {
	tests := map[string]bool{
		"A B C":       false,
		"A A":         false,
		"A B A":       false,
		"A B C A D A": true, // 3 times, anywhere
		"A B A B":     true,
		"C A B A B":   true,
		"A A B B":     false,
	}
	for seq, want := range tests {
		if got := isOldLoop(strings.Fields(seq)); got != want {
			t.Errorf("isOldLoop(%s) = %v, want %v", seq, got, want)
		}
	}
}

// episodeOf builds an episode from "A1 B!2 | A1": a letter is a canonical
// call, the digits after it its result, "!" a failure, "|" a new user turn.
func episodeOf(seq string) *evalEpisode {
	var ep Episode
	turn := 1
	for _, tok := range strings.Fields(seq) {
		if tok == "|" {
			turn++
			continue
		}
		c := Call{Round: len(ep.Calls) + 1, Turn: turn, Tool: tok[:1], Result: strings.TrimPrefix(tok[1:], "!")}
		c.Failed = strings.HasPrefix(tok[1:], "!")
		ep.Calls = append(ep.Calls, c)
	}
	e := newEvalEpisode("f", ep)
	return &e
}

func TestIsStuck(t *testing.T) {
	tests := []struct {
		seq  string
		want bool
	}{
		{"A1 A1 A1", true},
		{"A1 A1", false},
		{"A!1 A!1 A!1", true},                 // the same failure three times
		{"A1 A2 A3 A4", false},                // a poll whose result changes
		{"A1 A1 | A1", false},                 // a new user turn starts over
		{"A1 B1 A1 A1", false},                // B, new and successful, made progress
		{"A1 B1 A1 A1 A1", true},              // three since then
		{"A!1 B!1 A!1 A!1", true},             // a failing B is no progress
		{"A1 A2 A1 A1", false},                // A2 changed A's result: progress
		{"A1 A!2 A1 A1", true},                // a changed result that failed is none
		{"A1 B1 A1 B1 C1 A1", true},           // the same B result: no progress, A three times
		{"A1 B1 A1 B2 A1", false},             // B's result changed in between
		{"A1 B2 A1 B2", true},                 // A,B,A,B with unchanged results
		{"A1 B2 A3 B2", false},                // A's result changed
		{"A1 B2 | A1 B2", false},              // across user turns
		{"A1 A1 B1 B1 C1 C1", false},          // pairs only
		{"X1 A!1 B1 A!1 C1 A!1", false},       // B and C, new and successful, in between
		{"X1 A!1 B1 A!1 B1 A!1 B1 A!1", true}, // B repeats without a new result
	}
	for _, tt := range tests {
		if got := isStuck(episodeOf(tt.seq)); got != tt.want {
			t.Errorf("isStuck(%s) = %v, want %v", tt.seq, got, tt.want)
		}
	}
}

// TestPeersPerUserTurn: a peer replayed per user turn starts afresh at a
// new user turn, and counts the calls executed over the whole episode.
func TestPeersPerUserTurn(t *testing.T) {
	tests := []struct {
		seq         string
		turn, whole stop
	}{
		{"A1 A1 | A1 A1", stop{}, stop{true, 3}},
		{"X1 | A1 A1 A1 A1", stop{true, 4}, stop{true, 4}},
		{"A1 A1 A1 | A1 A1 A1 A1", stop{true, 6}, stop{true, 3}},
	}
	for _, tt := range tests {
		e := episodeOf(tt.seq)
		if got := perUserTurn("P2", peerP2).run(e); got != tt.turn {
			t.Errorf("%s: per user turn %v, want %v", tt.seq, got, tt.turn)
		}
		if got := wholeEpisode("P2", peerP2).run(e); got != tt.whole {
			t.Errorf("%s: whole episode %v, want %v", tt.seq, got, tt.whole)
		}
	}
}

func TestCanonicalCall(t *testing.T) {
	a := canonicalCall(Call{Tool: "f", Args: []byte(`{"b": 1, "a": {"y": 2, "x": 1}}`)})
	b := canonicalCall(Call{Tool: "f", Args: []byte(`{"a":{"x":1,"y":2},"b":1}`)})
	if a != b {
		t.Errorf("key order matters: %q != %q", a, b)
	}
	if canonicalCall(Call{Tool: "g", Args: []byte(`{"a":1}`)}) == canonicalCall(Call{Tool: "f", Args: []byte(`{"a":1}`)}) {
		t.Errorf("the tool is part of the key")
	}
}
