package hook

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/cmd/toolguard/internal/audit"
)

// TestCLIDefaults replays the labelled traces (coding agents included)
// under the library's zero Policy and under the hooks' policy, and prints
// per label the episodes in which a rule fired and the calls refused, by
// reason. docs/hooks.md quotes the table:
//
//	go test -run TestCLIDefaults -v ./internal/hook/
//
// It pins what the choice rests on: the hooks' policy fires no budget
// refusal, and decides every labelled loop as the zero Policy does.
func TestCLIDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the traces")
	}
	policies := []struct {
		name string
		p    toolguard.Policy
	}{
		{"library zero Policy (budget 300)", toolguard.Policy{}},
		{"hooks (no turn budget)", cliPolicy(claudeAgent, nil)},
	}
	var eps []audit.Episode
	for _, f := range fixtures(t, true) {
		if !strings.Contains(f, "traces") {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		_, got, err := audit.Parse(f, data)
		require.NoError(t, err)
		eps = append(eps, got...)
	}
	maxTurn := 0
	for _, ep := range eps {
		per := map[int]int{}
		for _, c := range ep.Calls {
			per[c.Turn]++
			maxTurn = max(maxTurn, per[c.Turn])
		}
	}
	t.Logf("%d episodes; the longest turn has %d calls", len(eps), maxTurn)
	fired := map[string]map[string]int{}
	for _, pol := range policies {
		episodes := map[string]int{}
		reasons := map[toolguard.Reason]int{}
		for k := range eps {
			any := false
			for _, d := range audit.Replay(pol.p, &eps[k]) {
				if d.Fired() {
					any = true
					reasons[d.Reason]++
				}
			}
			if any {
				episodes[labelOf(&eps[k])]++
			}
		}
		fired[pol.name] = episodes
		t.Logf("%-34s episodes fired: success %d, failure %d, unknown %d; refusals by reason %v",
			pol.name, episodes["success"], episodes["failure"], episodes["unknown"], reasons)
		if pol.p.MaxCallsPerTurn < 0 {
			require.Zero(t, reasons[toolguard.ReasonBudget])
		}
	}
	require.Equal(t, fired[policies[0].name], fired[policies[1].name])

	// A long autonomous session: 3,000 calls of coding work in one turn.
	ep := audit.Episode{}
	for i := 0; i < sessionCalls; i++ {
		tool, args, res := codingCall(i)
		ep.Calls = append(ep.Calls, audit.Call{Round: i + 1, Turn: 1, ID: fmt.Sprint(i), Tool: tool, Args: []byte(js(args)), Result: res})
	}
	budget := func(p toolguard.Policy) int {
		n := 0
		for _, d := range audit.Replay(p, &ep) {
			if d.Reason == toolguard.ReasonBudget {
				n++
			}
		}
		return n
	}
	t.Logf("3,000-call session: budget refusals under the zero Policy %d, under the hooks' %d",
		budget(toolguard.Policy{}), budget(cliPolicy(claudeAgent, nil)))
	require.Positive(t, budget(toolguard.Policy{}))
	require.Zero(t, budget(cliPolicy(claudeAgent, nil)))
}

func labelOf(ep *audit.Episode) string {
	if ep.Label == "" {
		return "unknown"
	}
	return ep.Label
}

// sessionCalls is the size of the session the benchmarks decide in.
const sessionCalls = 3000

// codingCall is call i of a made-up coding session: edits, tests, reads
// and searches over a few dozen files, with results of a few hundred bytes.
func codingCall(i int) (tool string, args map[string]any, result string) {
	f := fmt.Sprintf("pkg%d/file%d.go", i%7, i%41)
	switch i % 5 {
	case 0:
		return "Edit", map[string]any{"file_path": "/w/" + f, "old_string": fmt.Sprint("x", i), "new_string": fmt.Sprint("y", i)}, "ok"
	case 1:
		return "Bash", map[string]any{"command": fmt.Sprintf("go test ./pkg%d/...", i%7)},
			strings.Repeat(fmt.Sprintf("--- FAIL: TestX%d (0.%02ds)\n", i%13, i%100), 8)
	case 2:
		return "Read", map[string]any{"file_path": "/w/" + f}, strings.Repeat("package x\n", 40)
	case 3:
		return "Grep", map[string]any{"pattern": fmt.Sprint("func Test", i%17), "path": "/w"}, f
	}
	return "Bash", map[string]any{"command": fmt.Sprintf("git diff --stat pkg%d", i%7)}, fmt.Sprintf("%d files changed", i%9)
}
