package hook

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolguard/toolguard"
)

// agent is one agent CLI's hook contract: how its payloads read and how an
// answer is written so that the agent does what the guard decided.
type agent struct {
	name string
	// parse reads a payload; event is the --event flag ("" if not given),
	// for agents whose payload does not name its event.
	parse func(p payload, event string) (Event, error)
	// render writes an answer for ev. An Allow renders as what lets the
	// call run untouched.
	render func(ev Event, a Answer) Output
	// readOnly lists the agent's tools that never change the world.
	readOnly []string
	// resultBlind: the agent has no post-call hook, so a call is recorded
	// with an empty result when the next call of the session is checked.
	resultBlind bool
	// noise masks what the agent itself writes into every result and that
	// changes from call to call (a process id, a shell's serial number):
	// without it, no two runs of one command would read alike.
	noise []*regexp.Regexp
	// idleTurn, when set, starts a new turn after that long without an
	// event: for an agent whose events say nothing of turns or sessions.
	idleTurn time.Duration
}

// maskAgentNoise masks the agent's own volatile text in a result.
func (a *agent) maskAgentNoise(s string) string {
	for _, re := range a.noise {
		s = re.ReplaceAllString(s, "${1}#")
	}
	return s
}

// agents lists the supported agents by name.
var agents = map[string]*agent{
	"claude":   claudeAgent,
	"codex":    codexAgent,
	"gemini":   geminiAgent,
	"copilot":  copilotAgent,
	"opencode": opencodeAgent,
	"cline":    clineAgent,
	"crush":    crushAgent,
	"cursor":   cursorAgent,
	"gateway":  gatewayAgent,
}

// agentNames returns the supported agents' names, sorted, with mcphost
// (which is guarded through mcp-proxy, not a hook).
func agentNames() []string {
	names := []string{"mcphost"}
	for n := range agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookupAgent(name string) (*agent, error) {
	if a, ok := agents[name]; ok {
		return a, nil
	}
	if name == "mcphost" {
		return nil, fmt.Errorf("mcphost runs every tool even when its hook blocks the call; guard its stdio MCP servers with `toolguard mcp-proxy` instead (run `toolguard hook install --agent mcphost` for how)")
	}
	return nil, fmt.Errorf("unknown agent %q (one of %s)", name, strings.Join(agentNames(), ", "))
}

// claudeKinds maps the Claude-style event names (Claude Code, Codex,
// Copilot's PascalCase form, Crush) to kinds.
var claudeKinds = map[string]Kind{
	"PreToolUse":         KindPre,
	"PostToolUse":        KindPost,
	"PostToolUseFailure": KindPost,
	"UserPromptSubmit":   KindPrompt,
}

// claudeStyle parses the snake_case payloads of Claude Code and the agents
// that copied them.
func claudeStyle(p payload, event string) Event {
	name := p.eventName(event, "hook_event_name")
	ev := Event{
		Kind:       claudeKinds[name],
		Name:       name,
		Session:    p.str("session_id"),
		TurnID:     p.str("turn_id"),
		CallID:     p.str("tool_use_id"),
		Tool:       p.str("tool_name"),
		Args:       p.args("tool_input"),
		Transcript: p.str("transcript_path"),
	}
	if ev.Kind == KindPost {
		ev.Result = p.text("tool_response")
		if name == "PostToolUseFailure" {
			ev.Failed = true
			if e := p.str("error"); e != "" {
				ev.Result = e
			}
		}
		if r := p.obj("tool_response"); r != nil {
			if v, _ := r.boolean("is_error"); v {
				ev.Failed = true
			}
			if v, _ := r.boolean("interrupted"); v {
				ev.Failed = true
			}
		}
	}
	return ev
}

// denyClaude is Claude Code's PreToolUse deny, which Codex, Copilot and
// Crush accept too.
func denyClaude(reason string) map[string]any {
	return map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":            "PreToolUse",
		"permissionDecision":       "deny",
		"permissionDecisionReason": reason,
	}}
}

func jsonOut(v any) Output {
	b, err := json.Marshal(v)
	if err != nil { // maps of strings and bools: cannot happen
		return Output{}
	}
	return Output{Stdout: append(b, '\n')}
}

var claudeAgent = &agent{
	name: "claude",
	parse: func(p payload, event string) (Event, error) {
		return claudeStyle(p, event), nil
	},
	render: func(ev Event, a Answer) Output {
		if ev.Kind != KindPre || a.Verdict == toolguard.Allow {
			return Output{}
		}
		out := denyClaude(a.Message)
		if a.Stop {
			out["continue"] = false
			out["stopReason"] = a.Message
		}
		return jsonOut(out)
	},
	readOnly: []string{"Read", "Grep", "Glob", "LS", "WebSearch", "WebFetch", "NotebookRead",
		"TodoWrite", "TodoRead", "BashOutput", "ListMcpResourcesTool", "ReadMcpResourceTool", "ExitPlanMode"},
}

// codexExitRe reads the exit status Codex writes into a command's output.
var codexExitRe = regexp.MustCompile(`(?:Process exited with code|Exit code:)\s*(-?\d+)`)

var codexAgent = &agent{
	name: "codex",
	parse: func(p payload, event string) (Event, error) {
		ev := claudeStyle(p, event)
		if ev.Kind == KindPost {
			if m := codexExitRe.FindStringSubmatch(ev.Result); m != nil {
				if n, err := strconv.Atoi(m[1]); err == nil && n != 0 {
					ev.Failed = true
				}
			}
			// The hook's tool_response is the command's output alone; the
			// exit status is in the rollout, written before the hook runs.
			if failed, ok := codexRolloutFailed(ev.Transcript, ev.CallID); ok {
				ev.Failed = failed
			}
		}
		return ev, nil
	},
	render: func(ev Event, a Answer) Output {
		// continue:false is ignored on PreToolUse: every repeat is denied.
		if ev.Kind != KindPre || a.Verdict == toolguard.Allow {
			return Output{}
		}
		return jsonOut(denyClaude(a.Message))
	},
	readOnly: []string{"view_image", "read_file", "list_dir", "grep_files", "web_search", "update_plan"},
}

// geminiExitRe reads the exit status run_shell_command reports.
var geminiExitRe = regexp.MustCompile(`(?m)^Exit Code: (-?\d+)`)

var geminiKinds = map[string]Kind{
	"BeforeTool":          KindPre,
	"AfterTool":           KindPost,
	"BeforeAgent":         KindPrompt,
	"BeforeToolSelection": KindTools,
}

var geminiAgent = &agent{
	name: "gemini",
	parse: func(p payload, event string) (Event, error) {
		name := p.eventName(event, "hook_event_name")
		ev := Event{
			Kind:       geminiKinds[name],
			Name:       name,
			Session:    p.str("session_id"),
			Tool:       p.str("tool_name"),
			Args:       p.args("tool_input"),
			Transcript: p.str("transcript_path"),
		}
		if ev.Kind == KindPost {
			r := p.obj("tool_response")
			ev.Result = p.text("tool_response")
			if r != nil {
				if _, ok := r["llmContent"]; ok {
					ev.Result = r.text("llmContent")
				}
				if m := geminiExitRe.FindStringSubmatch(ev.Result); m != nil && m[1] != "0" {
					ev.Failed = true
				}
				if e, ok := r["error"]; ok && string(e) != "null" {
					ev.Failed = true
					if t := r.text("error"); t != "" {
						ev.Result = t
					}
				}
			}
		}
		return ev, nil
	},
	render: func(ev Event, a Answer) Output {
		switch {
		case ev.Kind == KindTools && a.NoTools:
			return jsonOut(map[string]any{"hookSpecificOutput": map[string]any{
				"hookEventName": "BeforeToolSelection",
				"toolConfig":    map[string]any{"mode": "NONE"},
			}})
		case ev.Kind != KindPre || a.Verdict == toolguard.Allow:
			return Output{}
		}
		out := map[string]any{"decision": "deny", "reason": a.Message}
		if a.Stop && a.Aborts > 0 {
			// continue:false withholds this call's result from the model:
			// stop only on a repeat after a first deny it has read.
			out["continue"] = false
			out["stopReason"] = a.Message
		}
		return jsonOut(out)
	},
	readOnly: []string{"read_file", "read_many_files", "list_directory", "glob", "search_file_content",
		"grep", "web_fetch", "google_web_search", "write_todos"},
	// run_shell_command ends its output with the process group's id, and
	// the ids of background processes.
	noise: []*regexp.Regexp{regexp.MustCompile(`(Process Group PGID: )\d+`), regexp.MustCompile(`(Background PIDs: )[\d, ]+`)},
}

// copilotExitRe reads the exit status bash writes after a command's output.
var copilotExitRe = regexp.MustCompile(`<shellId: \d+ completed with exit code (-?\d+)>`)

var copilotKinds = map[string]Kind{
	"preToolUse":          KindPre,
	"postToolUse":         KindPost,
	"userPromptSubmitted": KindPrompt,
	"permissionRequest":   KindStop,
}

var copilotAgent = &agent{
	name: "copilot",
	parse: func(p payload, event string) (Event, error) {
		name := p.eventName(event, "hook_event_name", "hookEventName")
		if _, ok := claudeKinds[name]; ok || p.str("session_id") != "" {
			ev := claudeStyle(p, name)
			ev.Args = copilotArgs(ev.Tool, ev.Args)
			return ev, nil
		}
		ev := Event{
			Kind:    copilotKinds[name],
			Name:    name,
			Session: p.str("sessionId"),
			Tool:    p.str("toolName"),
			Args:    p.args("toolArgs"),
		}
		ev.Args = copilotArgs(ev.Tool, ev.Args)
		if ev.Kind == KindPost {
			if r := p.obj("toolResult"); r != nil {
				ev.Result = r.text("textResultForLlm")
				switch r.str("resultType") {
				case "failure", "error":
					ev.Failed = true
				}
				if m := copilotExitRe.FindStringSubmatch(ev.Result); m != nil && m[1] != "0" {
					ev.Failed = true
				}
			} else {
				ev.Result = p.text("toolResult")
			}
		}
		return ev, nil
	},
	render: func(ev Event, a Answer) Output {
		switch ev.Kind {
		case KindStop:
			if a.Stop {
				return jsonOut(map[string]any{"behavior": "deny", "message": a.Message, "interrupt": true})
			}
			return Output{}
		case KindPre:
			if a.Verdict == toolguard.Allow {
				return Output{}
			}
			// Exit 2 would drop the reason: the JSON deny, exit 0.
			return jsonOut(map[string]any{"permissionDecision": "deny", "permissionDecisionReason": a.Message})
		}
		return Output{}
	},
	readOnly: []string{"view", "glob", "grep", "web_fetch", "report_intent", "read_bash", "list_bash"},
	// bash ends its output with the number of the shell it ran in, one
	// more for every command: "<shellId: 2 completed with exit code 0>".
	noise: []*regexp.Regexp{regexp.MustCompile(`(<shellId: )\d+`)},
}

// copilotArgs drops the free-text description the model writes beside a
// shell command: two runs of one command with reworded descriptions are
// the same call.
func copilotArgs(tool string, args json.RawMessage) json.RawMessage {
	if tool != "bash" || len(args) == 0 {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args
	}
	if _, ok := m["description"]; !ok {
		return args
	}
	delete(m, "description")
	b, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return b
}

// opencode runs the guard from a plugin (see install.go) that passes the
// plugin hooks' input and output as the payload and reads a small answer.
var opencodeKinds = map[string]Kind{
	"tool.execute.before": KindPre,
	"tool.execute.after":  KindPost,
	"chat.message":        KindPrompt,
}

var opencodeAgent = &agent{
	name: "opencode",
	parse: func(p payload, event string) (Event, error) {
		name := p.eventName(event, "event")
		in := p.obj("input")
		out := p.obj("output")
		if in == nil {
			in = payload{}
		}
		if out == nil {
			out = payload{}
		}
		ev := Event{
			Kind:    opencodeKinds[name],
			Name:    name,
			Session: in.str("sessionID"),
			CallID:  in.str("callID"),
			Tool:    in.str("tool"),
			Args:    out.args("args"),
		}
		if ev.Kind == KindPost {
			ev.Args = in.args("args")
			ev.Result = out.text("output")
			if md := out.obj("metadata"); md != nil {
				if raw, ok := md["exit"]; ok {
					var code float64
					if json.Unmarshal(raw, &code) == nil && code != 0 {
						ev.Failed = true
					}
				}
			}
		}
		return ev, nil
	},
	render: func(ev Event, a Answer) Output {
		if ev.Kind != KindPre {
			return Output{}
		}
		switch {
		case a.Verdict == toolguard.Allow:
			return jsonOut(map[string]any{"action": "allow"})
		case a.Stop:
			return jsonOut(map[string]any{"action": "abort", "message": a.Message})
		}
		return jsonOut(map[string]any{"action": "deny", "message": a.Message})
	},
	readOnly: []string{"read", "glob", "grep", "list", "webfetch", "todoread", "todowrite"},
}

var clineKinds = map[string]Kind{
	"PreToolUse":       KindPre,
	"PostToolUse":      KindPost,
	"UserPromptSubmit": KindPrompt,
	"tool_call":        KindPre,
	"tool_result":      KindPost,
}

var clineAgent = &agent{
	name: "cline",
	parse: func(p payload, event string) (Event, error) {
		name := event
		if name == "" {
			name = p.str("hookName")
		}
		ev := Event{Kind: clineKinds[name], Name: name, Session: p.str("taskId")}
		if tc := p.obj("tool_call"); tc != nil {
			ev.CallID, ev.Tool, ev.Args = tc.str("id"), tc.str("name"), tc.args("input")
		}
		if pre := p.obj("preToolUse"); pre != nil {
			if ev.Tool == "" {
				ev.Tool = pre.str("toolName")
			}
			if ev.Args == nil {
				ev.Args = pre.args("parameters")
			}
		}
		if post := p.obj("postToolUse"); post != nil {
			if ev.Tool == "" {
				ev.Tool = post.str("toolName")
			}
			if ev.Args == nil {
				ev.Args = post.args("parameters")
			}
		}
		if ev.Kind == KindPost {
			if tr := p.obj("tool_result"); tr != nil {
				if ev.CallID == "" {
					ev.CallID = tr.str("id")
				}
				if n := tr.str("name"); n != "" {
					ev.Tool = n
				}
				if in := tr.args("input"); in != nil {
					ev.Args = in
				}
				ev.Result = tr.text("output")
				ev.Failed = clineFailed(tr)
			}
			if post := p.obj("postToolUse"); post != nil {
				if ev.Result == "" {
					ev.Result = post.text("result")
				}
				if ok, has := post.boolean("success"); has && !ok {
					ev.Failed = true
				}
				if ev.Result == "" {
					ev.Result = post.text("result")
				}
			}
		}
		return ev, nil
	},
	render: func(ev Event, a Answer) Output {
		if ev.Kind != KindPre {
			return Output{}
		}
		switch {
		case a.Verdict == toolguard.Allow:
			return jsonOut(map[string]any{"cancel": false})
		case a.Stop && a.Aborts > 0:
			// cancel ends the run unread: only after a refusal the model read.
			return jsonOut(map[string]any{"cancel": true, "errorMessage": a.Message})
		case ev.Tool == "run_commands" || ev.Tool == "execute_command":
			// No deny reaches the model: the command is replaced by one
			// that prints the hint, which the model reads as its result.
			cmd := "printf '%s\\n' " + shellQuote(a.Message)
			in := map[string]any{"commands": []string{cmd}}
			if ev.Tool == "execute_command" {
				in = map[string]any{"command": cmd, "requires_approval": false}
			}
			return jsonOut(map[string]any{"cancel": false, "overrideInput": in})
		}
		// Other tools cannot be replaced by a harmless call: the call runs
		// and the hint follows its result; a repeat is cancelled.
		return jsonOut(map[string]any{"cancel": false, "contextModification": a.Message})
	},
	readOnly: []string{"read_file", "list_files", "search_files", "list_code_definition_names", "web_fetch", "focus_chain"},
}

// clineFailed reports whether a Cline tool result failed: an error, or a
// command among its outputs that did not succeed. (postToolUse.success says
// whether the tool ran, not whether the command succeeded.)
func clineFailed(tr payload) bool {
	if e := tr.str("error"); e != "" {
		return true
	}
	var outs []struct {
		Success *bool  `json:"success"`
		Error   string `json:"error"`
	}
	if raw, ok := tr["output"]; ok && json.Unmarshal(raw, &outs) == nil {
		for _, o := range outs {
			if o.Error != "" || o.Success != nil && !*o.Success {
				return true
			}
		}
	}
	return false
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var crushAgent = &agent{
	name: "crush",
	parse: func(p payload, event string) (Event, error) {
		name := p.eventName(event, "event", "hook_event_name")
		ev := claudeStyle(p, name)
		ev.Name = name
		ev.Kind = claudeKinds[name]
		return ev, nil
	},
	render: func(ev Event, a Answer) Output {
		if ev.Kind != KindPre || a.Verdict == toolguard.Allow {
			return Output{}
		}
		out := map[string]any{"decision": "deny", "reason": a.Message}
		if a.Stop {
			out["halt"] = true
		}
		return jsonOut(out)
	},
	readOnly:    []string{"view", "ls", "glob", "grep", "fetch", "sourcegraph", "diagnostics", "todos"},
	resultBlind: true,
}

var cursorKinds = map[string]Kind{
	"preToolUse":           KindPre,
	"beforeShellExecution": KindPre,
	"beforeMCPExecution":   KindPre,
	"beforeReadFile":       KindPre,
	"postToolUse":          KindPost,
	"afterShellExecution":  KindPost,
	"afterMCPExecution":    KindPost,
	"beforeSubmitPrompt":   KindPrompt,
}

var cursorAgent = &agent{
	name: "cursor",
	parse: func(p payload, event string) (Event, error) {
		name := p.eventName(event, "hook_event_name")
		ev := Event{
			Kind:       cursorKinds[name],
			Name:       name,
			Session:    p.str("conversation_id", "session_id"),
			CallID:     p.str("tool_use_id", "tool_call_id"),
			Tool:       p.str("tool_name"),
			Args:       p.args("tool_input"),
			Transcript: p.str("transcript_path"),
		}
		switch name {
		case "beforeShellExecution", "afterShellExecution":
			ev.Tool = "Shell"
			ev.Args, _ = json.Marshal(map[string]string{"command": p.str("command")})
		case "beforeReadFile":
			ev.Tool = "read_file"
			ev.Args, _ = json.Marshal(map[string]string{"file_path": p.str("file_path")})
		}
		if ev.Kind == KindPost {
			for _, k := range []string{"tool_output", "tool_response", "output", "result_json"} {
				if _, ok := p[k]; ok {
					ev.Result = p.text(k)
					break
				}
			}
			if code := p.str("exit_code"); code != "" && code != "0" {
				ev.Failed = true
			}
			if raw, ok := p["exit_code"]; ok {
				var n float64
				if json.Unmarshal(raw, &n) == nil && n != 0 {
					ev.Failed = true
				}
			}
		}
		return ev, nil
	},
	render: func(ev Event, a Answer) Output {
		if ev.Kind != KindPre || a.Verdict == toolguard.Allow {
			return Output{}
		}
		// Both spellings Cursor's documentation has used for the messages.
		return jsonOut(map[string]any{
			"permission":    "deny",
			"agent_message": a.Message, "user_message": a.Message,
			"agentMessage": a.Message, "userMessage": a.Message,
		})
	},
	readOnly: []string{"read_file", "Read", "list_dir", "codebase_search", "grep_search", "grep", "Grep",
		"file_search", "glob_file_search", "web_search", "todo_write"},
}

// gatewayAgent is Docker MCP Gateway's interceptors: `--interceptor
// before:http:http://127.0.0.1:7878/hook/gateway?event=before` (and
// after:…?event=after) with toolguard serve, or before:exec:… with
// `toolguard hook run --agent gateway --event before`. The before payload
// is {"method":"tools/call","params":{"name","arguments"}}; an empty answer
// lets the call through, a CallToolResult replaces it. The after payload is
// the call's CallToolResult alone, so it is booked to the oldest call
// waiting for its result. The payloads name no session or turn: a gateway
// is one session, and an hour without a call starts a new turn.
var gatewayAgent = &agent{
	name: "gateway",
	parse: func(p payload, event string) (Event, error) {
		ev := Event{Name: event, Session: "gateway"}
		switch event {
		case "before":
			ev.Kind = KindPre
			if params := p.obj("params"); params != nil {
				ev.Tool, ev.Args = params.str("name"), params.args("arguments")
			}
		case "after":
			ev.Kind = KindPost
			ev.Result = p.text("content")
			if v, _ := p.boolean("isError"); v {
				ev.Failed = true
			}
		}
		return ev, nil
	},
	render: func(ev Event, a Answer) Output {
		if ev.Kind != KindPre || a.Verdict == toolguard.Allow {
			return Output{}
		}
		return jsonOut(map[string]any{"content": []any{map[string]any{"type": "text", "text": a.Message}}, "isError": true})
	},
	idleTurn: time.Hour,
}
