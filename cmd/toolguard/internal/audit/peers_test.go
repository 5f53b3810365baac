package audit

import (
	"strings"
	"testing"
)

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

func TestIsLoop(t *testing.T) {
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
		if got := isLoop(strings.Fields(seq)); got != want {
			t.Errorf("isLoop(%s) = %v, want %v", seq, got, want)
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

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		xs   []int
		want float64
	}{{nil, 0}, {[]int{3}, 3}, {[]int{5, 1, 3}, 3}, {[]int{4, 1, 3, 2}, 2.5}} {
		if got := median(tt.xs); got != tt.want {
			t.Errorf("median(%v) = %g, want %g", tt.xs, got, tt.want)
		}
	}
}
