package audit

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"
)

// atifDoc is an Agent Trajectory Interchange Format document: the
// trajectory.json that Harbor (Terminal-Bench) writes for each trial, and
// that other harnesses export.
type atifDoc struct {
	SessionID string     `json:"session_id"`
	Steps     []atifStep `json:"steps"`
}

type atifStep struct {
	StepID    int             `json:"step_id"`
	Source    string          `json:"source"` // user, agent, system
	Message   json.RawMessage `json:"message"`
	ToolCalls []struct {
		ID        string          `json:"tool_call_id"`
		Name      string          `json:"function_name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"tool_calls"`
	Observation *struct {
		Results []struct {
			SourceCallID string          `json:"source_call_id"`
			Content      json.RawMessage `json:"content"`
			Extra        *struct {
				IsError bool   `json:"is_error"`
				Status  string `json:"status"`
			} `json:"extra"`
		} `json:"results"`
	} `json:"observation"`
	Metrics *struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
	} `json:"metrics"`
}

// atifReader reads one trajectory: one episode. A user step starts a user
// turn; an agent step's tool_calls are one round, completed by the
// results of its observation (matched by source_call_id, else in order); a
// result whose extra says is_error or status "error" is a failure. The
// steps' metrics give the usage.
type atifReader struct {
	name string
	s    *session
}

func newATIFReader(name string) *atifReader {
	return &atifReader{name: name, s: newSession(strings.TrimSuffix(path.Base(name), ".json"))}
}

func (r *atifReader) record(line int, data []byte) error {
	var doc atifDoc
	if err := decode(data, &doc); err != nil {
		return describeErr(err)
	}
	s := r.s
	s.line = line
	if doc.SessionID != "" {
		s.ep.Name = doc.SessionID
	}
	for i := range doc.Steps {
		st := &doc.Steps[i]
		prompt, output := 0, 0
		if st.Metrics != nil {
			prompt, output = st.Metrics.Prompt, st.Metrics.Completion
		}
		switch {
		case st.Source == "user":
			s.note("user steps")
			msg, _ := contentText(st.Message, "")
			s.userTurn(msg)
			continue
		case st.Source != "agent":
			s.note(clip(orDash(st.Source)) + " steps")
			continue
		case len(st.ToolCalls) == 0:
			s.note("agent steps without tool calls")
			s.response(prompt)
			continue
		}
		calls := make([]Call, 0, len(st.ToolCalls))
		for j, tc := range st.ToolCalls {
			id := tc.ID
			if id == "" {
				id = "step" + strconv.Itoa(st.StepID) + "." + strconv.Itoa(j)
			}
			name := tc.Name
			if name == "" {
				name = "-"
			}
			calls = append(calls, Call{ID: id, Tool: name, Args: rawArgs(tc.Arguments)})
		}
		s.calls("", prompt, output, calls...)
		if st.Observation == nil {
			continue
		}
		for j, res := range st.Observation.Results {
			id := res.SourceCallID
			if id == "" && j < len(calls) {
				id = calls[j].ID
			}
			out, err := contentText(res.Content, "steps.observation.results.content")
			if err != nil || (out == "" && jsonKind(res.Content) != "nothing" && jsonKind(res.Content) != "null") {
				out = string(res.Content)
			}
			failed := res.Extra != nil && (res.Extra.IsError || res.Extra.Status == "error")
			s.result(id, out, failed)
		}
	}
	return nil
}

func (r *atifReader) finish() ([]Episode, map[string]int, error) {
	if len(r.s.ep.Calls) == 0 {
		return nil, r.s.seen, nil
	}
	return []Episode{r.s.finish()}, r.s.seen, nil
}
