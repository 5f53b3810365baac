// Command loop-detection runs the "loop-detection" preset (an agent SDK's
// tool executor: maxRepeats 3, hint, then abort) through Tracker.Wrap, and
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
	exec := tr.Wrap(func(ctx context.Context, c toolguard.Call) (string, error) {
		if c.Tool == "wait_for_deploy" {
			return "deploying", nil
		}
		return "Paris: 18°C, sunny", nil
	})
	ctx := context.Background()
	weather := toolguard.Call{Tool: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}
	for i := 1; i <= 5; i++ {
		out, err := exec(ctx, weather)
		var le *toolguard.LoopError
		switch {
		case errors.As(err, &le):
			fmt.Printf("call %d: abort: tool=%s reason=%s count=%d key=%s\n", i, le.Tool, le.Reason, le.Count, le.Key)
		case err != nil:
			fmt.Printf("call %d: error %v\n", i, err)
		default:
			fmt.Printf("call %d: %s\n", i, out)
		}
	}
	poll := toolguard.Call{Tool: "wait_for_deploy", Args: json.RawMessage(`{}`)}
	for i := 1; i <= 6; i++ {
		out, _ := exec(ctx, poll)
		fmt.Printf("poll %d: %s\n", i, out)
	}
}
