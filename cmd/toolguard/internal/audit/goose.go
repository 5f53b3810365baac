package audit

import (
	"encoding/json"
	"path"
	"strings"
)

// Goose kept each session as JSON Lines (~/.local/share/goose/sessions/
// NAME.jsonl): a first line of metadata (working_dir, description,
// message_count, tokens), then one message per line whose content holds
// text, toolRequest and toolResponse items.

type gooseLine struct {
	WorkingDir  string          `json:"working_dir"`
	Description string          `json:"description"`
	Role        string          `json:"role"`
	Content     []gooseItem     `json:"content"`
	Tokens      json.RawMessage `json:"total_tokens"`
}

type gooseItem struct {
	Type     string `json:"type"`
	Text     *text  `json:"text"`
	ID       string `json:"id"`
	ToolCall *struct {
		Status string `json:"status"`
		Value  *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"value"`
		Error string `json:"error"`
	} `json:"toolCall"`
	ToolResult *struct {
		Status string          `json:"status"`
		Value  json.RawMessage `json:"value"`
		Error  string          `json:"error"`
	} `json:"toolResult"`
}

// gooseReader reads one session: one episode. A user message with text
// starts a turn; an assistant message's toolRequest items are a round; a
// toolResponse completes the call with its id, and status "error" is a
// failure.
type gooseReader struct {
	s       *session
	project string
}

func newGooseReader(name string) *gooseReader {
	return &gooseReader{s: newSession(strings.TrimSuffix(path.Base(name), ".jsonl"))}
}

func (r *gooseReader) record(line int, data []byte) error {
	var l gooseLine
	if err := decode(data, &l); err != nil {
		return describeErr(err)
	}
	s := r.s
	s.line = line
	if l.Role == "" {
		if r.project == "" {
			r.project = l.WorkingDir
		}
		return nil
	}
	var calls []Call
	said := ""
	for i := range l.Content {
		it := &l.Content[i]
		switch it.Type {
		case "toolRequest":
			c := Call{ID: it.ID, Tool: "-"}
			if tc := it.ToolCall; tc != nil && tc.Value != nil {
				c.Tool, c.Args = orDash(tc.Value.Name), rawArgs(tc.Value.Arguments)
			}
			calls = append(calls, c)
		case "toolResponse":
			out, failed := "", false
			if tr := it.ToolResult; tr != nil {
				out, _ = contentText(tr.Value, "")
				failed = tr.Status == "error"
				if failed && out == "" {
					out = tr.Error
				}
			}
			s.result(it.ID, out, failed)
		case "text":
			if it.Text != nil && said == "" {
				said = string(*it.Text)
			}
		default:
			s.note(clip(orDash(it.Type)) + " items")
		}
	}
	switch {
	case l.Role == "assistant" && len(calls) > 0:
		s.calls("", 0, 0, calls...)
	case l.Role == "user" && said != "":
		s.note("user messages")
		s.userTurn(said)
	}
	return nil
}

func (r *gooseReader) finish() ([]Episode, map[string]int, error) {
	if len(r.s.ep.Calls) == 0 {
		return nil, r.s.seen, nil
	}
	ep := r.s.finish()
	ep.Project = r.project
	return []Episode{ep}, r.s.seen, nil
}
