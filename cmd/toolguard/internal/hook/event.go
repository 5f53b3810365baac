package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard"
)

// Kind is what an agent's hook event means to the guard.
type Kind int

// The kinds of events.
const (
	KindOther  Kind = iota // an event the guard does not act on
	KindPre                // a tool call is about to run: decide it
	KindPost               // a tool call ran: record its result
	KindPrompt             // new user input: a new turn
	KindStop               // the agent asks whether to end the run (Copilot's permissionRequest)
	KindTools              // the agent is about to offer tools (Gemini's BeforeToolSelection)
)

func (k Kind) String() string {
	switch k {
	case KindPre:
		return "pre"
	case KindPost:
		return "post"
	case KindPrompt:
		return "prompt"
	case KindStop:
		return "stop"
	case KindTools:
		return "tools"
	}
	return "other"
}

// Event is one hook invocation, parsed from the agent's payload and mapped
// to the vocabulary of the agent's transcript (see vocab.go), so that the
// hook and `toolguard audit` key the same call identically. It holds the
// raw arguments and result only in memory.
type Event struct {
	Kind    Kind
	Name    string // the agent's own event name
	Session string // the agent's session (conversation, task) id
	TurnID  string // the agent's turn id where it gives one (Codex): a change is a new turn
	CallID  string // the model's call id; "" where the agent gives none
	Tool    string
	Args    json.RawMessage
	Result  string // KindPost: the result text the model reads
	Failed  bool   // KindPost: the call failed
	// Transcript is the agent's transcript file, where it gives one.
	Transcript string
}

// Answer is the guard's decision for one event, before it is rendered in
// the agent's contract.
type Answer struct {
	Verdict toolguard.Verdict
	Reason  toolguard.Reason
	// Message is what the model (and, on a stop, the user) reads.
	Message string
	// Stop asks the agent to end the run through its stop channel, where it
	// has one (Claude's continue:false, Gemini's continue:false after a
	// first deny, Crush's halt, Cline's cancel, Copilot's interrupt).
	Stop bool
	// Aborts is the number of Abort decisions earlier in the turn: Gemini
	// stops only on a repeat after a first deny, as a stop withholds the
	// deny's reason from the model.
	Aborts int
	// NoTools asks the agent to offer no tools (Gemini's BeforeToolSelection
	// mode NONE), when the turn's budget is spent.
	NoTools bool
}

// Output is an answer in an agent's contract: what the hook process
// writes and its exit status.
type Output struct {
	Stdout []byte
	Stderr string
	Code   int
}

// payload is a hook payload decoded one level deep.
type payload map[string]json.RawMessage

// errNotObject is returned for a payload that is not a JSON object.
var errNotObject = errors.New("the payload is not a JSON object")

func parsePayload(data []byte) (payload, error) {
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("reading the payload: %w", err)
	}
	if p == nil {
		return nil, errNotObject
	}
	return p, nil
}

// str returns the first of keys that holds a JSON string.
func (p payload) str(keys ...string) string {
	for _, k := range keys {
		if raw, ok := p[k]; ok {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				return s
			}
		}
	}
	return ""
}

// eventName returns the event named by the first of keys the payload has,
// else event, the name given on the command line (--event).
func (p payload) eventName(event string, keys ...string) string {
	if name := p.str(keys...); name != "" {
		return name
	}
	return event
}

// obj returns the member key decoded one level deep, or nil.
func (p payload) obj(key string) payload {
	raw, ok := p[key]
	if !ok {
		return nil
	}
	var q payload
	if json.Unmarshal(raw, &q) != nil {
		return nil
	}
	return q
}

// args returns the member key as call arguments: a JSON object as it is, a
// string holding a JSON object decoded (some agents send the arguments as
// a JSON text), anything else nil.
func (p payload) args(key string) json.RawMessage {
	raw, ok := p[key]
	if !ok {
		return nil
	}
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) > 0 && raw[0] == '{' {
		return raw
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "{") && json.Valid([]byte(s)) {
			return json.RawMessage(s)
		}
	}
	if string(raw) == "null" || len(raw) == 0 {
		return nil
	}
	return raw
}

// text returns the member key as the text a model reads: a string as it
// is, an object's usual text fields joined, anything else as its JSON.
func (p payload) text(key string) string {
	raw, ok := p[key]
	if !ok {
		return ""
	}
	return resultText(raw)
}

// resultText turns a tool result of any shape into its text.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) == nil {
		var parts []string
		for _, k := range []string{"stdout", "stderr", "output", "llmContent", "textResultForLlm", "content", "result", "error"} {
			if v, ok := o[k]; ok {
				if t := resultText(v); t != "" {
					parts = append(parts, t)
				}
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		var parts []string
		for _, v := range arr {
			var blk struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(v, &blk) == nil && blk.Text != "" {
				parts = append(parts, blk.Text)
			} else if t := resultText(v); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n")
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// boolean reports whether key holds true.
func (p payload) boolean(key string) (v, ok bool) {
	raw, has := p[key]
	if !has {
		return false, false
	}
	if json.Unmarshal(raw, &v) != nil {
		return false, false
	}
	return v, true
}
