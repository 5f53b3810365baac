package copilotguard_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stubRuntime stands in for the Copilot runtime at the SDK's transport: a
// TCP server speaking the SDK's JSON-RPC protocol (Content-Length framed)
// that the real copilot.Client connects to with a URIConnection. It plays
// the runtime's agent loop for each session.send: the user-prompt hook,
// then, for each tool call the scripted model asks for, the pre-tool hook,
// the tool's run unless the hook denied it, the post-tool hook, and at the
// end the assistant's message and session.idle.
type stubRuntime struct {
	t  *testing.T
	ln net.Listener

	// model decides the next step from what the last tool call gave it:
	// a tool call, or "" and the final answer.
	model func(last toolOutcome) (call *toolCall, answer string)
	// run is the runtime's tool: its result text, or an error text.
	run func(call toolCall) (result string, failure string)

	mu       sync.Mutex
	outcomes []toolOutcome // every tool call's outcome, in order
	runs     atomic.Int64
}

type toolCall struct {
	Tool string
	Args map[string]any
}

type toolOutcome struct {
	Call              toolCall
	Denied            bool
	Reason            string // the permission decision's reason
	Result            string // the tool's result, or its failure
	Failed            bool
	AdditionalContext string // from the post-tool hook
}

func newStubRuntime(t *testing.T) *stubRuntime {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &stubRuntime{t: t, ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go r.accept()
	return r
}

func (r *stubRuntime) addr() string { return r.ln.Addr().String() }

func (r *stubRuntime) outcomesSoFar() []toolOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]toolOutcome(nil), r.outcomes...)
}

func (r *stubRuntime) accept() {
	for {
		conn, err := r.ln.Accept()
		if err != nil {
			return
		}
		c := &stubConn{conn: conn, in: bufio.NewReader(conn), waiting: map[int]chan json.RawMessage{}}
		go c.serve(r)
	}
}

type stubConn struct {
	conn net.Conn
	in   *bufio.Reader

	wmu     sync.Mutex
	mu      sync.Mutex
	nextID  int
	waiting map[int]chan json.RawMessage
}

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func (c *stubConn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err = fmt.Fprintf(c.conn, "Content-Length: %d\r\n\r\n%s", len(b), b)
	return err
}

func (c *stubConn) read() (*message, error) {
	length := -1
	for {
		line, err := c.in.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			if length, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return nil, err
			}
		}
	}
	if length < 0 || length > 1<<20 {
		return nil, fmt.Errorf("bad Content-Length %d", length)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(c.in, body); err != nil {
		return nil, err
	}
	var m message
	return &m, json.Unmarshal(body, &m)
}

// call sends a request to the client and waits for its result.
func (c *stubConn) call(method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan json.RawMessage, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case res := <-ch:
		return res, nil
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("%s: no answer", method)
	}
}

func (c *stubConn) notify(method string, params any) {
	_ = c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

func (c *stubConn) serve(r *stubRuntime) {
	defer c.conn.Close()
	for {
		m, err := c.read()
		if err != nil {
			return
		}
		if m.Method == "" { // a response to one of our requests
			id, _ := strconv.Atoi(string(m.ID))
			c.mu.Lock()
			ch := c.waiting[id]
			delete(c.waiting, id)
			c.mu.Unlock()
			if ch != nil {
				res := m.Result
				if len(m.Error) > 0 {
					res = nil
				}
				ch <- res
			}
			continue
		}
		var result any = map[string]any{}
		var params map[string]any
		_ = json.Unmarshal(m.Params, &params)
		switch m.Method {
		case "connect":
			result = map[string]any{"ok": true, "protocolVersion": 3, "version": "stub"}
		case "ping":
			result = map[string]any{"message": "pong", "timestamp": 0, "protocolVersion": 3}
		case "session.create":
			id, _ := params["sessionId"].(string)
			if id == "" {
				id = "stub-session"
			}
			result = map[string]any{"sessionId": id, "workspacePath": ""}
		case "session.send":
			id, _ := params["sessionId"].(string)
			prompt, _ := params["prompt"].(string)
			result = map[string]any{"messageId": "msg-1"}
			go r.turn(c, id, prompt)
		}
		if len(m.ID) > 0 {
			_ = c.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
		}
	}
}

func (r *stubRuntime) hook(c *stubConn, sessionID, hookType string, input map[string]any) map[string]any {
	input["sessionId"] = sessionID
	input["timestamp"] = time.Now().UnixMilli()
	input["cwd"] = "/work"
	res, err := c.call("hooks.invoke", map[string]any{"sessionId": sessionID, "hookType": hookType, "input": input})
	if err != nil {
		r.t.Errorf("hooks.invoke %s: %v", hookType, err)
		return nil
	}
	var out struct {
		Output map[string]any `json:"output"`
	}
	_ = json.Unmarshal(res, &out)
	return out.Output
}

// turn plays the runtime's agent loop for one prompt.
func (r *stubRuntime) turn(c *stubConn, sessionID, prompt string) {
	r.hook(c, sessionID, "userPromptSubmitted", map[string]any{"prompt": prompt})
	var last toolOutcome
	answer := ""
	for step := 0; step < 50; step++ {
		call, text := r.model(last)
		if call == nil {
			answer = text
			break
		}
		out := toolOutcome{Call: *call}
		pre := r.hook(c, sessionID, "preToolUse", map[string]any{"toolName": call.Tool, "toolArgs": call.Args})
		if d, _ := pre["permissionDecision"].(string); d == "deny" {
			out.Denied = true
			out.Reason, _ = pre["permissionDecisionReason"].(string)
		} else {
			r.runs.Add(1)
			result, failure := r.run(*call)
			var post map[string]any
			if failure != "" {
				out.Result, out.Failed = failure, true
				post = r.hook(c, sessionID, "postToolUseFailure", map[string]any{
					"toolName": call.Tool, "toolArgs": call.Args, "error": failure})
			} else {
				out.Result = result
				post = r.hook(c, sessionID, "postToolUse", map[string]any{
					"toolName": call.Tool, "toolArgs": call.Args,
					"toolResult": map[string]any{"resultType": "success", "textResultForLlm": result}})
			}
			out.AdditionalContext, _ = post["additionalContext"].(string)
		}
		r.mu.Lock()
		r.outcomes = append(r.outcomes, out)
		r.mu.Unlock()
		last = out
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	c.notify("session.event", map[string]any{"sessionId": sessionID, "event": map[string]any{
		"id": fmt.Sprintf("ev-%d", time.Now().UnixNano()), "parentId": nil, "timestamp": now,
		"type": "assistant.message", "data": map[string]any{"content": answer, "messageId": "msg-2"}}})
	c.notify("session.event", map[string]any{"sessionId": sessionID, "event": map[string]any{
		"id": fmt.Sprintf("ev-%d", time.Now().UnixNano()), "parentId": nil, "timestamp": now,
		"type": "session.idle", "data": map[string]any{}}})
}
