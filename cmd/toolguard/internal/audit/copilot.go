package audit

import (
	"encoding/json"
	"path"
	"strings"
)

// copilotEvent is one line of a GitHub Copilot CLI session log
// (~/.copilot/session-state/SESSION/events.jsonl): {"type", "data", "id",
// "timestamp", "parentId"}.
type copilotEvent struct {
	Type string `json:"type"`
	Data struct {
		SessionID string          `json:"sessionId"`
		Content   json.RawMessage `json:"content"`
		MessageID string          `json:"messageId"`
		Context   *struct {
			Cwd string `json:"cwd"`
		} `json:"context"`
		ToolRequests []struct {
			ID        string          `json:"toolCallId"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"toolRequests"`
		ToolCallID string `json:"toolCallId"`
		// ParentToolCallID names the task call whose subagent wrote the event.
		ParentToolCallID string          `json:"parentToolCallId"`
		ToolName         string          `json:"toolName"`
		Arguments        json.RawMessage `json:"arguments"`
		Success          *bool           `json:"success"`
		Result           json.RawMessage `json:"result"`
		Error            json.RawMessage `json:"error"`
		OutputTokens     int             `json:"outputTokens"`
	} `json:"data"`
}

// copilotTypes are the event types that tell a Copilot CLI log.
var copilotTypes = map[string]bool{"session.start": true, "user.message": true, "assistant.message": true,
	"tool.execution_start": true, "tool.execution_complete": true, "assistant.turn_start": true, "session.info": true}

// copilotReader reads one session log: the main agent is one episode, each
// subagent (the events whose data.parentToolCallId names the task call that
// started it) another. user.message starts a user turn; an
// assistant.message's toolRequests are one round (a tool.execution_start
// whose call no message requested is a round of its own);
// tool.execution_complete gives the result, success false a failure.
type copilotReader struct {
	s       *session // the main agent
	project string
	known   map[string]bool     // call ids read
	subs    map[string]*session // by the task call that started the subagent
	order   []string
}

func newCopilotReader(name string) *copilotReader {
	return &copilotReader{s: newSession(path.Base(path.Dir(name))), known: map[string]bool{}, subs: map[string]*session{}}
}

// agent returns the session of the agent that wrote an event.
func (r *copilotReader) agent(task string) *session {
	if task == "" {
		return r.s
	}
	s := r.subs[task]
	if s == nil {
		s = newSession(r.s.ep.Name + "/task-" + task)
		r.subs[task] = s
		r.order = append(r.order, task)
	}
	return s
}

func (r *copilotReader) record(line int, data []byte) error {
	var ev copilotEvent
	if err := decode(data, &ev); err != nil {
		return describeErr(err)
	}
	d := &ev.Data
	s := r.agent(d.ParentToolCallID)
	s.line = line
	switch ev.Type {
	case "session.start":
		if d.SessionID != "" {
			s.ep.Name = d.SessionID
		}
		if d.Context != nil && r.project == "" {
			r.project = d.Context.Cwd
		}
	case "user.message":
		s.note("user messages")
		msg, _ := contentText(d.Content, "")
		s.userTurn(msg)
	case "assistant.message":
		if len(d.ToolRequests) == 0 {
			s.note("assistant messages without tool calls")
			return nil
		}
		calls := make([]Call, 0, len(d.ToolRequests))
		for _, tr := range d.ToolRequests {
			r.known[tr.ID] = true
			calls = append(calls, Call{ID: tr.ID, Tool: orDash(tr.Name), Args: copilotArgs(tr.Arguments)})
		}
		s.calls("", 0, d.OutputTokens, calls...)
	case "tool.execution_start":
		if d.ToolCallID != "" && !r.known[d.ToolCallID] {
			r.known[d.ToolCallID] = true
			s.calls("", 0, 0, Call{ID: d.ToolCallID, Tool: orDash(d.ToolName), Args: copilotArgs(d.Arguments)})
		}
	case "tool.execution_complete":
		failed := d.Success != nil && !*d.Success
		text := copilotResult(d.Result)
		if failed && text == "" {
			text = copilotResult(d.Error)
		}
		s.result(d.ToolCallID, text, failed)
	default:
		s.note(clip(orDash(ev.Type)) + " events")
	}
	return nil
}

func (r *copilotReader) finish() ([]Episode, map[string]int, error) {
	sessions := []*session{r.s}
	for _, k := range r.order {
		sessions = append(sessions, r.subs[k])
	}
	seen := map[string]int{}
	var eps []Episode
	for _, s := range sessions {
		for kind, n := range s.seen {
			seen[kind] += n
		}
		if len(s.ep.Calls) == 0 {
			continue
		}
		ep := s.finish()
		ep.Project = r.project
		eps = append(eps, ep)
	}
	return eps, seen, nil
}

// copilotArgs reads a call's arguments: an object, or a JSON string of one.
func copilotArgs(raw json.RawMessage) json.RawMessage {
	if jsonKind(raw) == "string" {
		var s string
		if json.Unmarshal(raw, &s) == nil && json.Valid([]byte(s)) {
			return json.RawMessage(s)
		}
	}
	return rawArgs(raw)
}

// copilotResult reads a result or an error: a string, or an object whose
// content (or message) is the text; another object is kept whole.
func copilotResult(raw json.RawMessage) string {
	switch jsonKind(raw) {
	case "nothing", "null":
		return ""
	case "object":
		var o struct {
			Content *text `json:"content"`
			Message *text `json:"message"`
		}
		if decode(raw, &o) == nil {
			switch {
			case o.Content != nil:
				return string(*o.Content)
			case o.Message != nil:
				return string(*o.Message)
			}
		}
	}
	if t, err := contentText(raw, ""); err == nil && t != "" {
		return t
	}
	return strings.TrimSpace(string(raw))
}
