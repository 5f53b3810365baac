package quotafile_test

import (
	"fmt"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/quotafile"
)

func ExampleParse() {
	p, err := quotafile.Parse("quota.yaml", []byte(`
tool_quota:
  Bash: 10
  WebFetch: 5
  defaults: 20
loop_detection:
  same_call_window: 5
  max_retries: 3
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("Bash:", p.AgentQuota.Tools["Bash"], "WebFetch:", p.AgentQuota.Tools["WebFetch"])
	fmt.Println("every other tool:", p.AgentQuota.Default)
	fmt.Println("WindowLimit:", p.WindowLimit, "MaxFailures:", p.MaxFailures)
	// Output:
	// Bash: 10 WebFetch: 5
	// every other tool: 20
	// WindowLimit: 5 MaxFailures: 3
}

// A Markdown agent definition declares its quota in its front matter; the
// agent's own keys (name, description, tools, model) are ignored.
func ExampleParse_frontMatter() {
	p, err := quotafile.Parse("reviewer.md", []byte(`---
name: code-reviewer
description: Reviews a change.
tools: Read, Grep, Bash
model: sonnet
tool_quota:
  Bash: 3
---

# Code reviewer
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.AgentQuota.Tools)
	// Output:
	// map[Bash:3]
}

// The words defaults and tools are reserved in tool_quota; tools named
// that way go in the nested tools mapping, which takes any name.
func ExampleParse_reservedNames() {
	p, err := quotafile.Parse("quota.yaml", []byte(`
tool_quota:
  defaults: 20
  tools:
    defaults: 3
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(`the tool "defaults":`, p.AgentQuota.Tools["defaults"])
	fmt.Println("every other tool:", p.AgentQuota.Default)
	// Output:
	// the tool "defaults": 3
	// every other tool: 20
}

// Every error names the file, the line and the key.
func ExampleParse_errors() {
	_, err := quotafile.Parse("quota.yaml", []byte(`
tool_quota:
  Bash: -1
  WebFetch: five
loop_detection:
  same_call_windw: 5
`))
	fmt.Println(err)
	// Output:
	// quotafile: quota.yaml:3:9: tool_quota.Bash: negative limit -1 (use a positive limit or remove the key)
	// quotafile: quota.yaml:4:13: tool_quota.WebFetch: want a positive integer, got "five"
	// quotafile: quota.yaml:6:3: loop_detection.same_call_windw: unknown key; did you mean same_call_window?
}

// Apply layers an agent's declaration onto a preset and the platform's own
// quota; the Tracker enforces the smallest limit.
func ExampleApply() {
	base, err := toolguard.Preset("quota-rule")
	if err != nil {
		fmt.Println(err)
		return
	}
	base.PlatformQuota = &toolguard.Quota{Tools: map[string]int{"Bash": 5}}
	p, err := quotafile.Apply(base, "shell.md", []byte("---\nname: shell\ntool_quota: {Bash: 2}\n---\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	t := toolguard.NewTracker(p)
	for _, cmd := range []string{"ls", "pwd", "whoami"} {
		c := toolguard.Call{Tool: "Bash", Args: []byte(`{"command":"` + cmd + `"}`)}
		d := t.ShouldSkip(c)
		if d.Skip() {
			fmt.Println(cmd+":", d.Verdict, d.Reason)
			continue
		}
		t.Record(c, toolguard.Outcome{Result: "output of " + cmd})
		fmt.Println(cmd+":", d.Verdict)
	}
	// Output:
	// ls: allow
	// pwd: allow
	// whoami: hint tool_limit
}

func ExampleLoad() {
	p, err := quotafile.Load("testdata/agent.md")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.AgentQuota.Tools, p.AgentQuota.Default, p.WindowLimit, p.MaxFailures)
	// Output:
	// map[Bash:10 WebFetch:5] 20 5 3
}
