package audit

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path"
	"strings"
)

// responsesRecord is one record of a Responses API file: a response object
// (its output items and usage), a request (its input items), or one item.
type responsesRecord struct {
	Object string          `json:"object"`
	ID     string          `json:"id"`
	Input  json.RawMessage `json:"input"`
	Output []responsesItem `json:"output"`
	Usage  *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	responsesItem
}

// responsesReader reads a file of Responses API records as one episode,
// in order. A request that repeats the conversation so far (without
// previous_response_id) repeats its items: an item whose call_id was
// already read, and a user message identical to one already read, are
// skipped.
type responsesReader struct {
	s         *session
	seenCall  map[string]bool // call ids of calls read
	seenOut   map[string]bool // call ids of outputs read
	seenUser  map[uint64]bool
	afterCall bool
}

func newResponsesReader(name string) *responsesReader {
	return &responsesReader{
		s:        newSession(strings.TrimSuffix(path.Base(name), path.Ext(name))),
		seenCall: map[string]bool{}, seenOut: map[string]bool{}, seenUser: map[uint64]bool{},
	}
}

func (r *responsesReader) record(line int, data []byte) error {
	r.s.line = line
	var rec responsesRecord
	if err := decode(data, &rec); err != nil {
		return describeErr(err)
	}
	switch {
	case rec.Object == "response":
		r.afterCall = false
		prompt, output := 0, 0
		if rec.Usage != nil {
			prompt, output = rec.Usage.InputTokens, rec.Usage.OutputTokens
		}
		var calls []Call
		for i := range rec.Output {
			it := &rec.Output[i]
			c, ok, err := responsesCall(it, fmt.Sprintf("output[%d]", i))
			if err != nil {
				return err
			}
			if ok && !r.seenCall[c.ID] {
				r.seenCall[c.ID] = c.ID != ""
				calls = append(calls, c)
			} else if !ok {
				r.s.note(clip(orDash(it.Type)) + " output items")
			}
		}
		if len(calls) == 0 {
			r.s.response(prompt)
			return nil
		}
		r.s.calls(rec.ID, prompt, output, calls...)
	case len(rec.Input) > 0 && rec.Type == "":
		if jsonKind(rec.Input) == "string" {
			r.s.note("user messages")
			text, _ := contentText(rec.Input, "")
			r.s.userTurn(text)
			return nil
		}
		var items []responsesItem
		if err := decodeField(rec.Input, &items, "input"); err != nil {
			return err
		}
		for i := range items {
			if err := r.item(&items[i], fmt.Sprintf("input[%d]", i)); err != nil {
				return err
			}
		}
	default:
		return r.item(&rec.responsesItem, "item")
	}
	return nil
}

// responsesCall reads a call item: function_call, custom_tool_call, or a
// built-in tool call that carries its own outcome (web_search_call,
// file_search_call, ...). ok is false for an item that is not a call.
func responsesCall(it *responsesItem, p string) (Call, bool, error) {
	c := Call{ID: it.CallID}
	switch it.Type {
	case "function_call":
		c.Tool, c.Args = it.Name, openaiArgs(it.Arguments)
	case "custom_tool_call":
		var input string
		if len(it.Input) > 0 {
			if err := decodeField(it.Input, &input, p+".input"); err != nil {
				return c, false, err
			}
		}
		c.Tool = it.Name
		c.Args, _ = json.Marshal(map[string]string{"input": input})
	case "mcp_call":
		c.ID, c.Tool, c.Args = it.ID, it.Name, openaiArgs(it.Arguments)
		text, _ := contentText(it.Output, p+".output")
		c.Result = text
	default:
		if !strings.HasSuffix(it.Type, "_call") {
			return c, false, nil
		}
		// A hosted tool (web_search_call, file_search_call, ...): the tool
		// is the item type, its action the arguments; it ran on the server.
		c.ID, c.Tool, c.Args = it.ID, strings.TrimSuffix(it.Type, "_call"), rawArgs(it.Action)
		c.Failed = it.Status == "failed"
	}
	if c.Tool == "" {
		return c, false, fmt.Errorf("%s.name: missing or empty", p)
	}
	return c, true, nil
}

func (r *responsesReader) item(it *responsesItem, p string) error {
	s := r.s
	switch it.Type {
	case "function_call_output", "custom_tool_call_output":
		r.afterCall = false
		if r.seenOut[it.CallID] {
			return nil
		}
		r.seenOut[it.CallID] = true
		text, err := codexOutput(it.Output)
		if err != nil {
			return err
		}
		s.result(it.CallID, text, false)
		return nil
	case "message", "":
		r.afterCall = false
		if it.Role != "user" {
			s.note(clip(orDash(it.Role)) + " messages")
			return nil
		}
		h := fnv.New64a()
		h.Write(it.Content)
		if k := h.Sum64(); !r.seenUser[k] {
			r.seenUser[k] = true
			s.note("user messages")
			text, _ := contentText(it.Content, "")
			s.userTurn(text)
		}
		return nil
	}
	c, ok, err := responsesCall(it, p)
	if err != nil {
		return err
	}
	if !ok {
		s.note(clip(it.Type) + " items")
		return nil
	}
	if c.ID != "" && r.seenCall[c.ID] {
		return nil
	}
	r.seenCall[c.ID] = c.ID != ""
	key := fmt.Sprint(s.round + 1)
	if r.afterCall {
		key = s.lastKey
	}
	s.calls(key, 0, 0, c)
	r.afterCall = true
	return nil
}

func (r *responsesReader) finish() ([]Episode, map[string]int, error) {
	if len(r.s.ep.Calls) == 0 {
		return nil, r.s.seen, nil
	}
	return []Episode{r.s.finish()}, r.s.seen, nil
}

// completionRecord is an OpenAI chat.completion response object.
type completionRecord struct {
	Object  string `json:"object"`
	ID      string `json:"id"`
	Choices []struct {
		Message *chatMessage `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// completionReader reads a file of chat.completion responses as one
// episode: each response's tool calls are a round. The results are not in
// the responses (they go in the next request), so the calls are replayed
// without them.
type completionReader struct{ s *session }

func newCompletionReader(name string) *completionReader {
	return &completionReader{s: newSession(strings.TrimSuffix(path.Base(name), path.Ext(name)))}
}

func (r *completionReader) record(_ int, data []byte) error {
	var rec completionRecord
	if err := decode(data, &rec); err != nil {
		return describeErr(err)
	}
	if rec.Object != "chat.completion" {
		r.s.note("unrecognized " + clip(orDash(rec.Object)) + " objects")
		return nil
	}
	prompt, output := 0, 0
	if rec.Usage != nil {
		prompt, output = rec.Usage.PromptTokens, rec.Usage.CompletionTokens
	}
	var calls []Call
	for i, ch := range rec.Choices {
		if ch.Message == nil {
			continue
		}
		// Only the first choice continues the conversation.
		if i > 0 {
			break
		}
		for j, raw := range ch.Message.ToolCalls {
			var tc openaiToolCall
			p := fmt.Sprintf("choices[%d].message.tool_calls[%d]", i, j)
			if err := decodeField(raw, &tc, p); err != nil {
				return err
			}
			c, err := tc.call(p)
			if err != nil {
				return err
			}
			calls = append(calls, c)
		}
		if fc := ch.Message.FunctionCall; fc != nil {
			calls = append(calls, Call{Tool: fc.Name, Args: openaiArgs(fc.Arguments)})
		}
	}
	if len(calls) == 0 {
		r.s.note("responses without tool calls")
		r.s.response(prompt)
		return nil
	}
	r.s.calls(rec.ID, prompt, output, calls...)
	return nil
}

func (r *completionReader) finish() ([]Episode, map[string]int, error) {
	if len(r.s.ep.Calls) == 0 {
		return nil, r.s.seen, nil
	}
	return []Episode{r.s.finish()}, r.s.seen, nil
}
