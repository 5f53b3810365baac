// Command quickstart simulates one agent turn that loops, and prints each
// decision of a toolguard.Tracker and the budget phase as they happen.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/toolguard/toolguard"
)

var polls int

// tools is a pretend executor: a search engine, a status poll whose output
// changes, and a shell that keeps failing the same way.
func tools(_ context.Context, c toolguard.Call) (string, error) {
	switch c.Tool {
	case "web_search":
		return "3 results: reset via Settings > Account > Password", nil
	case "job_status":
		polls++
		return [...]string{"queued", "running, 40%", "done"}[min(polls-1, 2)], nil
	case "bash":
		if strings.Contains(string(c.Args), "which") {
			return "/usr/bin/pytest", nil
		}
		return "", errors.New("exit status 127: command not found: pytset")
	case "read_file":
		return "# README", nil
	}
	return "", fmt.Errorf("unknown tool %q", c.Tool)
}

// model is what a looping model asks for, call after call.
var model = []toolguard.Call{
	call("web_search", `{"query":"How do I reset my password?"}`),
	call("web_search", `{"query":"how do i reset my password"}`), // reworded: refinement, it runs
	call("web_search", `{"query":"password reset how"}`),         // the same again after nothing new
	call("job_status", `{"job":"build"}`),                        // polling: the output changes
	call("job_status", `{"job":"build"}`),
	call("job_status", `{"job":"build"}`),
	call("job_status", `{"job":"build"}`), // "done" again: no progress
	call("job_status", `{"job":"build"}`),
	call("bash", `{"command":"pytset -x"}`), // a failing command retried with tweaks
	call("bash", `{"command":"pytset -x -q"}`),
	call("bash", `{"command":"pytset -q"}`),
	call("bash", `{"command":"pytset --lf -q"}`),
	call("bash", `{"command":"which pytest"}`), // the one evidence-backed attempt
	call("read_file", `{"path":"README.md"}`),
	call("web_search", `{"query":"password reset docs"}`), // past the budget
}

func call(tool, args string) toolguard.Call {
	return toolguard.Call{Tool: tool, Args: json.RawMessage(args)}
}

func main() {
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 10})
	ctx := context.Background()
	last := toolguard.PhaseNormal
	for i, c := range model {
		d := tr.ShouldSkip(c)
		fmt.Printf("%2d %-10s %-5s", i+1, c.Tool, d.Verdict)
		switch d.Verdict {
		case toolguard.Hint:
			fmt.Printf(" %s\n   -> model sees: %s\n", d.Reason, short(d.Message))
			continue
		case toolguard.Abort:
			fmt.Printf(" %s\n   -> turn stops: %v\n", d.Reason, d.Err)
		default:
			out, err := tools(ctx, c)
			phase := tr.Record(c, toolguard.Outcome{Result: out, Err: err})
			fmt.Printf(" phase %s\n", phase)
			if phase != last {
				g := tr.Guidance()
				fmt.Printf("   -> harness injects: %q (strip tools: %v)\n", g.Message, g.StripTools)
				last = phase
			}
			continue
		}
		break // an Abort ends the turn
	}
	fmt.Println()
	fmt.Println(tr.Summary())
	if len(tr.Ledger()) == 0 {
		os.Exit(1)
	}
}

func short(s string) string {
	if i := strings.Index(s, ". "); i > 0 && i < 120 {
		return s[:i+1] + " …"
	}
	return s
}
