package toolguard_test

import (
	"encoding/json"
	"fmt"

	"github.com/toolguard/toolguard"
)

// A server with one Tracker per conversation opens them from one Sessions
// and releases each when its conversation ends.
func ExampleSessions() {
	sessions := toolguard.NewSessions(toolguard.Policy{}) // once, at start-up

	conversation := func(name string) {
		tr := sessions.NewTracker()
		defer sessions.Release(tr) // the conversation is over: tr is not used after
		c := toolguard.Call{Tool: "read_file", Args: json.RawMessage(`{"path":"go.mod"}`)}
		for range 3 {
			d := tr.ShouldSkip(c)
			fmt.Println(name, d.Verdict, d.Reason)
			if !d.Skip() {
				tr.Record(c, toolguard.Outcome{Result: "module example.com/app"})
			}
		}
	}
	conversation("first:")
	conversation("second:") // its own session: nothing of the first is left
	// Output:
	// first: allow none
	// first: allow none
	// first: hint duplicate
	// second: allow none
	// second: allow none
	// second: hint duplicate
}
