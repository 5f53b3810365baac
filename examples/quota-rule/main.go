// Command quota-rule runs the "quota-rule" preset (a portable agent rule):
// a failing command retried with tweaks, then a quota declared by the agent,
// and ends with the escalation summary the agent must report.
//
//	go run ./examples/quota-rule
package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolguard/toolguard"
)

func main() {
	p, err := toolguard.Preset("quota-rule")
	if err != nil {
		panic(err)
	}
	p.AgentQuota = &toolguard.Quota{Tools: map[string]int{"WebFetch": 2}, Default: 20}
	tr := toolguard.NewTracker(p)

	step := func(tool, args, result, failure string) {
		c := toolguard.Call{Tool: tool, Args: json.RawMessage(args)}
		d := tr.ShouldSkip(c)
		fmt.Printf("%-8s %-40s %-5s %s\n", tool, args, d.Verdict, d.Reason)
		if d.Verdict != toolguard.Allow {
			return
		}
		var err error
		if failure != "" {
			err = errors.New(failure)
		}
		tr.Record(c, toolguard.Outcome{Result: result, Err: err})
	}

	step("Bash", `{"command":"npm test"}`, "", `npm ERR! Missing script: "test" (exit 1)`)
	step("Bash", `{"command":"npm run test"}`, "", `npm ERR! Missing script: "test" (exit 1)`)
	step("Bash", `{"command":"npm test -- --ci"}`, "", `npm ERR! Missing script: "test" (exit 1)`)
	step("Bash", `{"command":"npm t"}`, "", "")                          // fires: stop retrying, diagnose
	step("Bash", `{"command":"cat package.json"}`, `{"scripts":{}}`, "") // the evidence-backed attempt
	step("WebFetch", `{"url":"https://docs.npmjs.com/cli/run"}`, "npm run docs", "")
	step("WebFetch", `{"url":"https://docs.npmjs.com/cli/test"}`, "npm test docs", "")
	step("WebFetch", `{"url":"https://docs.npmjs.com/cli/config"}`, "", "") // agent quota: 2

	fmt.Println()
	fmt.Println(tr.Summary())
}
