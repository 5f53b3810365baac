// Command turn-tracker runs the "turn-tracker" preset (a chat service's
// per-turn tool tracker): per-tool limits, the second identical call
// blocked, and similar queries for search tools.
//
//	go run ./examples/turn-tracker
package main

import (
	"encoding/json"
	"fmt"

	"github.com/toolguard/toolguard"
)

func main() {
	p, err := toolguard.Preset("turn-tracker")
	if err != nil {
		panic(err)
	}
	tr := toolguard.NewTracker(p)
	calls := []struct{ tool, args string }{
		{"search_knowledge", `{"query":"How do I reset my password?"}`},
		{"search_knowledge", `{"query":"how do i reset my password"}`}, // similar
		{"search_knowledge", `{"query":"delete user"}`},
		{"search_knowledge", `{"query":"deactivate user"}`}, // limit 2 reached
		{"read_file", `{"path":"README.md"}`},
		{"read_file", `{"path":"README.md"}`}, // identical
		{"composio_execute", `{"action":"GITHUB_CREATE_ISSUE"}`},
		{"composio_execute", `{"action":"SLACK_SEND_MESSAGE"}`},
		{"composio_execute", `{"action":"GMAIL_SEND"}`}, // limit 2
	}
	for _, c := range calls {
		call := toolguard.Call{Tool: c.tool, Args: json.RawMessage(c.args)}
		d := tr.ShouldSkip(call)
		if d.Verdict == toolguard.Allow {
			tr.Record(call, toolguard.Outcome{Result: "ok: " + c.args})
			fmt.Printf("%-17s %-40s run\n", c.tool, c.args)
			continue
		}
		fmt.Printf("%-17s %-40s %s: %s\n", c.tool, c.args, d.Verdict, d.Message)
	}
}
