// Command turn-budget runs the "turn-budget" preset (an agent runtime's turn
// budget): 30 calls per turn, a nudge at 75%, wind-down at 100%, and the
// refusal of a call asked for after the tools were stripped.
//
//	go run ./examples/turn-budget
package main

import (
	"encoding/json"
	"fmt"

	"github.com/toolguard/toolguard"
)

func main() {
	p, err := toolguard.Preset("turn-budget")
	if err != nil {
		panic(err)
	}
	tr := toolguard.NewTracker(p)
	last := toolguard.PhaseNormal
	for round := 1; ; round++ {
		// The model asks for three files at a time; each call counts.
		calls := make([]toolguard.Call, 3)
		for i := range calls {
			calls[i] = toolguard.Call{Tool: "read_file", Args: json.RawMessage(fmt.Sprintf(`{"path":"src/%d_%d.go"}`, round, i))}
		}
		for i, d := range tr.ShouldSkipRound(calls) {
			if d.Verdict != toolguard.Allow {
				fmt.Printf("round %d call %d refused: %v (phase %s)\n", round, i+1, d.Err, d.Phase)
				return
			}
			if phase := tr.Record(calls[i], toolguard.Outcome{Result: "package src"}); phase != last {
				g := tr.Guidance()
				fmt.Printf("round %d call %d -> %s: %q strip tools: %v\n", round, i+1, phase, g.Message, g.StripTools)
				last = phase
			}
		}
	}
}
