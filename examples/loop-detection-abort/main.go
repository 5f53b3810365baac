// Command loop-detection-abort runs the "loop-detection-abort" preset (an
// agent SDK's tool executor with maxRepeats 2 and action abort): the third
// identical call stops the turn with a typed error, without a hint first.
//
//	go run ./examples/loop-detection-abort
package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolguard/toolguard"
)

func main() {
	p, err := toolguard.Preset("loop-detection-abort")
	if err != nil {
		panic(err)
	}
	tr := toolguard.NewTracker(p)
	calls := []toolguard.Call{
		{ID: "1", Tool: "list_issues", Args: json.RawMessage(`{"repo":"acme/api","state":"open"}`)},
		{ID: "2", Tool: "list_issues", Args: json.RawMessage(`{"state":"open","repo":"acme/api"}`)}, // same call, keys reordered
		{ID: "3", Tool: "list_issues", Args: json.RawMessage(`{"repo":"acme/api", "state":"open"}`)},
	}
	for _, c := range calls {
		d := tr.ShouldSkip(c)
		if d.Verdict == toolguard.Allow {
			tr.Record(c, toolguard.Outcome{Result: `[{"number":42,"title":"500 on /login"}]`})
			fmt.Printf("call %s: ran\n", c.ID)
			continue
		}
		var le *toolguard.LoopError
		if errors.As(d.Err, &le) {
			fmt.Printf("call %s: %s, turn stopped: tool=%s reason=%s count=%d\n", c.ID, d.Verdict, le.Tool, le.Reason, le.Count)
		}
	}
}
