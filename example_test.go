package toolguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard"
)

func call(tool, args string) toolguard.Call {
	return toolguard.Call{Tool: tool, Args: json.RawMessage(args)}
}

// A harness asks before each call and records after it.
func ExampleTracker_ShouldSkip() {
	tr := toolguard.NewTracker(toolguard.Policy{})
	c := call("read_file", `{"path":"main.go"}`)
	for i := 0; i < 4; i++ {
		d := tr.ShouldSkip(c)
		fmt.Println(d.Verdict, d.Reason)
		if d.Verdict == toolguard.Allow {
			tr.Record(c, toolguard.Outcome{Result: "package main"})
		}
	}
	// Output:
	// allow none
	// allow none
	// hint duplicate
	// abort duplicate
}

// Keys are sorted, whitespace and number spelling do not matter.
func ExampleTracker_ShouldSkip_canonicalArguments() {
	tr := toolguard.NewTracker(toolguard.Policy{MaxRepeats: 1})
	tr.Record(call("get", `{"id": 1.0, "fields": ["a","b"]}`), toolguard.Outcome{Result: "x"})
	fmt.Println(tr.ShouldSkip(call("get", `{"fields":["a","b"],"id":1}`)).Reason)
	fmt.Println(tr.ShouldSkip(call("get", `{"fields":["b","a"],"id":1}`)).Reason)
	// Output:
	// duplicate
	// none
}

// A poll whose result changes made progress: it never fires.
func ExampleTracker_Record_polling() {
	tr := toolguard.NewTracker(toolguard.Policy{})
	c := call("job_status", `{"job":"build"}`)
	for _, out := range []string{"queued", "running", "running", "done"} {
		d := tr.ShouldSkip(c)
		fmt.Println(out, d.Verdict)
		if d.Verdict == toolguard.Allow {
			tr.Record(c, toolguard.Outcome{Result: out})
		}
	}
	// Output:
	// queued allow
	// running allow
	// running allow
	// done hint
}

// The turn budget nudges at 75% and winds down at 100%.
func ExampleTracker_Guidance() {
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4})
	for i := 1; i <= 5; i++ {
		c := call("step", fmt.Sprintf(`{"n":%d}`, i))
		d := tr.ShouldSkip(c)
		if d.Verdict != toolguard.Allow {
			fmt.Println(errors.Is(d.Err, toolguard.ErrBudgetExhausted), d.Phase)
			break
		}
		phase := tr.Record(c, toolguard.Outcome{Result: "ok"})
		fmt.Println(strings.TrimSpace(fmt.Sprint(i, " ", phase, " ", tr.Guidance().Message)))
	}
	// Output:
	// 1 normal
	// 2 normal
	// 3 nudge You have used 3 of 4 tool calls. Start wrapping up.
	// 4 wind_down You have used all 4 tool calls for this turn. Summarize your work and answer the user's question.
	// true exhausted
}

// Run puts the Tracker around an executor: it checks the call, runs it
// only when allowed, records it, and says what happened.
func ExampleTracker_Run() {
	tr := toolguard.NewTracker(toolguard.Policy{MaxRepeats: 1})
	exec := func(ctx context.Context, c toolguard.Call) (string, error) {
		return "sunny", nil
	}
	c := call("weather", `{"city":"Paris"}`)
	for i := 0; i < 3; i++ {
		r := tr.Run(context.Background(), c, exec)
		// r.Text goes to the model either way; r.Decision says whether the
		// call ran, r.Err whether to stop the turn.
		fmt.Printf("%-5s %.44q %v\n", r.Decision.Verdict, r.Text, errors.Is(r.Err, toolguard.ErrLoop))
	}
	// Output:
	// allow "sunny" false
	// hint  "[loop-detected] Tool 'weather' was already e" false
	// abort "[loop-detected] Tool 'weather' was called ag" true
}

// The calls of one model response are one round.
func ExampleTracker_RunRound() {
	tr := toolguard.NewTracker(toolguard.Policy{})
	exec := func(ctx context.Context, c toolguard.Call) (string, error) {
		return "results", nil
	}
	rs := tr.RunRound(context.Background(), []toolguard.Call{
		call("web_search", `{"query":"reset password"}`),
		call("web_search", `{"query":"password reset"}`), // a distinct question in the same response
	}, exec)
	for _, r := range rs {
		fmt.Println(r.Decision.Verdict, r.Text, r.Phase)
	}
	// Output:
	// allow results normal
	// allow results normal
}

// Presets reproduce published behaviours.
func ExamplePreset() {
	p, err := toolguard.Preset("turn-tracker")
	if err != nil {
		panic(err)
	}
	tr := toolguard.NewTracker(p)
	c := call("composio_execute", `{"action":"x"}`)
	tr.Record(c, toolguard.Outcome{Result: "ok"})
	tr.Record(call("composio_execute", `{"action":"y"}`), toolguard.Outcome{Result: "ok"})
	msg, _, _ := strings.Cut(tr.ShouldSkip(call("composio_execute", `{"action":"z"}`)).Message, " This call")
	fmt.Println(msg)
	// Output:
	// [loop-detected] Tool 'composio_execute' has reached its execution limit (2) for this turn.
}

// The summary says what an agent must report when it stops, and why the
// turn was stopped; the session summary keeps every turn.
func ExampleTracker_Summary() {
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 10})
	for _, cmd := range []string{"go tset", "go tset ./...", "go tset -v"} {
		c := call("bash", fmt.Sprintf(`{"command":%q}`, cmd))
		tr.ShouldSkip(c)
		tr.Record(c, toolguard.Outcome{Err: errors.New(`go: unknown command "tset"`)})
	}
	tr.ShouldSkip(call("bash", `{"command":"go tset -run=X"}`)) // a hint: stop retrying
	c := call("bash", `{"command":"go tset -v -run=X"}`)
	tr.ShouldSkip(c) // the one attempt after the hint runs, and fails the same way
	tr.Record(c, toolguard.Outcome{Err: errors.New(`go: unknown command "tset"`)})
	tr.ShouldSkip(call("bash", `{"command":"go tset"}`)) // an Abort stops the turn
	fmt.Println(tr.Summary())
	fmt.Println()

	tr.Reset() // the user's next message
	c = call("bash", `{"command":"go test ./..."}`)
	tr.ShouldSkip(c)
	tr.Record(c, toolguard.Outcome{Result: "ok"})
	fmt.Println(tr.SessionSummary())
	// Output:
	// toolguard summary, turn 1: 4 calls executed, 4 failed, 0 with new results, 2 skipped.
	// The turn was stopped: a call of 'bash' was aborted (repeated_failure).
	// Budget: 4 of 10 tool calls used, 6 left (phase normal).
	// - bash: 4 calls, 4 failed (4 the same way in a row), 0 new results, 2 skipped (repeated_failure 2).
	// Next: Stop retrying 'bash': read its last error, check the interface, path, permission or precondition it needs, and report the blocker if one evidence-backed attempt fails.
	//
	// toolguard session summary, 2 turns (1 stopped): 5 calls executed, 4 failed, 1 with a new result, 2 skipped.
	// The current turn was not stopped.
	// Budget: 1 of 10 tool calls used, 9 left (phase normal).
	// - bash: 5 calls, 4 failed, 1 new result, 2 skipped (repeated_failure 2).
	// Next: Answer with what you have, or make the one narrower call the results so far point to.
}
