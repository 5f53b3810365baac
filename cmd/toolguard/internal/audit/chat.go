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
	// Name is the function of a legacy "function" result message.
	Name *string `json:"name"`
	// FunctionCall is the legacy single call of an assistant message.
	FunctionCall *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function_call"`
	// Parts are the parts of a Vercel AI SDK UI message.
	Parts []vercelPart `json:"parts"`
}

// vercelPart is a part of a Vercel AI SDK UI message: tool parts are
// "tool-NAME" (static tools), "dynamic-tool" (with toolName) or, in AI SDK
// 4, "tool-invocation" (with toolInvocation).
type vercelPart struct {
	Type           string          `json:"type"`
	ToolCallID     string          `json:"toolCallId"`
	ToolName       string          `json:"toolName"`
	State          string          `json:"state"`
	Input          json.RawMessage `json:"input"`
	Output         json.RawMessage `json:"output"`
	ErrorText      string          `json:"errorText"`
	ToolInvocation *struct {
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		State      string          `json:"state"`
		Args       json.RawMessage `json:"args"`
		Result     json.RawMessage `json:"result"`
	} `json:"toolInvocation"`
}

// call reads a Vercel tool part as a call with its result; ok is false
// for a part that is not a tool part.
func (p *vercelPart) call() (Call, bool) {
	switch {
	case p.Type == "tool-invocation" && p.ToolInvocation != nil:
		ti := p.ToolInvocation
		c := Call{ID: ti.ToolCallID, Tool: ti.ToolName, Args: rawArgs(ti.Args)}
		if len(ti.Result) > 0 {
			c.Result = resultString(ti.Result)
		}
		return c, true
	case p.Type == "dynamic-tool" || strings.HasPrefix(p.Type, "tool-"):
		name := p.ToolName
		if p.Type != "dynamic-tool" {
			name = strings.TrimPrefix(p.Type, "tool-")
		}
		c := Call{ID: p.ToolCallID, Tool: name, Args: rawArgs(p.Input)}
		switch p.State {
		case "output-error":
			c.Result, c.Failed = p.ErrorText, true
		case "output-denied":
			c.Result, c.Failed = "denied", true
		default:
			c.Result = resultString(p.Output)
		}
		return c, true
	}
	return Call{}, false
}

// resultString is a result that is a JSON string's text, or other JSON as
// written.
func resultString(raw json.RawMessage) string {
	if jsonKind(raw) == "string" {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// block is an element of a content array: an OpenAI content part or an
// Anthropic content block.
type block struct {
	Type      string          `json:"type"`
	Text      *text           `json:"text"`
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

// call reads the tool call; p names it in errors.
func (tc *openaiToolCall) call(p string) (Call, error) {
	c := Call{ID: tc.ID}
	switch {
	case tc.Function != nil:
		c.Tool = tc.Function.Name
		c.Args = openaiArgs(tc.Function.Arguments)
	case tc.Custom != nil:
		c.Tool = tc.Custom.Name
		c.Args, _ = json.Marshal(map[string]string{"input": tc.Custom.Input})
	}
	if c.Tool == "" {
		return c, fmt.Errorf("%s.function.name: missing or empty", p)
	}
	return c, nil
}

// conversation builds an Episode from messages.
type conversation struct {
	format  Format
	ep      Episode
	pending map[string][]int // call id → calls without a result yet, oldest first
	round   int
	turn    int
	// legacy holds, per function name, the legacy function_call calls
	// without a result yet: a "function" message answers by name.
	legacy map[string][]int
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
	openai, anthropic, vercel := false, false, false
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
		if len(m.ToolCalls) > 0 || *m.Role == "tool" || m.FunctionCall != nil || *m.Role == "function" {
			openai = true
		}
		for _, b := range blocks[i] {
			if anthropicCallBlock(b.Type) || b.Type == "tool_result" {
				anthropic = true
			}
		}
		for j := range m.Parts {
			if _, ok := m.Parts[j].call(); ok {
				vercel = true
			}
		}
	}
	c := conversation{format: FormatMessages, pending: make(map[string][]int), legacy: make(map[string][]int)}
	switch {
	case openai && anthropic:
		return Episode{}, 0, errors.New("the messages mix OpenAI tool_calls and Anthropic tool_use blocks")
	case vercel && (openai || anthropic):
		return Episode{}, 0, errors.New("the messages mix Vercel AI SDK tool parts with provider tool calls")
	case vercel:
		c.format = FormatVercel
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
	case "system", "developer":
		// Instructions.
	case "function":
		// A legacy function result: it answers the oldest call of that
		// function without a result.
		name := ""
		if m.Name != nil {
			name = *m.Name
		}
		q := c.legacy[name]
		if len(q) == 0 {
			return fmt.Errorf("%s.name: a function result for %q, which no earlier function_call asked for (or which already has a result)", path, clip(name))
		}
		c.legacy[name] = q[1:]
		text, err := contentText(m.Content, path+".content")
		if err != nil {
			return err
		}
		call := &c.ep.Calls[q[0]]
		call.Result = text
		call.Failed = strings.HasPrefix(strings.TrimSpace(text), "Error")
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
		call, err := tc.call(p)
		if err != nil {
			return err
		}
		calls = append(calls, call)
	}
	legacyAt := -1
	if fc := m.FunctionCall; fc != nil {
		if fc.Name == "" {
			return fmt.Errorf("%s.function_call.name: missing or empty", path)
		}
		legacyAt = len(calls)
		calls = append(calls, Call{Tool: fc.Name, Args: openaiArgs(fc.Arguments)})
	}
	for j := range m.Parts {
		if m.Parts[j].Type == "step-start" && len(calls) > 0 {
			// A new step is a new model response: the calls so far are a round.
			c.book(calls, -1)
			calls = nil
		}
		if call, ok := m.Parts[j].call(); ok {
			if call.Tool == "" {
				return fmt.Errorf("%s.parts[%d]: a tool part without a tool name", path, j)
			}
			calls = append(calls, call)
		}
	}
	if c.format == FormatAnthropic {
		for j, b := range blocks {
			if !anthropicCallBlock(b.Type) {
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
	c.book(calls, legacyAt)
	if c.format != FormatAnthropic {
		return nil
	}
	// Server and MCP tools: their results are in the same message.
	for j := range blocks {
		b := &blocks[j]
		if b.ToolUseID == "" || b.Type == "tool_result" || !strings.HasSuffix(b.Type, "_result") {
			continue
		}
		text, failed, err := serverResult(b)
		if err != nil {
			return fmt.Errorf("%s.content[%d].%w", path, j, err)
		}
		if err := c.complete(b.ToolUseID, text, failed, fmt.Sprintf("%s.content[%d].tool_use_id", path, j)); err != nil {
			return err
		}
	}
	return nil
}

// book appends the calls of one model response as a round; legacyAt is
// the index of a legacy function_call among them (-1 for none).
func (c *conversation) book(calls []Call, legacyAt int) {
	c.round++
	if c.turn == 0 {
		c.turn = 1
	}
	for i, call := range calls {
		call.Round, call.Turn = c.round, c.turn
		switch {
		case i == legacyAt:
			c.legacy[call.Tool] = append(c.legacy[call.Tool], len(c.ep.Calls))
		case call.ID != "" && c.format != FormatVercel:
			c.pending[call.ID] = append(c.pending[call.ID], len(c.ep.Calls))
		}
		c.ep.Calls = append(c.ep.Calls, call)
	}
}

// anthropicCallBlock reports whether a content block type is a call:
// tool_use (client tools), server_tool_use (web search, code execution,
// ...) or mcp_tool_use (the MCP connector).
func anthropicCallBlock(t string) bool {
	return t == "tool_use" || t == "server_tool_use" || t == "mcp_tool_use"
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
		var s text
		err := decodeField(raw, &s, path)
		return string(s), err
	case "array":
		var bs []block
		if err := decodeField(raw, &bs, path); err != nil {
			return "", err
		}
		var parts []string
		for _, b := range bs {
			if b.Text != nil && (b.Type == "text" || b.Type == "") {
				parts = append(parts, string(*b.Text))
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
