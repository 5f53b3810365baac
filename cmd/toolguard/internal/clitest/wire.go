package clitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// anthropic answers POST /v1/messages (Claude Code).
func (s *Server) anthropic(w http.ResponseWriter, body []byte) {
	var req struct {
		Model    string             `json:"model"`
		Stream   bool               `json:"stream"`
		Tools    []any              `json:"tools"`
		Messages []anthropicMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	step, n := Step{Text: sideText}, 0
	if len(req.Tools) > 0 {
		step, n = s.next(anthropicHistory(req.Messages))
	}
	model := req.Model
	stop := "end_turn"
	var content []map[string]any
	if step.Text != "" || len(step.Calls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": step.Text})
	}
	for i, c := range step.Calls {
		stop = "tool_use"
		content = append(content, map[string]any{
			"type": "tool_use", "id": "toolu_" + callID(n, i), "name": c.Name, "input": c.Args,
		})
	}
	id := fmt.Sprintf("msg_%d", time.Now().UnixNano())
	usage := map[string]any{"input_tokens": 100, "output_tokens": 10}
	if !req.Stream {
		writeJSON(w, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	e := newSSE(w)
	e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1},
	}})
	for i, c := range content {
		if c["type"] == "text" {
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		} else {
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			args, _ := c["input"].(map[string]any)
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": argsJSON(args)}})
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	e.send("message_stop", map[string]any{"type": "message_stop"})
}

// responses answers POST /v1/responses (Codex).
func (s *Server) responses(w http.ResponseWriter, body []byte) {
	var req struct {
		Model string           `json:"model"`
		Tools []any            `json:"tools"`
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	step, n := Step{Text: sideText}, 0
	if len(req.Tools) > 0 {
		step, n = s.next(responsesHistory(req.Input))
	}
	respID := fmt.Sprintf("resp_%d", time.Now().UnixNano())
	var output []map[string]any
	if step.Text != "" || len(step.Calls) == 0 {
		output = append(output, map[string]any{
			"type": "message", "id": "msg_" + respID, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": step.Text, "annotations": []any{}}},
		})
	}
	for i, c := range step.Calls {
		output = append(output, map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", respID, i), "call_id": callID(n, i),
			"name": c.Name, "arguments": argsJSON(c.Args), "status": "completed",
		})
	}
	e := newSSE(w)
	resp := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(),
		"status": "in_progress", "model": req.Model, "output": []any{}}
	e.send("response.created", map[string]any{"type": "response.created", "response": resp})
	for i, it := range output {
		e.send("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": it})
		if it["type"] == "message" {
			e.send("response.output_text.delta", map[string]any{"type": "response.output_text.delta",
				"item_id": it["id"], "output_index": i, "content_index": 0, "delta": step.Text})
		}
		e.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	done := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(),
		"status": "completed", "model": req.Model, "output": output,
		"usage": map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110}}
	e.send("response.completed", map[string]any{"type": "response.completed", "response": done})
}

// chat answers POST /v1/chat/completions (opencode, Copilot CLI, Cline,
// mcphost).
func (s *Server) chat(w http.ResponseWriter, body []byte) {
	var req struct {
		Model    string           `json:"model"`
		Stream   bool             `json:"stream"`
		Tools    []any            `json:"tools"`
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	step, n := Step{Text: sideText}, 0
	if len(req.Tools) > 0 {
		step, n = s.next(chatHistory(req.Messages))
	}
	id := fmt.Sprintf("chatcmpl-%d", time.Now().UnixNano())
	created := time.Now().Unix()
	finish := "stop"
	var calls []map[string]any
	for i, c := range step.Calls {
		finish = "tool_calls"
		calls = append(calls, map[string]any{"index": i, "id": callID(n, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": argsJSON(c.Args)}})
	}
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": step.Text}
		if len(calls) > 0 {
			for _, c := range calls {
				delete(c, "index")
			}
			msg["tool_calls"] = calls
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	e := newSSE(w)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	e.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if step.Text != "" {
		e.send("", chunk(map[string]any{"content": step.Text}, nil))
	}
	for _, c := range calls {
		e.send("", chunk(map[string]any{"tool_calls": []any{c}}, nil))
	}
	e.send("", chunk(map[string]any{}, finish))
	e.send("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
		"choices": []any{}, "usage": usage})
	e.raw("data: [DONE]\n\n")
}

// gemini answers :streamGenerateContent and :generateContent (Gemini CLI).
func (s *Server) gemini(w http.ResponseWriter, body []byte, stream bool) {
	var req struct {
		Tools            []any `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType string `json:"responseMimeType"`
		} `json:"generationConfig"`
		Contents []geminiContent `json:"contents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	step, n := Step{Text: sideText}, 0
	if req.GenerationConfig.ResponseMimeType == "application/json" {
		// Side requests in JSON mode (the next-speaker check, routing):
		// the user speaks next, the simple model is fine.
		step.Text = `{"reasoning":"scripted","next_speaker":"user","model_choice":"flash","complexity_reasoning":"scripted","complexity_score":1}`
	}
	if len(req.Tools) > 0 && stream {
		step, n = s.next(geminiHistory(req.Contents))
	}
	var parts []any
	if step.Text != "" || len(step.Calls) == 0 {
		parts = append(parts, map[string]any{"text": step.Text})
	}
	for i, c := range step.Calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"id": callID(n, i), "name": c.Name, "args": args}})
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  "gemini-2.5-flash",
	}
	if !stream {
		writeJSON(w, resp)
		return
	}
	newSSE(w).send("", resp)
}

type anthropicMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type geminiContent struct {
	Role  string           `json:"role"`
	Parts []map[string]any `json:"parts"`
}

// anthropicHistory reads a /v1/messages conversation.
func anthropicHistory(msgs []anthropicMessage) []historyItem {
	var history []historyItem
	for _, m := range msgs {
		blocks, isList := m.Content.([]any)
		if !isList {
			history = append(history, historyItem{model: m.Role == "assistant", text: textOf(m.Content)})
			continue
		}
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			typ, _ := bm["type"].(string)
			switch {
			case m.Role == "assistant" && typ == "tool_use":
				id, _ := bm["id"].(string)
				name, _ := bm["name"].(string)
				history = append(history, historyItem{model: true, callID: id, name: name})
			case m.Role == "assistant":
				history = append(history, historyItem{model: true, text: textOf(bm)})
			case typ == "tool_result":
				id, _ := bm["tool_use_id"].(string)
				history = append(history, historyItem{result: true, callID: id, text: textOf(bm["content"])})
			default:
				history = append(history, historyItem{text: textOf(bm)})
			}
		}
	}
	return history
}

// responsesHistory reads a /v1/responses input.
func responsesHistory(items []map[string]any) []historyItem {
	var history []historyItem
	for _, it := range items {
		typ, _ := it["type"].(string)
		role, _ := it["role"].(string)
		switch {
		case typ == "function_call" || typ == "custom_tool_call" || typ == "local_shell_call":
			id, _ := it["call_id"].(string)
			name, _ := it["name"].(string)
			history = append(history, historyItem{model: true, callID: id, name: name})
		case typ == "function_call_output" || typ == "custom_tool_call_output" || typ == "local_shell_call_output":
			id, _ := it["call_id"].(string)
			history = append(history, historyItem{result: true, callID: id, text: textOf(it["output"])})
		case typ == "reasoning" || (typ == "message" || typ == "") && role == "assistant":
			history = append(history, historyItem{model: true, text: textOf(it["content"])})
		default:
			history = append(history, historyItem{text: textOf(it["content"])})
		}
	}
	return history
}

// chatHistory reads a /v1/chat/completions conversation.
func chatHistory(msgs []map[string]any) []historyItem {
	var history []historyItem
	for _, m := range msgs {
		role, _ := m["role"].(string)
		switch role {
		case "assistant":
			calls, _ := m["tool_calls"].([]any)
			if len(calls) == 0 {
				history = append(history, historyItem{model: true, text: textOf(m["content"])})
			}
			for _, c := range calls {
				cm, _ := c.(map[string]any)
				id, _ := cm["id"].(string)
				fn, _ := cm["function"].(map[string]any)
				name, _ := fn["name"].(string)
				history = append(history, historyItem{model: true, callID: id, name: name})
			}
		case "tool":
			id, _ := m["tool_call_id"].(string)
			history = append(history, historyItem{result: true, callID: id, text: textOf(m["content"])})
		default:
			history = append(history, historyItem{text: textOf(m["content"])})
		}
	}
	return history
}

// geminiHistory reads a Gemini conversation (contents).
func geminiHistory(contents []geminiContent) []historyItem {
	var history []historyItem
	for _, c := range contents {
		for _, p := range c.Parts {
			switch {
			case p["functionCall"] != nil:
				fc, _ := p["functionCall"].(map[string]any)
				id, _ := fc["id"].(string)
				name, _ := fc["name"].(string)
				history = append(history, historyItem{model: true, callID: id, name: name})
			case p["functionResponse"] != nil:
				fr, _ := p["functionResponse"].(map[string]any)
				id, _ := fr["id"].(string)
				name, _ := fr["name"].(string)
				history = append(history, historyItem{result: true, callID: id, name: name, text: textOf(fr["response"])})
			case c.Role == "model":
				history = append(history, historyItem{model: true, text: textOf(p)})
			default:
				history = append(history, historyItem{text: textOf(p)})
			}
		}
	}
	return history
}

// joinResults is every result's text, for failure messages.
func joinResults(rs []Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  step %d call %d (%s): %q\n", r.Step, r.Index, r.Name, r.Text)
	}
	return b.String()
}
