package audit

import (
	"encoding/json"
	"errors"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// codexLine is one line of a Codex CLI rollout: {"timestamp", "type",
// "payload"}. Older rollouts (before the envelope) hold the bare item, and
// their first line is the session's {"id", "timestamp", "instructions"}.
type codexLine struct {
	Type    string         `json:"type"`
	Payload *responsesItem `json:"payload"`
	ID      string         `json:"id"`
	Record  string         `json:"record_type"`
}

// responsesItem is an OpenAI Responses API item (Codex stores the same
// items), with the fields of the other payloads Codex writes: session_meta
// (id, cwd), event_msg user_message and token_count (info).
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
	Status    string          `json:"status"`
	Cwd       string          `json:"cwd"`
	Success   *bool           `json:"success"`
	Message   string          `json:"message"` // event_msg user_message
	Info      *struct {
		Last *struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"last_token_usage"`
	} `json:"info"`
}

// codexReader reads one rollout: one episode. Turns start at user
// messages (event_msg user_message; in rollouts without those, user
// message items that are not the injected context). A round is one model
// response: in a rollout that writes token_count events, the calls up to the
// next token_count (a response's reasoning, messages and hosted searches
// sit between its calls); in one without, the calls between two outputs.
type codexReader struct {
	s          *session
	project    string
	userEvents bool // the rollout has event_msg user_message
	counted    bool // the rollout has event_msg token_count: they end responses
	afterCall  bool // the last item was a call: the next call is in the same response
	callsSince bool // calls since the last token_count
	// searchID is the call_id of the web_search_end event just read: Codex
	// writes it before the web_search_call item, which has no id of its own.
	searchID string
}

func newCodexReader(name string) *codexReader {
	base := strings.TrimSuffix(path.Base(name), ".jsonl")
	return &codexReader{s: newSession(base)}
}

func (r *codexReader) record(line int, data []byte) error {
	var l codexLine
	if err := decode(data, &l); err != nil {
		return describeErr(err)
	}
	s := r.s
	s.line = line
	switch {
	case l.Payload == nil && l.Type == "" && l.ID != "":
		s.ep.Name = l.ID // the first line of an older rollout
		return nil
	case l.Payload == nil && l.Record != "":
		return nil
	case l.Payload == nil:
		// An item of an older rollout, without the envelope.
		var it responsesItem
		if err := decode(data, &it); err != nil {
			return describeErr(err)
		}
		return r.item(&it)
	}
	p := l.Payload
	searchID := r.searchID
	r.searchID = ""
	switch l.Type {
	case "session_meta":
		if p.ID != "" {
			s.ep.Name = p.ID
		}
		if r.project == "" {
			r.project = p.Cwd
		}
	case "turn_context":
		if r.project == "" {
			r.project = p.Cwd
		}
	case "event_msg":
		switch p.Type {
		case "user_message":
			r.userEvents = true
			r.afterCall = false
			s.note("user messages")
			s.userTurn(p.Message)
		case "patch_apply_end":
			// The patch of an apply_patch call did not apply; the call's
			// output may not say so.
			if p.Success != nil && !*p.Success {
				s.fail(p.CallID)
			}
			s.note("event_msg patch_apply_end records")
		case "web_search_end":
			r.searchID = p.CallID
			s.note("event_msg web_search_end records")
		case "token_count":
			r.counted = true
			r.afterCall = false // a response ended: the next call is another's
			if p.Info != nil && p.Info.Last != nil {
				s.lateUsage(p.Info.Last.InputTokens, p.Info.Last.OutputTokens, r.callsSince)
				r.callsSince = false
			}
		default:
			s.note("event_msg " + clip(p.Type) + " records")
		}
	case "response_item":
		if p.Type == "web_search_call" && p.CallID == "" && p.ID == "" {
			p.ID = searchID
		}
		return r.item(p)
	default:
		s.note(clip(orDash(l.Type)) + " records")
	}
	return nil
}

// injected reports whether a user message item is context that Codex
// injects (environment, instructions) rather than the user's words.
func injected(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<user_shell_command>", "<turn_aborted>"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

func (r *codexReader) item(it *responsesItem) error {
	s := r.s
	call := Call{ID: it.CallID}
	switch it.Type {
	case "function_call":
		call.Tool, call.Args = it.Name, openaiArgs(it.Arguments)
	case "custom_tool_call":
		var input string
		if err := decodeField(it.Input, &input, "payload.input"); err != nil && len(it.Input) > 0 {
			return err
		}
		call.Tool = it.Name
		call.Args, _ = json.Marshal(map[string]string{"input": input})
	case "local_shell_call":
		call.Tool, call.Args = "local_shell", rawArgs(it.Action)
	case "web_search_call", "file_search_call", "image_generation_call", "code_interpreter_call":
		// A hosted tool that ran on the server (web_search_call: the actions
		// search, open_page, find_in_page): named as the Responses reader
		// names it, its action the arguments.
		c, _, err := responsesCall(it, "payload")
		if err != nil {
			return err
		}
		call = c
	case "function_call_output", "custom_tool_call_output":
		r.afterCall = false
		text, err := codexOutput(it.Output)
		if err != nil {
			return err
		}
		s.result(it.CallID, text, codexFailed(text))
		return nil
	case "message":
		r.afterCall = r.afterCall && r.counted
		if it.Role == "user" && !r.userEvents {
			text, err := contentText(it.Content, "payload.content")
			if err != nil {
				return err
			}
			if !injected(text) {
				s.note("user messages")
				s.userTurn(text)
			}
			return nil
		}
		s.note(clip(orDash(it.Role)) + " messages")
		return nil
	case "reasoning":
		// Without token_count, a response is taken to start with its
		// reasoning; with them, reasoning also sits between the calls of
		// one response (around a hosted search).
		r.afterCall = r.afterCall && r.counted
		s.note("reasoning items")
		return nil
	default:
		if strings.HasSuffix(it.Type, "_call") || strings.HasSuffix(it.Type, "_call_output") {
			s.note("unrecognized " + clip(it.Type) + " items")
		} else {
			s.note(clip(orDash(it.Type)) + " items")
		}
		return nil
	}
	if call.Tool == "" {
		return errors.New("payload.name: missing or empty")
	}
	key := ""
	if r.afterCall {
		key = s.lastKey
	} else {
		key = strconv.Itoa(s.round + 1)
	}
	s.calls(key, 0, 0, call)
	r.afterCall, r.callsSince = true, true
	return nil
}

func (r *codexReader) finish() ([]Episode, map[string]int, error) {
	if len(r.s.ep.Calls) == 0 {
		return nil, r.s.seen, nil
	}
	ep := r.s.finish()
	ep.Project = r.project
	return []Episode{ep}, r.s.seen, nil
}

// codexOutput reads a function_call_output's output: a string (plain text,
// or JSON {"output", "metadata"} in older rollouts), or a list of content
// items.
func codexOutput(raw json.RawMessage) (string, error) {
	if jsonKind(raw) == "object" {
		var o struct {
			Content string `json:"content"`
		}
		if err := decodeField(raw, &o, "payload.output"); err != nil {
			return "", err
		}
		return o.Content, nil
	}
	return contentText(raw, "payload.output")
}

// patchFailed is how Codex's apply_patch tool starts the output of a
// patch that did not apply; such an output has no exit code.
const patchFailed = "apply_patch verification failed"

var exitCodeRe = regexp.MustCompile(`(?:Process exited with code|Exit code:)\s*(-?\d+)`)

// codexFailed reads the command's exit code from an output: "Exit code: N"
// or "Process exited with code N" in the text, or metadata.exit_code when
// the text is JSON {"output", "metadata"}. A non-zero code is a failure;
// an output without one (a tool that is not a command) is a success, unless
// it is apply_patch's report of a patch that did not apply.
func codexFailed(text string) bool {
	if strings.HasPrefix(strings.TrimSpace(text), patchFailed) {
		return true
	}
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") {
		var o struct {
			Metadata *struct {
				ExitCode *int `json:"exit_code"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(t), &o) == nil && o.Metadata != nil && o.Metadata.ExitCode != nil {
			return *o.Metadata.ExitCode != 0
		}
	}
	head := text
	if len(head) > 512 {
		head = head[:512]
	}
	if m := exitCodeRe.FindStringSubmatch(head); m != nil {
		return m[1] != "0"
	}
	return false
}
