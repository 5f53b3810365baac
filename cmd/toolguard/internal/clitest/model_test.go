package clitest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url string, body any) string {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s %s", url, resp.Status, out)
	}
	return string(out)
}

// TestServerScript: the step answered is the number of model responses in
// the request's history, so a retried request gets the same step; the
// results in the history are recorded once, by call id, or by position
// where the protocol has none (Gemini); a request without tools is a side
// request.
func TestServerScript(t *testing.T) {
	t.Parallel()
	call := Call{Name: "sh", Args: map[string]any{"command": "echo hi"}}
	s := NewServer(t, []Step{{Calls: []Call{call, call}}, {Text: "done"}}, Step{Text: "over"})
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "sh"}}}

	first := post(t, s.URL+"/v1/chat/completions", map[string]any{"tools": tools,
		"messages": []any{map[string]any{"role": "user", "content": "go"}}})
	if !strings.Contains(first, `"id":"call_s0i0"`) || !strings.Contains(first, `"id":"call_s0i1"`) {
		t.Fatalf("step 0 should make two calls: %s", first)
	}
	history := map[string]any{"tools": tools, "messages": []any{
		map[string]any{"role": "user", "content": "go"},
		map[string]any{"role": "assistant", "tool_calls": []any{
			map[string]any{"id": "call_s0i0", "type": "function", "function": map[string]any{"name": "sh", "arguments": "{}"}},
			map[string]any{"id": "call_s0i1", "type": "function", "function": map[string]any{"name": "sh", "arguments": "{}"}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_s0i0", "content": "hi"},
		map[string]any{"role": "tool", "tool_call_id": "call_s0i1", "content": []any{map[string]any{"type": "text", "text": "refused"}}},
	}}
	for range 2 { // a retry gets the same step
		if out := post(t, s.URL+"/v1/chat/completions", history); !strings.Contains(out, `"content":"done"`) {
			t.Fatalf("step 1 should answer: %s", out)
		}
	}
	if got := s.Results(); len(got) != 2 || got[0].Text != "hi" || got[1].Text != "refused" {
		t.Errorf("results %+v", got)
	}
	if out := post(t, s.URL+"/v1/chat/completions", map[string]any{"messages": []any{}}); !strings.Contains(out, sideText) {
		t.Errorf("a side request: %s", out)
	}
	if s.Overrun() != 0 || !s.Served(1) || s.Served(2) {
		t.Errorf("overrun %d, served 1 %v, 2 %v", s.Overrun(), s.Served(1), s.Served(2))
	}

	g := NewServer(t, []Step{{Calls: []Call{call, call}}, {Text: "done"}}, Step{Text: "over"})
	out := post(t, g.URL+"/v1beta/models/m:streamGenerateContent?alt=sse", map[string]any{
		"tools": []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "sh"}}}},
		"contents": []any{
			map[string]any{"role": "user", "parts": []any{map[string]any{"text": "go"}}},
			map[string]any{"role": "model", "parts": []any{
				map[string]any{"functionCall": map[string]any{"name": "sh", "args": map[string]any{}}},
				map[string]any{"functionCall": map[string]any{"name": "sh", "args": map[string]any{}}},
			}},
			map[string]any{"role": "user", "parts": []any{
				map[string]any{"functionResponse": map[string]any{"name": "sh", "response": map[string]any{"output": "a"}}},
				map[string]any{"functionResponse": map[string]any{"name": "sh", "response": map[string]any{"error": "b"}}},
			}},
		}})
	if !strings.HasPrefix(out, "data: ") || !strings.Contains(out, `"text":"done"`) {
		t.Fatalf("gemini step 1: %s", out)
	}
	a, okA := g.ResultOf(0, 0)
	b, okB := g.ResultOf(0, 1)
	if !okA || !okB || !strings.Contains(a, `"a"`) || !strings.Contains(b, `"b"`) {
		t.Errorf("gemini results by position: %q %q", a, b)
	}
}
