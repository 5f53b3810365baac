package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// chatMessage holds the fields of an OpenAI or Anthropic message that the
// replay needs.
type chatMessage struct {
	Role       *string           `json:"role"`
	Content    json.RawMessage   `json:"content"`
	ToolCalls  []json.RawMessage `json:"tool_calls"`
	ToolCallID *string           `json:"tool_call_id"`
}

// block is an element of a content array: an OpenAI content part or an
// Anthropic content block.
type block struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
}

// openaiToolCall is an element of an assistant message's tool_calls.
type openaiToolCall struct {
	ID       string `json:"id"`
	Function *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
	Custom *struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom"`
}

// conversation builds an Episode from messages.
type conversation struct {
	format  Format
	ep      Episode
	pending map[string][]int // call id → calls without a result yet, oldest first
	round   int
	turn    int
}

// parseConversation reads a list of OpenAI or Anthropic messages. The
// provider is told by the messages themselves: tool_calls and "tool"
// messages are OpenAI's, tool_use and tool_result blocks Anthropic's.
func parseConversation(raw json.RawMessage, path string) (Episode, Format, error) {
	var raws []json.RawMessage
	if err := decodeField(raw, &raws, path); err != nil {
		return Episode{}, 0, err
	}
	msgs := make([]chatMessage, len(raws))
	blocks := make([][]block, len(raws))
	openai, anthropic := false, false
	for i, r := range raws {
		p := fmt.Sprintf("%s[%d]", path, i)
		if err := decodeField(r, &msgs[i], p); err != nil {
			return Episode{}, 0, err
		}
		m := &msgs[i]
		if m.Role == nil {
			return Episode{}, 0, fmt.Errorf("%s.role: missing", p)
		}
		if jsonKind(m.Content) == "array" {
			if err := decodeField(m.Content, &blocks[i], p+".content"); err != nil {
				return Episode{}, 0, err
			}
		}
		if len(m.ToolCalls) > 0 || *m.Role == "tool" {
			openai = true
		}
		for _, b := range blocks[i] {
			if b.Type == "tool_use" || b.Type == "tool_result" {
				anthropic = true
			}
		}
	}
	c := conversation{format: FormatMessages, pending: make(map[string][]int)}
	switch {
	case openai && anthropic:
		return Episode{}, 0, errors.New("the messages mix OpenAI tool_calls and Anthropic tool_use blocks")
	case openai:
		c.format = FormatOpenAI
	case anthropic:
		c.format = FormatAnthropic
	}
	for i := range msgs {
		p := fmt.Sprintf("%s[%d]", path, i)
		if err := c.message(&msgs[i], blocks[i], p); err != nil {
			return Episode{}, 0, err
		}
	}
	return c.ep, c.format, nil
}

// message books one message: a user message that does more than carry
// tool results starts a turn, an assistant message with calls is a round,
// a tool result completes the call with its id.
func (c *conversation) message(m *chatMessage, blocks []block, path string) error {
	switch role := *m.Role; role {
	case "system", "developer", "function":
		// Instructions, and legacy function results that carry no call id.
	case "user":
		newTurn := c.format != FormatAnthropic || blocks == nil
		for j, b := range blocks {
			if b.Type != "tool_result" {
				newTurn = true
				continue
			}
			bp := fmt.Sprintf("%s.content[%d]", path, j)
			text, err := contentText(b.Content, bp+".content")
			if err != nil {
				return err
			}
			failed := b.IsError != nil && *b.IsError
			if err := c.complete(b.ToolUseID, text, failed, bp+".tool_use_id"); err != nil {
				return err
			}
		}
		if newTurn {
			c.turn++
		}
	case "assistant":
		return c.assistant(m, blocks, path)
	case "tool":
		if m.ToolCallID == nil {
			return fmt.Errorf("%s: a tool message without tool_call_id", path)
		}
		text, err := contentText(m.Content, path+".content")
		if err != nil {
			return err
		}
		failed := strings.HasPrefix(strings.TrimSpace(text), "Error")
		return c.complete(*m.ToolCallID, text, failed, path+".tool_call_id")
	default:
		return fmt.Errorf("%s.role: unknown role %q", path, clip(role))
	}
	return nil
}

func (c *conversation) assistant(m *chatMessage, blocks []block, path string) error {
	var calls []Call
	for j, raw := range m.ToolCalls {
		p := fmt.Sprintf("%s.tool_calls[%d]", path, j)
		var tc openaiToolCall
		if err := decodeField(raw, &tc, p); err != nil {
			return err
		}
		call := Call{ID: tc.ID}
		switch {
		case tc.Function != nil:
			call.Tool = tc.Function.Name
			call.Args = openaiArgs(tc.Function.Arguments)
		case tc.Custom != nil:
			call.Tool = tc.Custom.Name
			call.Args, _ = json.Marshal(map[string]string{"input": tc.Custom.Input})
		}
		if call.Tool == "" {
			return fmt.Errorf("%s.function.name: missing or empty", p)
		}
		calls = append(calls, call)
	}
	if c.format == FormatAnthropic {
		for j, b := range blocks {
			if b.Type != "tool_use" {
				continue
			}
			if b.Name == "" {
				return fmt.Errorf("%s.content[%d].name: missing or empty", path, j)
			}
			call := Call{ID: b.ID, Tool: b.Name}
			if len(b.Input) > 0 && string(b.Input) != "null" {
				call.Args = b.Input
			}
			calls = append(calls, call)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	c.round++
	if c.turn == 0 {
		c.turn = 1
	}
	for _, call := range calls {
		call.Round, call.Turn = c.round, c.turn
		if call.ID != "" {
			c.pending[call.ID] = append(c.pending[call.ID], len(c.ep.Calls))
		}
		c.ep.Calls = append(c.ep.Calls, call)
	}
	return nil
}

// complete gives the oldest call with this id that has no result yet its
// result.
func (c *conversation) complete(id, text string, failed bool, path string) error {
	q := c.pending[id]
	if id == "" || len(q) == 0 {
		return fmt.Errorf("%s: a tool result for call id %q, which no earlier assistant message asked for (or which already has a result)", path, clip(id))
	}
	c.pending[id] = q[1:]
	call := &c.ep.Calls[q[0]]
	call.Result, call.Failed = text, failed
	return nil
}

// openaiArgs reads an OpenAI arguments field: a string holding JSON (the
// API's shape), or JSON itself (some exports decode it). A string that is
// not JSON becomes {"_raw": text}, as in the bundled traces.
func openaiArgs(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil
	case json.Valid([]byte(s)):
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(map[string]string{"_raw": s})
	return b
}

// contentText reads message or tool-result content: a string, null, or a
// list of blocks whose text blocks are joined with newlines.
func contentText(raw json.RawMessage, path string) (string, error) {
	switch jsonKind(raw) {
	case "nothing", "null":
		return "", nil
	case "string":
		var s string
		err := decodeField(raw, &s, path)
		return s, err
	case "array":
		var bs []block
		if err := decodeField(raw, &bs, path); err != nil {
			return "", err
		}
		var parts []string
		for _, b := range bs {
			if b.Text != nil && (b.Type == "text" || b.Type == "") {
				parts = append(parts, *b.Text)
			}
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("%s: want a string or a list of content blocks, got %s", path, jsonKind(raw))
}

// conversationMeta reads the optional episode id and label of a
// conversation object: "episode" or "id", and "label".
func conversationMeta(keys map[string]json.RawMessage, ep *Episode) error {
	for _, k := range []string{"episode", "id"} {
		name, err := idString(keys[k], k)
		if err != nil {
			return err
		}
		if name != "" {
			ep.Name = name
			break
		}
	}
	label, err := optString(keys, "label")
	ep.Label = label
	return err
}

// clip shortens an identifier quoted in an error.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
