package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// geminiRecord is one record of a Gemini CLI session file: the session's
// metadata (sessionId, projectHash; the older .json file holds its messages
// too), a message (id, type), a metadata update ($set) or a rewind
// ($rewindTo: the message from which on the conversation was undone).
type geminiRecord struct {
	SessionID   string          `json:"sessionId"`
	ProjectHash string          `json:"projectHash"`
	Messages    []geminiMessage `json:"messages"`
	Set         *struct {
		Messages *[]geminiMessage `json:"messages"`
	} `json:"$set"`
	RewindTo *string `json:"$rewindTo"`
	geminiMessage
}

type geminiMessage struct {
	ID        string           `json:"id"`
	Type      string           `json:"type"`
	Content   json.RawMessage  `json:"content"`
	ToolCalls []geminiToolCall `json:"toolCalls"`
	Tokens    *struct {
		Input  int `json:"input"`
		Output int `json:"output"`
	} `json:"tokens"`
	line int // the line of the record that last wrote it
}

type geminiToolCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Result json.RawMessage `json:"result"`
	Status string          `json:"status"`
}

// geminiReader keeps the session's messages in order by id: a record with
// an id already held replaces that message in place (the CLI appends a
// message again when its tool calls complete), and a rewind drops the
// message it names and every later one, as the CLI does when it loads the
// file. The episode is built when the file ends.
type geminiReader struct {
	file    string
	name    string
	project string
	ids     []string
	pos     map[string]int // id → its index in ids
	msgs    map[string]geminiMessage
	seen    map[string]int
	line    int // the line of the record being read
}

func newGeminiReader(name string) *geminiReader {
	return &geminiReader{file: name, pos: map[string]int{}, msgs: map[string]geminiMessage{}, seen: map[string]int{}}
}

func (r *geminiReader) record(line int, data []byte) error {
	r.line = line
	var rec geminiRecord
	if err := decode(data, &rec); err != nil {
		return describeErr(err)
	}
	if rec.SessionID != "" {
		r.name = rec.SessionID
	}
	if rec.ProjectHash != "" && r.project == "" {
		r.project = rec.ProjectHash
	}
	switch {
	case rec.RewindTo != nil:
		r.seen["rewinds"]++
		r.rewind(*rec.RewindTo)
	case rec.Set != nil:
		if rec.Set.Messages != nil {
			r.ids, r.pos, r.msgs = nil, map[string]int{}, map[string]geminiMessage{}
			for _, m := range *rec.Set.Messages {
				r.put(m)
			}
		}
	case rec.ID != "":
		r.put(rec.geminiMessage)
	case rec.SessionID != "":
		for _, m := range rec.Messages {
			r.put(m)
		}
	default:
		r.seen["unrecognized records"]++
	}
	return nil
}

func (r *geminiReader) put(m geminiMessage) {
	if m.ID == "" {
		r.seen["messages without id"]++
		return
	}
	if _, ok := r.msgs[m.ID]; !ok {
		r.pos[m.ID] = len(r.ids)
		r.ids = append(r.ids, m.ID)
	}
	m.line = r.line
	r.msgs[m.ID] = m
}

// rewind drops the message id and all later ones; an id not held drops
// every message (the CLI does the same).
func (r *geminiReader) rewind(id string) {
	cut, ok := r.pos[id]
	if !ok {
		cut = 0
	}
	for _, x := range r.ids[cut:] {
		delete(r.msgs, x)
		delete(r.pos, x)
	}
	r.ids = r.ids[:cut]
}

func (r *geminiReader) finish() ([]Episode, map[string]int, error) {
	name := r.name
	if name == "" {
		name = strings.TrimSuffix(strings.TrimSuffix(path.Base(r.file), ".jsonl"), ".json")
	}
	s := newSession(name)
	for k, n := range r.seen {
		s.seen[k] = n
	}
	for _, id := range r.ids {
		m := r.msgs[id]
		switch m.Type {
		case "user":
			s.note("user messages")
			text, _ := contentText(m.Content, "")
			s.userTurn(text)
		case "gemini":
			prompt, output := 0, 0
			if m.Tokens != nil {
				prompt, output = m.Tokens.Input, m.Tokens.Output
			}
			if len(m.ToolCalls) == 0 {
				s.note("gemini messages")
				s.response(prompt)
				continue
			}
			calls := make([]Call, 0, len(m.ToolCalls))
			for i, tc := range m.ToolCalls {
				if tc.Name == "" {
					return nil, s.seen, fmt.Errorf("message %s: toolCalls[%d].name: missing or empty", clip(id), i)
				}
				calls = append(calls, Call{ID: tc.ID, Tool: tc.Name, Args: rawArgs(tc.Args)})
			}
			s.line = m.line
			s.calls(id, prompt, output, calls...)
			for _, tc := range m.ToolCalls {
				text, err := geminiResult(tc.Result)
				if err != nil {
					return nil, s.seen, fmt.Errorf("message %s: %w", clip(id), err)
				}
				s.result(tc.ID, text, tc.Status == "error" || tc.Status == "cancelled")
			}
		default:
			s.note(clip(orDash(m.Type)) + " messages")
		}
	}
	if len(s.ep.Calls) == 0 {
		return nil, s.seen, nil
	}
	ep := s.finish()
	ep.Project = r.project
	return []Episode{ep}, s.seen, nil
}

// geminiResult reads a tool call's result, a list of parts whose
// functionResponse.response holds the output (or the error): the
// responses' JSON joined with newlines, or the text of text parts.
func geminiResult(raw json.RawMessage) (string, error) {
	switch jsonKind(raw) {
	case "nothing", "null":
		return "", nil
	case "string":
		var s string
		err := decodeField(raw, &s, "result")
		return s, err
	case "object":
		raw = json.RawMessage("[" + string(raw) + "]")
	case "array":
	default:
		return "", errors.New("result: want a list of parts")
	}
	var parts []struct {
		Text             *string `json:"text"`
		FunctionResponse *struct {
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	}
	if err := decodeField(raw, &parts, "result"); err != nil {
		return "", err
	}
	var out []string
	for _, p := range parts {
		switch {
		case p.FunctionResponse != nil:
			out = append(out, string(p.FunctionResponse.Response))
		case p.Text != nil:
			out = append(out, *p.Text)
		}
	}
	return strings.Join(out, "\n"), nil
}
