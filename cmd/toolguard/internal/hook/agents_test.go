package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
)

// testEnv is an Env with the state under a temporary folder and a clock
// that moves a second per reading.
func testEnv(t testing.TB) *Env {
	dir := t.TempDir()
	vars := map[string]string{"HOME": dir + "/home", "XDG_STATE_HOME": dir + "/state"}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	return &Env{
		Getenv:     func(k string) string { return vars[k] },
		Executable: "/opt/toolguard/bin/toolguard",
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(time.Second)
			return clock
		},
	}
}

// invoke runs "hook run" with args and payload, as the agent does.
func invoke(t testing.TB, env *Env, payload string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := *env
	e.Stdin, e.Stdout, e.Stderr = strings.NewReader(payload), &out, &errOut
	code := Main(append([]string{"run"}, args...), e)
	return code, out.String(), errOut.String()
}

// contract is one agent's payloads for a shell command, and how its
// answers read.
type contract struct {
	agent string
	args  []string // beyond --agent
	pre   func(i int, cmd string) string
	post  func(i int, cmd, result string) string
	// preEvent/postEvent: the --event flag where the agent's payload does
	// not name its event.
	preEvent, postEvent string
	// denied reports whether stdout/exit refuse the call; stopped whether
	// they also end the run.
	denied, stopped func(code int, stdout string) bool
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonField(stdout, path string) any {
	var v any
	if json.Unmarshal([]byte(stdout), &v) != nil {
		return nil
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

var contracts = []contract{
	{
		agent: "claude",
		pre: func(i int, cmd string) string {
			return js(map[string]any{"session_id": "S", "transcript_path": "/x.jsonl", "cwd": "/w", "hook_event_name": "PreToolUse",
				"tool_name": "Bash", "tool_input": map[string]any{"command": cmd}, "tool_use_id": fmt.Sprint("toolu_", i)})
		},
		post: func(i int, cmd, res string) string {
			return js(map[string]any{"session_id": "S", "hook_event_name": "PostToolUse", "tool_name": "Bash",
				"tool_input": map[string]any{"command": cmd}, "tool_use_id": fmt.Sprint("toolu_", i),
				"tool_response": map[string]any{"stdout": res, "stderr": "", "interrupted": false}})
		},
		denied: func(code int, out string) bool {
			return code == 0 && jsonField(out, "hookSpecificOutput.permissionDecision") == "deny"
		},
		stopped: func(code int, out string) bool { return jsonField(out, "continue") == false },
	},
	{
		agent: "codex",
		pre: func(i int, cmd string) string {
			return js(map[string]any{"session_id": "S", "turn_id": "T1", "transcript_path": "/r.jsonl", "cwd": "/w", "hook_event_name": "PreToolUse",
				"model": "gpt-5.5", "permission_mode": "bypass", "tool_name": "Bash", "tool_input": map[string]any{"command": cmd}, "tool_use_id": fmt.Sprint("call_", i)})
		},
		post: func(i int, cmd, res string) string {
			return js(map[string]any{"session_id": "S", "turn_id": "T1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
				"tool_input": map[string]any{"command": cmd}, "tool_use_id": fmt.Sprint("call_", i), "tool_response": res})
		},
		denied: func(code int, out string) bool {
			return code == 0 && jsonField(out, "hookSpecificOutput.permissionDecision") == "deny"
		},
		stopped: func(int, string) bool { return false }, // Codex has no stop on PreToolUse
	},
	{
		agent: "gemini",
		pre: func(i int, cmd string) string {
			return js(map[string]any{"session_id": "S", "transcript_path": "/c.jsonl", "cwd": "/w", "hook_event_name": "BeforeTool",
				"timestamp": "2026-01-01T00:00:00Z", "tool_name": "run_shell_command", "tool_input": map[string]any{"command": cmd}})
		},
		post: func(i int, cmd, res string) string {
			return js(map[string]any{"session_id": "S", "hook_event_name": "AfterTool", "tool_name": "run_shell_command",
				"tool_input": map[string]any{"command": cmd}, "tool_response": map[string]any{"llmContent": res, "returnDisplay": res}})
		},
		denied:  func(code int, out string) bool { return code == 0 && jsonField(out, "decision") == "deny" },
		stopped: func(code int, out string) bool { return jsonField(out, "continue") == false },
	},
	{
		agent:    "copilot",
		preEvent: "preToolUse", postEvent: "postToolUse",
		pre: func(i int, cmd string) string {
			// toolArgs as a JSON text, with a reworded description each time.
			return js(map[string]any{"sessionId": "S", "timestamp": 1, "cwd": "/w", "toolName": "bash",
				"toolArgs": js(map[string]any{"command": cmd, "description": fmt.Sprint("run it, take ", i)})})
		},
		post: func(i int, cmd, res string) string {
			return js(map[string]any{"sessionId": "S", "toolName": "bash",
				"toolArgs":   js(map[string]any{"command": cmd, "description": fmt.Sprint("run it, take ", i)}),
				"toolResult": map[string]any{"resultType": "success", "textResultForLlm": res}})
		},
		denied: func(code int, out string) bool {
			return code == 0 && jsonField(out, "permissionDecision") == "deny" && jsonField(out, "permissionDecisionReason") != nil
		},
		stopped: func(int, string) bool { return false }, // through permissionRequest, tested apart
	},
	{
		agent:    "opencode",
		preEvent: "tool.execute.before", postEvent: "tool.execute.after",
		pre: func(i int, cmd string) string {
			return js(map[string]any{"event": "tool.execute.before", "input": map[string]any{"tool": "bash", "sessionID": "S", "callID": fmt.Sprint("c", i)},
				"output": map[string]any{"args": map[string]any{"command": cmd}}})
		},
		post: func(i int, cmd, res string) string {
			return js(map[string]any{"event": "tool.execute.after", "input": map[string]any{"tool": "bash", "sessionID": "S", "callID": fmt.Sprint("c", i),
				"args": map[string]any{"command": cmd}}, "output": map[string]any{"title": cmd, "output": res, "metadata": map[string]any{"exit": 0}}})
		},
		denied:  func(code int, out string) bool { a := jsonField(out, "action"); return a == "deny" || a == "abort" },
		stopped: func(code int, out string) bool { return jsonField(out, "action") == "abort" },
	},
	{
		agent:    "cline",
		preEvent: "PreToolUse", postEvent: "PostToolUse",
		pre: func(i int, cmd string) string {
			return js(map[string]any{"taskId": "S", "hookName": "tool_call", "iteration": i,
				"tool_call":  map[string]any{"id": fmt.Sprint("t", i), "name": "run_commands", "input": map[string]any{"commands": []string{cmd}}},
				"preToolUse": map[string]any{"toolName": "run_commands", "parameters": map[string]any{"commands": []string{cmd}}}})
		},
		post: func(i int, cmd, res string) string {
			return js(map[string]any{"taskId": "S", "hookName": "tool_result",
				"tool_call":   map[string]any{"id": fmt.Sprint("t", i), "name": "run_commands", "input": map[string]any{"commands": []string{cmd}}},
				"tool_result": map[string]any{"id": fmt.Sprint("t", i), "output": res},
				"postToolUse": map[string]any{"result": res, "success": true, "executionTimeMs": 5}})
		},
		denied: func(code int, out string) bool {
			cmds, _ := jsonField(out, "overrideInput.commands").([]any)
			return len(cmds) == 1 && strings.HasPrefix(cmds[0].(string), "printf ") || jsonField(out, "cancel") == true
		},
		stopped: func(code int, out string) bool { return jsonField(out, "cancel") == true },
	},
	{
		agent: "crush",
		pre: func(i int, cmd string) string {
			return js(map[string]any{"event": "PreToolUse", "session_id": "S", "cwd": "/w", "tool_name": "bash", "tool_input": map[string]any{"command": cmd}})
		},
		denied:  func(code int, out string) bool { return jsonField(out, "decision") == "deny" },
		stopped: func(code int, out string) bool { return jsonField(out, "halt") == true },
	},
	{
		agent: "cursor",
		pre: func(i int, cmd string) string {
			return js(map[string]any{"conversation_id": "S", "generation_id": fmt.Sprint("g", i), "hook_event_name": "beforeShellExecution",
				"command": cmd, "cwd": "/w", "workspace_roots": []string{"/w"}})
		},
		post: func(i int, cmd, res string) string {
			return js(map[string]any{"conversation_id": "S", "hook_event_name": "afterShellExecution", "command": cmd, "output": res, "exit_code": 0})
		},
		denied: func(code int, out string) bool {
			return jsonField(out, "permission") == "deny" && jsonField(out, "agent_message") != nil
		},
		stopped: func(int, string) bool { return false },
	},
}

func runArgs(c contract, event string) []string {
	args := append([]string{"--agent", c.agent}, c.args...)
	if event != "" {
		args = append(args, "--event", event)
	}
	return args
}

// TestContractRepeat: the same command with the same result, again and
// again: calls 1 and 2 run, call 3 is refused with the hint the model reads,
// call 4 is refused again (and ends the run where the agent can, Gemini and
// Cline only on a later repeat).
func TestContractRepeat(t *testing.T) {
	for _, c := range contracts {
		t.Run(c.agent, func(t *testing.T) {
			env := testEnv(t)
			for i := 1; i <= 5; i++ {
				code, out, errOut := invoke(t, env, c.pre(i, "go test ./..."), runArgs(c, c.preEvent)...)
				require.Equal(t, 0, code, errOut)
				require.Empty(t, errOut)
				denied := c.denied(code, out)
				switch {
				case i <= 2:
					require.False(t, denied, "call %d: %s", i, out)
					if c.post != nil {
						code, out, errOut := invoke(t, env, c.post(i, "go test ./...", "ok  \tx\t0.01s"), runArgs(c, c.postEvent)...)
						require.Equal(t, 0, code, errOut)
						require.Empty(t, out)
					}
				case i == 3:
					require.True(t, denied, "call 3: %s", out)
					require.False(t, c.stopped(code, out), "call 3: %s", out)
					assert.Contains(t, out, "already executed with identical parameters")
					assert.Contains(t, out, "TOOLGUARD_HOOK=off")
				default:
					require.True(t, denied, "call %d: %s", i, out)
					wantStop := map[string]bool{"claude": true, "crush": true, "opencode": true}[c.agent] ||
						i == 5 && (c.agent == "gemini" || c.agent == "cline")
					assert.Equal(t, wantStop, c.stopped(code, out), "call %d: %s", i, out)
				}
			}
		})
	}
}

// TestContractWork: edit, test, edit, test, … all run: an edit in between
// is progress. For result-blind Crush too (an edit is a new call).
func TestContractWork(t *testing.T) {
	for _, c := range contracts {
		t.Run(c.agent, func(t *testing.T) {
			env := testEnv(t)
			for i := 1; i <= 8; i++ {
				cmd := "go test ./..."
				if i%2 == 1 {
					cmd = fmt.Sprintf("sed -i s/a%d/b%d/ x.go", i, i)
				}
				code, out, _ := invoke(t, env, c.pre(i, cmd), runArgs(c, c.preEvent)...)
				require.False(t, c.denied(code, out), "call %d %q: %s", i, cmd, out)
				if c.post != nil {
					invoke(t, env, c.post(i, cmd, "FAIL x 0.01s"), runArgs(c, c.postEvent)...)
				}
			}
		})
	}
}

// TestContractNewPrompt: a new user prompt is a new turn, in each agent's
// way of saying it.
func TestContractNewPrompt(t *testing.T) {
	prompts := map[string]struct {
		payload string
		event   string
	}{
		"claude":  {js(map[string]any{"session_id": "S", "hook_event_name": "UserPromptSubmit", "prompt": "again"}), ""},
		"gemini":  {js(map[string]any{"session_id": "S", "hook_event_name": "BeforeAgent", "prompt": "again"}), ""},
		"copilot": {js(map[string]any{"sessionId": "S", "prompt": "again"}), "userPromptSubmitted"},
		"cline":   {js(map[string]any{"taskId": "S", "hookName": "user_prompt_submit", "userPromptSubmit": map[string]any{"prompt": "again"}}), "UserPromptSubmit"},
		"opencode": {js(map[string]any{"event": "chat.message", "input": map[string]any{"sessionID": "S"}, "output": map[string]any{}}),
			"chat.message"},
		"cursor": {js(map[string]any{"conversation_id": "S", "hook_event_name": "beforeSubmitPrompt", "prompt": "again"}), ""},
	}
	for _, c := range contracts {
		p, ok := prompts[c.agent]
		if !ok {
			continue
		}
		t.Run(c.agent, func(t *testing.T) {
			env := testEnv(t)
			for i := 1; i <= 2; i++ {
				invoke(t, env, c.pre(i, "make"), runArgs(c, c.preEvent)...)
				invoke(t, env, c.post(i, "make", "done"), runArgs(c, c.postEvent)...)
			}
			code, out, _ := invoke(t, env, p.payload, runArgs(c, p.event)...)
			require.Equal(t, 0, code)
			require.False(t, c.denied(code, out))
			code, out, _ = invoke(t, env, c.pre(3, "make"), runArgs(c, c.preEvent)...)
			require.False(t, c.denied(code, out), "a new turn: %s", out)
		})
	}
}

// TestCodexTurnID: Codex says the turn in every payload: a new turn_id is
// a new turn even without a UserPromptSubmit hook.
func TestCodexTurnID(t *testing.T) {
	env := testEnv(t)
	pre := func(turn string, i int) string {
		return js(map[string]any{"session_id": "S", "turn_id": turn, "hook_event_name": "PreToolUse", "tool_name": "Bash",
			"tool_input": map[string]any{"command": "make"}, "tool_use_id": fmt.Sprint("c", i)})
	}
	post := func(turn string, i int) string {
		return js(map[string]any{"session_id": "S", "turn_id": turn, "hook_event_name": "PostToolUse", "tool_name": "Bash",
			"tool_input": map[string]any{"command": "make"}, "tool_use_id": fmt.Sprint("c", i), "tool_response": "done"})
	}
	for i := 1; i <= 2; i++ {
		invoke(t, env, pre("T1", i), "--agent", "codex")
		invoke(t, env, post("T1", i), "--agent", "codex")
	}
	_, out, _ := invoke(t, env, pre("T1", 3), "--agent", "codex")
	require.Contains(t, out, "deny")
	_, out, _ = invoke(t, env, pre("T2", 4), "--agent", "codex")
	require.Empty(t, out)
}

// TestCopilotStop: after an Abort, Copilot's permissionRequest ends the run.
func TestCopilotStop(t *testing.T) {
	env := testEnv(t)
	c := contracts[3]
	require.Equal(t, "copilot", c.agent)
	perm := js(map[string]any{"sessionId": "S", "toolName": "bash", "toolArgs": js(map[string]any{"command": "ls"})})
	_, out, _ := invoke(t, env, perm, "--agent", "copilot", "--event", "permissionRequest")
	require.Empty(t, out, "no stop before any refusal")
	for i := 1; i <= 4; i++ {
		invoke(t, env, c.pre(i, "make"), runArgs(c, c.preEvent)...)
		if i <= 2 {
			invoke(t, env, c.post(i, "make", "done"), runArgs(c, c.postEvent)...)
		}
	}
	_, out, _ = invoke(t, env, perm, "--agent", "copilot", "--event", "permissionRequest")
	require.Equal(t, "deny", jsonField(out, "behavior"))
	require.Equal(t, true, jsonField(out, "interrupt"))
}

// TestClineOtherTools: a tool that cannot be replaced by a printing
// command runs with the hint after its result.
func TestClineOtherTools(t *testing.T) {
	out := clineAgent.render(Event{Kind: KindPre, Tool: "read_file"}, Answer{Verdict: toolguard.Hint, Message: "m"})
	require.JSONEq(t, `{"cancel":false,"contextModification":"m"}`, string(out.Stdout))
	out = clineAgent.render(Event{Kind: KindPre, Tool: "run_commands"}, Answer{Verdict: toolguard.Hint, Message: "it's"})
	require.JSONEq(t, `{"cancel":false,"overrideInput":{"commands":["printf '%s\\n' 'it'\\''s'"]}}`, string(out.Stdout))
}

// TestFailOpen: a payload the guard cannot read, an unknown agent, a
// state folder it cannot write: exit 0 and no answer, which lets the call
// run in every agent (Copilot refuses the call when a hook exits 1).
func TestFailOpen(t *testing.T) {
	env := testEnv(t)
	for _, tc := range []struct {
		payload string
		args    []string
	}{
		{"not json", []string{"--agent", "claude"}},
		{"[1,2]", []string{"--agent", "copilot", "--event", "preToolUse"}},
		{`{"session_id":"S"}`, []string{"--agent", "nobody"}},
		{`{}`, []string{"--bad-flag"}},
	} {
		code, out, _ := invoke(t, env, tc.payload, tc.args...)
		assert.Equal(t, 0, code, tc)
		assert.Empty(t, out, tc)
	}
	bad := *env
	bad.Getenv = func(k string) string {
		if k == "XDG_STATE_HOME" {
			return "/proc/toolguard-cannot-write"
		}
		return env.Getenv(k)
	}
	code, out, errOut := invoke(t, &bad, contracts[0].pre(1, "ls"), "--agent", "claude")
	assert.Equal(t, 0, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "the call was let through")
}

// TestSwitchOff: TOOLGUARD_HOOK=off lets everything through untouched.
func TestSwitchOff(t *testing.T) {
	env := testEnv(t)
	get := env.Getenv
	env.Getenv = func(k string) string {
		if k == "TOOLGUARD_HOOK" {
			return "off"
		}
		return get(k)
	}
	for i := 1; i <= 4; i++ {
		_, out, _ := invoke(t, env, contracts[0].pre(i, "ls"), "--agent", "claude")
		require.Empty(t, out)
	}
}

// TestExempt: TOOLGUARD_EXEMPT lets a polling tool repeat.
func TestExempt(t *testing.T) {
	env := testEnv(t)
	get := env.Getenv
	env.Getenv = func(k string) string {
		if k == "TOOLGUARD_EXEMPT" {
			return "Bash"
		}
		return get(k)
	}
	c := contracts[0]
	for i := 1; i <= 5; i++ {
		_, out, _ := invoke(t, env, c.pre(i, "ls"), "--agent", "claude")
		require.Empty(t, out, "call %d", i)
		invoke(t, env, c.post(i, "ls", "same"), "--agent", "claude")
	}
}

// TestVocabulary: the hook's names map to the transcript's.
func TestVocabulary(t *testing.T) {
	ev := Event{Tool: "Bash", Args: json.RawMessage(`{"command":"ls -la"}`)}
	toTranscript("codex", &ev)
	require.Equal(t, "exec_command", ev.Tool)
	require.JSONEq(t, `{"cmd":"ls -la"}`, string(ev.Args))
	ev = Event{Tool: "Bash", Args: json.RawMessage(`{"command":"ls"}`)}
	toTranscript("claude", &ev)
	require.Equal(t, "Bash", ev.Tool)
	ev = Event{Tool: "mcp__github__search_issues", Args: json.RawMessage(`{"q":"x"}`)}
	toTranscript("codex", &ev)
	require.Equal(t, "mcp__github__search_issues", ev.Tool)

	// Copilot's free-text description is not part of the call.
	require.JSONEq(t, `{"command":"ls"}`, string(copilotArgs("bash", json.RawMessage(`{"command":"ls","description":"list"}`))))

	p := cliPolicy(claudeAgent, []string{"Poll", ""})
	require.True(t, p.Tools["Read"].ReadOnly)
	require.True(t, p.Tools["Poll"].Exempt)
	require.Negative(t, p.MaxCallsPerTurn)
}

// TestClaudeFailure: PostToolUseFailure books a failure.
func TestClaudeFailure(t *testing.T) {
	p, err := parsePayload([]byte(`{"session_id":"S","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"x"},"tool_use_id":"t","error":"exit 1: boom"}`))
	require.NoError(t, err)
	ev, _ := claudeAgent.parse(p, "")
	require.Equal(t, KindPost, ev.Kind)
	require.True(t, ev.Failed)
	require.Equal(t, "exit 1: boom", ev.Result)
	p, _ = parsePayload([]byte(`{"session_id":"S","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"x"},"tool_response":"Exit code: 2\nboom"}`))
	ev, _ = codexAgent.parse(p, "")
	require.True(t, ev.Failed)
}

// TestAgentNoise: what an agent writes into every result and changes each
// time (Gemini's process group id, Copilot's shell number) is not a new
// result: the third identical command is still refused.
func TestAgentNoise(t *testing.T) {
	results := map[string]func(i int) string{
		"gemini":  func(i int) string { return fmt.Sprintf("Output: hi\nProcess Group PGID: %d", 31000+i*77) },
		"copilot": func(i int) string { return fmt.Sprintf("hi\n<shellId: %d completed with exit code 0>", i) },
	}
	for _, c := range contracts {
		res, ok := results[c.agent]
		if !ok {
			continue
		}
		t.Run(c.agent, func(t *testing.T) {
			env := testEnv(t)
			for i := 1; i <= 3; i++ {
				code, out, _ := invoke(t, env, c.pre(i, "echo hi"), runArgs(c, c.preEvent)...)
				if i == 3 {
					require.True(t, c.denied(code, out), "call 3: %s", out)
					return
				}
				invoke(t, env, c.post(i, "echo hi", res(i)), runArgs(c, c.postEvent)...)
			}
		})
	}
	p, _ := parsePayload([]byte(js(map[string]any{"sessionId": "S", "toolName": "bash", "toolArgs": `{"command":"false"}`,
		"toolResult": map[string]any{"resultType": "success", "textResultForLlm": "<shellId: 4 completed with exit code 1>"}})))
	ev, _ := copilotAgent.parse(p, "postToolUse")
	require.True(t, ev.Failed)
}

// TestFailures: each agent's way of saying a command failed, in the shapes
// the real CLIs sent (Codex: the exit status is only in the rollout;
// Gemini: "Exit Code:" in llmContent; Cline: the outputs' success, while
// postToolUse.success says only that the tool ran).
func TestFailures(t *testing.T) {
	dir := t.TempDir()
	rollout := filepath.Join(dir, "rollout.jsonl")
	lines := []string{
		`{"timestamp":"2026-11-28T09:43:09.463Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"pytset -x -q\"}","call_id":"call_s1i0"}}`,
		`{"timestamp":"2026-11-28T09:43:09.540Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"call_s1i0","status":"failed","aggregated_output":"pytset: command not found\n","exit_code":127}}}`,
		`{"timestamp":"2026-11-28T09:43:09.541Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"call_ok","status":"completed","exit_code":0}}}`,
	}
	require.NoError(t, os.WriteFile(rollout, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	post := func(id string) Event {
		p, err := parsePayload([]byte(js(map[string]any{"session_id": "S", "turn_id": "T", "transcript_path": rollout, "hook_event_name": "PostToolUse",
			"tool_name": "Bash", "tool_input": map[string]any{"command": "pytset -x -q"}, "tool_response": "pytset: command not found\n", "tool_use_id": id})))
		require.NoError(t, err)
		ev, _ := codexAgent.parse(p, "")
		return ev
	}
	require.True(t, post("call_s1i0").Failed)
	require.False(t, post("call_ok").Failed)
	require.False(t, post("call_unknown").Failed)

	p, _ := parsePayload([]byte(js(map[string]any{"session_id": "S", "hook_event_name": "AfterTool", "tool_name": "run_shell_command",
		"tool_input": map[string]any{"command": "pytset"}, "tool_response": map[string]any{
			"llmContent": "<untrusted_context>\nOutput: pytset: command not found\nExit Code: 127\nProcess Group PGID: 2037\n</untrusted_context>"}})))
	ev, _ := geminiAgent.parse(p, "")
	require.True(t, ev.Failed)

	p, _ = parsePayload([]byte(js(map[string]any{"taskId": "S", "hookName": "tool_result",
		"tool_result": map[string]any{"id": "call_1", "name": "run_commands", "input": map[string]any{"commands": []string{"pytset -x"}},
			"output": []any{map[string]any{"query": "pytset -x", "result": "[Command exited with code 127]", "error": "Command exited with code 127", "success": false}}},
		"postToolUse": map[string]any{"toolName": "run_commands", "parameters": map[string]any{"commands": `["pytset -x"]`}, "success": true}})))
	ev, _ = clineAgent.parse(p, "PostToolUse")
	require.True(t, ev.Failed)
	require.Equal(t, "call_1", ev.CallID)
	require.JSONEq(t, `{"commands":["pytset -x"]}`, string(ev.Args))
}

func claudePre(session, id, cmd string) string {
	return js(map[string]any{"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": cmd}, "tool_use_id": id})
}

func claudePost(session, id, cmd, res string) string {
	return js(map[string]any{"session_id": session, "hook_event_name": "PostToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": cmd}, "tool_use_id": id, "tool_response": map[string]any{"stdout": res}})
}

// readLog returns the records of a session log, failing on a line that is
// not a whole record.
func readLog(t testing.TB, path string) []record {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []record
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r record
		require.NoError(t, json.Unmarshal(line, &r), "line %q", line)
		out = append(out, r)
	}
	return out
}

// TestHugeArguments: a 20 MB write is checked and recorded; what is kept
// of it is a few hundred bytes.
func TestHugeArguments(t *testing.T) {
	env := testEnv(t)
	big := strings.Repeat("x = 1\n", 20<<20/6)
	pre := js(map[string]any{"session_id": "B", "hook_event_name": "PreToolUse", "tool_name": "Write",
		"tool_input": map[string]any{"file_path": "/w/a.py", "content": big}, "tool_use_id": "w1"})
	code, out, errOut := invoke(t, env, pre, "--agent", "claude")
	require.Equal(t, 0, code)
	require.Empty(t, out, errOut)
	e := NewEngine(claudeAgent, cliPolicy(claudeAgent, nil), stateDir(env), nil)
	st, err := os.Stat(filepath.Join(e.sessionDir("B"), "log"))
	require.NoError(t, err)
	require.Less(t, st.Size(), int64(2048))
}
