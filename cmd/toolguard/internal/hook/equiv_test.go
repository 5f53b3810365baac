package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/cmd/toolguard/internal/audit"
)

// fixtures are the repository's transcripts and labelled traces.
func fixtures(t testing.TB, traces bool) []string {
	var files []string
	_ = filepath.Walk("../../testdata/sessions", func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && (strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".json")) {
			files = append(files, p)
		}
		return nil
	})
	if traces {
		m, _ := filepath.Glob("../../../../testdata/traces/*.jsonl")
		files = append(files, m...)
	}
	require.NotEmpty(t, files)
	return files
}

// hookReplay feeds an episode's calls to e as an agent's hooks would: each
// round's calls checked (their hooks start together), then the results of
// the calls that ran; a new user turn as a prompt event. It returns the
// verdict and reason of each call.
func hookReplay(t testing.TB, e *Engine, clock *time.Time, session string, ep *audit.Episode) []string {
	var out []string
	turn := 0
	for start := 0; start < len(ep.Calls); {
		end := start + 1
		for end < len(ep.Calls) && ep.Calls[end].Round == ep.Calls[start].Round {
			end++
		}
		round := ep.Calls[start:end]
		*clock = clock.Add(time.Second)
		if turn != 0 && round[0].Turn != turn {
			_, err := e.Handle(Event{Kind: KindPrompt, Session: session})
			require.NoError(t, err)
		}
		turn = round[0].Turn
		allowed := make([]bool, len(round))
		for i, c := range round {
			*clock = clock.Add(time.Millisecond)
			a, err := e.Handle(Event{Kind: KindPre, Session: session, CallID: c.ID, Tool: c.Tool, Args: c.Args})
			require.NoError(t, err)
			allowed[i] = a.Verdict == toolguard.Allow
			out = append(out, fmt.Sprintf("%s/%s", a.Verdict, a.Reason))
		}
		for i, c := range round {
			if allowed[i] {
				*clock = clock.Add(time.Millisecond)
				_, err := e.Handle(Event{Kind: KindPost, Session: session, CallID: c.ID, Tool: c.Tool, Args: c.Args, Result: c.Result, Failed: c.Failed})
				require.NoError(t, err)
			}
		}
		start = end
	}
	return out
}

// TestSameAsAudit: the hook path (stand-ins in a session log, one event at
// a time) decides every call of the repository's transcripts and labelled
// traces as `toolguard audit` (raw calls, one in-process Tracker) does.
func TestSameAsAudit(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every fixture")
	}
	var p toolguard.Policy
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := NewEngine(claudeAgent, p, t.TempDir(), func() time.Time { return clock })
	e.cache = map[string]*cached{}
	calls, fired, differ := 0, 0, 0
	for fi, f := range fixtures(t, true) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		_, eps, err := audit.Parse(f, data)
		if err != nil {
			continue // a fixture of a format the audit reads only whole-folder
		}
		for k := range eps {
			ep := &eps[k]
			want := audit.Replay(p, ep)
			session := fmt.Sprintf("%d-%s-%d", fi, filepath.Base(f), k) // fixtures of two agents share file names
			got := append([]string{}, hookReplay(t, e, &clock, session, ep)...)
			// A new process reads the log and decides as the resident
			// engine did.
			require.Equal(t, got, logDecisions(t, e, session), "%s episode %q", f, ep.Name)
			for i, d := range want {
				calls++
				w := fmt.Sprintf("%s/%s", d.Verdict, d.Reason)
				if d.Fired() {
					fired++
				}
				if got[i] != w {
					differ++
					if differ <= 10 {
						t.Errorf("%s episode %q call %d (%s): hook %s, audit %s", f, ep.Name, i+1, d.Tool, got[i], w)
					}
				}
			}
		}
	}
	t.Logf("%d calls, %d fired in the audit, %d decided differently by the hook", calls, fired, differ)
	require.Greater(t, fired, 50)
}

// logDecisions replays a session's log from scratch, as a new hook process
// does, and returns the decision of each checked call.
func logDecisions(t testing.TB, e *Engine, session string) []string {
	f, err := os.Open(filepath.Join(e.sessionDir(session), "log"))
	if errors.Is(err, os.ErrNotExist) {
		return []string{} // an episode without calls
	}
	require.NoError(t, err)
	defer f.Close()
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	s := e.newSession()
	out := []string{}
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var r record
		require.NoError(t, json.Unmarshal(line, &r))
		d := e.replay(s, r)
		if r.K == "pre" {
			out = append(out, fmt.Sprintf("%s/%s", d.Verdict, d.Reason))
			require.Equal(t, r.V, d.Verdict, "the logged decision")
		}
	}
	return out
}

// agentOf is the agent whose transcripts a fixture folder holds.
func agentOf(path string) string {
	for _, a := range []string{"claude-code", "codex", "gemini"} {
		if strings.Contains(path, "/"+a+"/") {
			return strings.TrimSuffix(a, "-code")
		}
	}
	return ""
}

// payloads returns the hook payloads an agent sends for a recorded call:
// its pre and post events, in that agent's shape and vocabulary.
func payloads(agent, session string, c audit.Call) (pre, post string) {
	args := map[string]any{}
	_ = json.Unmarshal(c.Args, &args)
	tool := c.Tool
	if agent == "codex" && (tool == "exec_command" || tool == "shell") {
		// The hook sees the shell as Bash {"command": …}.
		cmd := args["cmd"]
		if cmd == nil {
			cmd = args["command"]
		}
		tool, args = "Bash", map[string]any{"command": cmd}
	}
	switch agent {
	case "gemini":
		resp := map[string]any{"llmContent": c.Result}
		if c.Failed {
			resp["error"] = map[string]any{"message": c.Result}
		}
		return js(map[string]any{"session_id": session, "hook_event_name": "BeforeTool", "tool_name": tool, "tool_input": args}),
			js(map[string]any{"session_id": session, "hook_event_name": "AfterTool", "tool_name": tool, "tool_input": args, "tool_response": resp})
	case "codex":
		res := c.Result
		if c.Failed && !codexExitRe.MatchString(res) {
			res = "Process exited with code 1\n" + res
		}
		return js(map[string]any{"session_id": session, "turn_id": "T", "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": args, "tool_use_id": c.ID}),
			js(map[string]any{"session_id": session, "turn_id": "T", "hook_event_name": "PostToolUse", "tool_name": tool, "tool_input": args, "tool_use_id": c.ID, "tool_response": res})
	}
	ev := "PostToolUse"
	resp := any(map[string]any{"stdout": c.Result})
	if c.Failed {
		ev = "PostToolUseFailure"
	}
	return js(map[string]any{"session_id": session, "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": args, "tool_use_id": c.ID}),
		js(map[string]any{"session_id": session, "hook_event_name": ev, "tool_name": tool, "tool_input": args, "tool_use_id": c.ID, "tool_response": resp, "error": c.Result})
}

// TestSameAsAuditThroughPayloads: the Claude Code, Codex and Gemini CLI
// transcript fixtures, each call sent as that agent's hook payloads to
// `hook run` (its parser and vocabulary included), decided as `toolguard
// audit` decides the transcript.
func TestSameAsAuditThroughPayloads(t *testing.T) {
	calls, fired := 0, 0
	for _, f := range fixtures(t, false) {
		agent := agentOf(f)
		if agent == "" {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		_, eps, err := audit.Parse(f, data)
		if err != nil {
			continue
		}
		for k := range eps {
			ep := &eps[k]
			env := testEnv(t)
			pol := cliPolicy(agents[agent], nil)
			want := audit.Replay(pol, ep)
			session := fmt.Sprint("S", k)
			turn := 0
			for i, c := range ep.Calls {
				if turn != 0 && c.Turn != turn {
					prompt := js(map[string]any{"session_id": session, "hook_event_name": map[string]string{
						"claude": "UserPromptSubmit", "gemini": "BeforeAgent", "codex": "UserPromptSubmit"}[agent]})
					invoke(t, env, prompt, "--agent", agent)
				}
				turn = c.Turn
				pre, post := payloads(agent, session, c)
				_, out, errOut := invoke(t, env, pre, "--agent", agent)
				require.Empty(t, errOut)
				calls++
				if want[i].Fired() {
					fired++
				}
				refused := out != ""
				require.Equal(t, want[i].Fired(), refused, "%s call %d (%s): hook %q, audit %s/%s", f, i+1, c.Tool, out, want[i].Verdict, want[i].Reason)
				if !refused {
					invoke(t, env, post, "--agent", agent)
				}
			}
		}
	}
	t.Logf("%d calls through the agents' payloads, %d fired", calls, fired)
	require.Greater(t, calls, 20)
	require.Greater(t, fired, 2)
}
