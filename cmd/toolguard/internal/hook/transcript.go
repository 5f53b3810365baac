package hook

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/toolguard/toolguard/cmd/toolguard/internal/audit"
)

// A session the guard has no log for, but whose agent names a transcript
// (Claude Code, Codex, Gemini CLI), is rebuilt from that transcript once:
// the guard was installed in the middle of a session, or `toolguard serve`
// starts with sessions under way that it has not seen. The transcript's
// calls (through the audit readers, in the hooks' vocabulary) become the
// log's first lines; from then on the log is the state. The transcript is
// read only that once: the measured alternative, reading it at every call,
// costs far more at a long session (docs/hooks.md).

// maxTranscript bounds the transcript read to rebuild a session.
const maxTranscript = 64 << 20

// transcriptAgents are the agents whose transcripts the audit reads.
var transcriptAgents = map[string]bool{"claude": true, "codex": true, "gemini": true}

// fromTranscript returns the log lines of the calls ev's transcript
// records before ev, each checked and recorded; the turn changes of the
// transcript become resets. It returns nothing when there is no transcript
// to read.
func (e *Engine) fromTranscript(ev Event, at time.Time) ([]record, error) {
	if ev.Transcript == "" || !transcriptAgents[e.agent.name] {
		return nil, nil
	}
	f, err := os.Open(ev.Transcript)
	if err != nil {
		return nil, nil // not written yet: a new session
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTranscript+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTranscript {
		return nil, fmt.Errorf("the transcript %s is over %d bytes: not read", ev.Transcript, maxTranscript)
	}
	_, eps, err := audit.Parse(ev.Transcript, data)
	if err != nil || len(eps) == 0 {
		return nil, nil // not a transcript the audit reads: start empty
	}
	ep := eps[0] // the main session; subagents' episodes follow it
	calls := ep.Calls
	// The calls the agent has asked for but not run yet (this one among
	// them) have no result in the transcript: they are checked now.
	for len(calls) > 0 {
		last := calls[len(calls)-1]
		if last.ID != ev.CallID && (last.Result != "" || last.Failed) {
			break
		}
		calls = calls[:len(calls)-1]
	}
	var out []record
	t := at.Add(-time.Duration(2*len(calls)+2) * time.Microsecond).UnixNano()
	tick := func() int64 { t += 1000; return t }
	turn, round := 0, 0
	for _, c := range calls {
		if turn != 0 && c.Turn != turn {
			out = append(out, record{K: "reset", T: tick()})
		}
		turn = c.Turn
		if c.Round != round {
			round = c.Round
		}
		ev := Event{Tool: c.Tool, Args: c.Args}
		if e.agent.name == "codex" {
			codexFromRollout(&ev)
		}
		a := standIn(ev.Args)
		out = append(out, record{K: "pre", T: tick(), R: uint64(round), ID: c.ID, Tool: ev.Tool, A: a})
		res := e.agent.maskAgentNoise(c.Result)
		o := resultToken(res)
		if c.Failed {
			o = errorToken(res)
		}
		post := record{K: "post", T: tick(), ID: c.ID, O: o, F: c.Failed}
		if c.ID == "" {
			post.Tool, post.A = ev.Tool, a
		}
		out = append(out, post)
	}
	return out, nil
}

// codexFromRollout maps a rollout's shell call to what the hook sees of
// it: exec_command with only its command (the hook is not told the
// working folder or the timeouts), so a call before the install and the
// same call after it are one key.
func codexFromRollout(ev *Event) {
	if ev.Tool != "exec_command" && ev.Tool != "shell" && ev.Tool != "local_shell" {
		return
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(ev.Args, &in) != nil {
		return
	}
	cmd, ok := in["cmd"]
	if !ok {
		cmd, ok = in["command"]
	}
	if !ok {
		return
	}
	hook := Event{Tool: "Bash", Args: mustJSON(map[string]json.RawMessage{"command": cmd})}
	toTranscript("codex", &hook)
	*ev = hook
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
