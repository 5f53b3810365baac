package audit

import (
	"encoding/json"
	"path"
	"strings"
)

// opencode's `opencode export SESSION` writes a session as one JSON
// document: {"info": {...}, "messages": [{"info": {"id", "role", "tokens"},
// "parts": [...]}]}, where a part of type "tool" is a call with its state
// (status completed or error, input, output, error).

type opencodeExport struct {
	Info struct {
		ID        string `json:"id"`
		Title     string `json:"title"`
		Directory string `json:"directory"`
	} `json:"info"`
	Messages []struct {
		Info struct {
			ID     string `json:"id"`
			Role   string `json:"role"`
			Tokens *struct {
				Input  int `json:"input"`
				Output int `json:"output"`
				Cache  *struct {
					Read  int `json:"read"`
					Write int `json:"write"`
				} `json:"cache"`
			} `json:"tokens"`
		} `json:"info"`
		Parts []struct {
			Type   string `json:"type"`
			Text   *text  `json:"text"`
			CallID string `json:"callID"`
			Tool   string `json:"tool"`
			State  *struct {
				Status string          `json:"status"`
				Input  json.RawMessage `json:"input"`
				Output *text           `json:"output"`
				Error  *text           `json:"error"`
			} `json:"state"`
		} `json:"parts"`
	} `json:"messages"`
}

// opencodeStart reports whether the messages of a document are opencode's:
// each with its info and its parts.
func opencodeStart(messages json.RawMessage) bool {
	el, ok := firstElement(messages)
	if !ok {
		return false
	}
	var m struct {
		Info  json.RawMessage `json:"info"`
		Parts json.RawMessage `json:"parts"`
	}
	return decode(el, &m) == nil && len(m.Info) > 0 && len(m.Parts) > 0
}

// opencodeReader reads an export: one episode. A user message starts a
// turn; an assistant message's tool parts are a round (a step-start part
// starts another), each with its result; status error is a failure.
type opencodeReader struct {
	name string
	eps  []Episode
	seen map[string]int
}

func newOpencodeReader(name string) *opencodeReader {
	return &opencodeReader{name: name, seen: map[string]int{}}
}

func (r *opencodeReader) record(line int, data []byte) error {
	var doc opencodeExport
	if err := decode(data, &doc); err != nil {
		return describeErr(err)
	}
	s := newSession(strings.TrimSuffix(path.Base(r.name), ".json"))
	if doc.Info.ID != "" {
		s.ep.Name = doc.Info.ID
	}
	s.line = line
	for _, m := range doc.Messages {
		prompt, output := 0, 0
		if t := m.Info.Tokens; t != nil {
			prompt, output = t.Input, t.Output
			if t.Cache != nil {
				prompt += t.Cache.Read + t.Cache.Write
			}
		}
		if m.Info.Role == "user" {
			said := ""
			for _, p := range m.Parts {
				if p.Type == "text" && p.Text != nil && said == "" {
					said = string(*p.Text)
				}
			}
			s.note("user messages")
			s.userTurn(said)
			continue
		}
		var round []Call
		flush := func() {
			if len(round) > 0 {
				s.calls("", prompt, output, round...)
				prompt, output = 0, 0
				round = nil
			}
		}
		type res struct {
			id, out string
			failed  bool
		}
		var results []res
		for _, p := range m.Parts {
			switch p.Type {
			case "step-start":
				flush()
			case "tool":
				c := Call{ID: p.CallID, Tool: orDash(p.Tool)}
				rr := res{id: p.CallID}
				if st := p.State; st != nil {
					c.Args = rawArgs(st.Input)
					if st.Output != nil {
						rr.out = string(*st.Output)
					}
					if st.Status == "error" {
						rr.failed = true
						if st.Error != nil && rr.out == "" {
							rr.out = string(*st.Error)
						}
					}
				}
				round = append(round, c)
				results = append(results, rr)
			default:
				s.note(clip(orDash(p.Type)) + " parts")
			}
		}
		flush()
		for _, rr := range results {
			s.result(rr.id, rr.out, rr.failed)
		}
	}
	if len(s.ep.Calls) > 0 {
		ep := s.finish()
		ep.Project = doc.Info.Directory
		r.eps = append(r.eps, ep)
	}
	for k, v := range s.seen {
		r.seen[k] += v
	}
	return nil
}

func (r *opencodeReader) finish() ([]Episode, map[string]int, error) { return r.eps, r.seen, nil }
