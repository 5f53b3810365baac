// Command loop-detection runs the "loop-detection" preset (an agent SDK's
// tool executor: maxRepeats 3, hint, then abort) through Tracker.Run, and
// shows a polling tool opted out.
//
//	go run ./examples/loop-detection
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolguard/toolguard"
)

func main() {
	p, err := toolguard.Preset("loop-detection")
	if err != nil {
		panic(err)
	}
	p.Tools = map[string]toolguard.ToolPolicy{"wait_for_deploy": {Exempt: true}}
	tr := toolguard.NewTracker(p)
	exec := func(ctx context.Context, c toolguard.Call) (string, error) {
		if c.Tool == "wait_for_deploy" {
			return "deploying", nil
		}
		return "Paris: 18°C, sunny", nil
	}
	ctx := context.Background()
	weather := toolguard.Call{Tool: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}
	for i := 1; i <= 5; i++ {
		r := tr.Run(ctx, weather, exec)
		var le *toolguard.LoopError
		switch {
		case errors.As(r.Err, &le):
			fmt.Printf("call %d: abort: tool=%s reason=%s count=%d key=%s\n", i, le.Tool, le.Reason, le.Count, le.Key)
		case r.Err != nil:
			fmt.Printf("call %d: error %v\n", i, r.Err)
		case r.Decision.Verdict == toolguard.Hint:
			fmt.Printf("call %d: hint (%s), the model reads: %s\n", i, r.Decision.Reason, r.Text)
		default:
			fmt.Printf("call %d: %s\n", i, r.Text)
		}
	}
	poll := toolguard.Call{Tool: "wait_for_deploy", Args: json.RawMessage(`{}`)}
	for i := 1; i <= 6; i++ {
		fmt.Printf("poll %d: %s\n", i, tr.Run(ctx, poll, exec).Text)
	}
}
