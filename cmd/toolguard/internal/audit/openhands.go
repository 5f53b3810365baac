package audit

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"
)

// openhandsEvent is one event of an OpenHands trajectory (the array of
// events OpenHands saves or exports for a conversation): an action, or an
// observation whose cause is the action's id.
type openhandsEvent struct {
	ID          int             `json:"id"`
	Source      string          `json:"source"`
	Message     string          `json:"message"`
	Action      string          `json:"action"`
	Observation string          `json:"observation"`
	Cause       *int            `json:"cause"`
	Args        json.RawMessage `json:"args"`
	Content     json.RawMessage `json:"content"`
	Extras      struct {
		ExitCode *int `json:"exit_code"`
		Metadata *struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	} `json:"extras"`
	Meta *struct {
		Function string `json:"function_name"`
		CallID   string `json:"tool_call_id"`
		Response *struct {
			ID      string `json:"id"`
			Choices []struct {
				Message struct {
					ToolCalls []openaiToolCall `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			} `json:"usage"`
		} `json:"model_response"`
	} `json:"tool_call_metadata"`
}

// openhandsQuiet are the actions and observations that are no tool call:
// the agent's state, the system prompt, memory recalls, and the agent's
// messages (a user message starts a turn).
var openhandsQuiet = map[string]bool{"message": true, "system": true, "recall": true, "change_agent_state": true,
	"agent_state_changed": true, "null": true, "think": true, "": true}

// openhandsNoise are the keys of an action's args that describe the call
// rather than ask for something (the model's thought, how it was run):
// they are left out of the arguments, so that a repeated call reads the
// same.
var openhandsNoise = []string{"thought", "impl_source", "translated_ipython_code", "confirmation_state",
	"security_risk", "hidden", "blocking", "is_input", "is_confirmed", "wait_for_response"}

// openhandsReader reads one trajectory: one episode. An action with a tool
// call (finish included) is a call, named by the function the model called
// (tool_call_metadata), else by the action; the calls of one model
// response are one round; an observation completes the action it names as
// its cause, and is a failure when it is an error or a command's non-zero
// exit code.
type openhandsReader struct {
	s      *session
	callOf map[int]string // action id → call id
}

func newOpenHandsReader(name string) *openhandsReader {
	return &openhandsReader{s: newSession(strings.TrimSuffix(path.Base(name), ".json")), callOf: map[int]string{}}
}

func (r *openhandsReader) record(line int, data []byte) error {
	var ev openhandsEvent
	if err := decode(data, &ev); err != nil {
		return describeErr(err)
	}
	s := r.s
	s.line = line
	switch {
	case ev.Action == "message" && ev.Source == "user":
		s.note("user messages")
		s.userTurn(ev.Message)
	case ev.Action != "" && !openhandsQuiet[ev.Action]:
		r.call(&ev)
	case ev.Observation != "" && !openhandsQuiet[ev.Observation] && ev.Cause != nil:
		content, _ := contentText(ev.Content, "")
		failed := ev.Observation == "error"
		for _, code := range []*int{ev.Extras.ExitCode, metadataExit(&ev)} {
			if code != nil && *code != 0 {
				failed = true
			}
		}
		s.result(r.callOf[*ev.Cause], content, failed)
	default:
		kind := ev.Action
		if kind == "" {
			kind = ev.Observation
		}
		s.note(clip(orDash(kind)) + " events")
	}
	return nil
}

func metadataExit(ev *openhandsEvent) *int {
	if ev.Extras.Metadata == nil {
		return nil
	}
	return ev.Extras.Metadata.ExitCode
}

// call books an action as a call.
func (r *openhandsReader) call(ev *openhandsEvent) {
	c := Call{ID: "event-" + strconv.Itoa(ev.ID), Tool: ev.Action}
	key, prompt, output := "", 0, 0
	if m := ev.Meta; m != nil {
		if m.CallID != "" {
			c.ID = m.CallID
		}
		if m.Function != "" {
			c.Tool = m.Function
		}
		if resp := m.Response; resp != nil {
			key = resp.ID
			if resp.Usage != nil {
				prompt, output = resp.Usage.Prompt, resp.Usage.Completion
			}
			for _, ch := range resp.Choices {
				for _, tc := range ch.Message.ToolCalls {
					if tc.ID == c.ID && tc.Function != nil {
						c.Args = openaiArgs(tc.Function.Arguments)
					}
				}
			}
		}
	}
	if c.Args == nil {
		c.Args = withoutKeys(ev.Args, openhandsNoise)
	}
	r.callOf[ev.ID] = c.ID
	r.s.calls(key, prompt, output, c)
}

// withoutKeys returns a JSON object without the given keys (raw itself
// when it is not an object).
func withoutKeys(raw json.RawMessage, keys []string) json.RawMessage {
	var m map[string]json.RawMessage
	if jsonKind(raw) != "object" || decode(raw, &m) != nil {
		return rawArgs(raw)
	}
	for _, k := range keys {
		delete(m, k)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return rawArgs(raw)
	}
	return out
}

func (r *openhandsReader) finish() ([]Episode, map[string]int, error) {
	if len(r.s.ep.Calls) == 0 {
		return nil, r.s.seen, nil
	}
	return []Episode{r.s.finish()}, r.s.seen, nil
}
