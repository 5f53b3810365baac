package toolguard

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNegativeMeansOff: a negative count turns its rule off, for every rule
// — the rule's two fields (CyclePeriod and CycleRepeats, Window and
// WindowLimit) alike — and Validate accepts it.
func TestNegativeMeansOff(t *testing.T) {
	A := call("a", `{"n":1}`)
	B := call("b", `{"n":2}`)
	cycle := []step{
		allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"), allow(A, "1"), allow(B, "2"),
		allow(A, "1"), allow(B, "2"), allow(A, "1"),
	}
	q := func(s string) Call { return call("web_search", fmt.Sprintf(`{"query":%q}`, s)) }
	var churn []step
	for _, s := range []string{"fix bug", "fix the bug", "fix a bug", "fix bugs", "fix the bugs", "fix that bug", "fix this bug", "fix those bugs"} {
		churn = append(churn, allow(q(s), "same"))
	}
	noSimilar := Policy{SimilarityThreshold: -1}
	tests := []struct {
		name   string
		policy Policy
		steps  []step
		on     Policy // the same policy with the rule on: the steps do not all pass
	}{
		{"CyclePeriod -1", Policy{MaxRepeats: 10, CyclePeriod: -1}, cycle, Policy{MaxRepeats: 10}},
		{"CycleRepeats -1", Policy{MaxRepeats: 10, CycleRepeats: -1}, cycle, Policy{MaxRepeats: 10}},
		{"Window -1", Policy{SimilarityThreshold: -1, Window: -1}, churn, noSimilar},
		{"WindowLimit -1", Policy{SimilarityThreshold: -1, WindowLimit: -1}, churn, noSimilar},
		{"MaxRepeats -1", Policy{MaxRepeats: -1, CyclePeriod: -1}, []step{
			allow(A, "1"), allow(A, "1"), allow(A, "1"), allow(A, "1"),
		}, Policy{CyclePeriod: -1}},
		{"MaxFailures -1", Policy{MaxFailures: -1}, []step{
			fail(call("run", `{"cmd":"make a"}`), "exit 2"), fail(call("run", `{"cmd":"make b"}`), "exit 2"),
			fail(call("run", `{"cmd":"make c"}`), "exit 2"), fail(call("run", `{"cmd":"make d"}`), "exit 2"),
			fail(call("run", `{"cmd":"make e"}`), "exit 2"),
		}, Policy{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.policy.Validate())
			run(t, NewTracker(tt.policy), tt.steps)
			// The steps would fire with the rule on.
			tr := NewTracker(tt.on)
			fired := false
			for _, s := range tt.steps {
				d := tr.ShouldSkip(s.call)
				if d.Skip() {
					fired = true
					break
				}
				tr.Record(s.call, Outcome{Result: s.result, Err: s.err})
			}
			require.True(t, fired, "the steps do not exercise the rule")
		})
	}
}
