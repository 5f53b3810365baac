package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/mcpguard"
)

// JSON-RPC error codes the proxy answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInternalError  = -32603
)

// message is the part of a JSON-RPC message the proxy reads.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// isRequest reports whether m is a request (it has an id and a method).
func (m *message) isRequest() bool { return m.Method != "" && hasID(m.ID) }

// isResponse reports whether m is a response (an id and no method).
func (m *message) isResponse() bool { return m.Method == "" && hasID(m.ID) }

func hasID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// idKey is the map key of a JSON-RPC id: its compact JSON.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// callParams are the params of tools/call the proxy reads.
type callParams struct {
	Name           string                     `json:"name"`
	Arguments      json.RawMessage            `json:"arguments"`
	Meta           map[string]json.RawMessage `json:"_meta"`
	InputResponses json.RawMessage            `json:"inputResponses"`
	RequestState   string                     `json:"requestState"`
}

// pendingCall is a tools/call sent to the server and not yet answered.
type pendingCall struct {
	call   toolguard.Call
	before toolguard.Phase
}

// proxy is the state of one proxy process.
type proxy struct {
	policy toolguard.Policy
	max    int
	stderr io.Writer

	outMu sync.Mutex
	out   io.Writer // to the client

	mu       sync.Mutex
	tracker  *toolguard.Tracker     // made at the first tools/call
	readOnly []string               // tools whose tools/list annotations say readOnlyHint
	version  string                 // the protocol revision of initialize
	inflight map[string]string      // client requests sent to the server: id → method
	calls    map[string]pendingCall // tools/call among them
	lists    map[string]bool        // tools/list among them
	late     bool                   // read-only hints came after the tracker was made
	// clientGone is set when the client closed its input: requests still
	// waiting are not answered.
	clientGone bool
}

func newProxy(p toolguard.Policy, max int, stdout, stderr io.Writer) *proxy {
	return &proxy{
		policy:   p,
		max:      max,
		stderr:   stderr,
		out:      stdout,
		inflight: make(map[string]string),
		calls:    make(map[string]pendingCall),
		lists:    make(map[string]bool),
	}
}

func (px *proxy) logf(format string, a ...any) {
	fmt.Fprintf(px.stderr, "toolguard mcp-proxy: "+format+"\n", a...)
}

// run starts the server and forwards until the client or the server ends.
func (px *proxy) run(ctx context.Context, cmd *exec.Cmd, stdin io.Reader, sigs <-chan os.Signal, grace time.Duration) int {
	toServer, err := cmd.StdinPipe()
	if err != nil {
		px.logf("%v", err)
		return ExitServer
	}
	fromServer, err := cmd.StdoutPipe()
	if err != nil {
		px.logf("%v", err)
		return ExitServer
	}
	if err := cmd.Start(); err != nil {
		px.logf("cannot start the MCP server: %v", err)
		return ExitServer
	}

	serverDone := make(chan struct{})
	go func() {
		defer close(serverDone)
		px.fromServer(ctx, fromServer)
	}()
	clientDone := make(chan struct{})
	go func() {
		defer close(clientDone)
		px.fromClient(ctx, stdin, toServer)
	}()

	clientGone := true
	select {
	case <-clientDone:
	case <-sigs:
	case <-serverDone:
		clientGone = false
	}
	if clientGone {
		// No one is left to answer: the calls still waiting are not.
		px.mu.Lock()
		px.clientGone = true
		px.mu.Unlock()
	}
	// Closing its input asks a stdio server to exit; it gets grace to do
	// so (and to write what it still has to say) before it is terminated,
	// then killed.
	_ = toServer.Close()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-serverDone:
	case <-timer.C:
		px.logf("the MCP server did not exit within %v: terminating it", grace)
		terminate(cmd)
		select {
		case <-serverDone:
		case <-time.After(2 * time.Second):
			px.logf("the MCP server did not end on SIGTERM: killing it")
			kill(cmd)
		}
	}
	werr := cmd.Wait()
	if clientGone {
		return ExitOK
	}
	if werr != nil {
		px.logf("the MCP server exited: %v", werr)
	} else {
		px.logf("the MCP server closed its output")
	}
	return ExitServer
}

// readLine reads one newline-terminated message of at most max bytes.
// A longer one is read to its end and dropped: tooLong is true.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > max+1 { // +1: the newline
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// fromClient forwards the client's messages to the server, answering
// refused tools/call requests itself.
func (px *proxy) fromClient(ctx context.Context, stdin io.Reader, toServer io.Writer) {
	r := bufio.NewReaderSize(stdin, 64<<10)
	w := bufio.NewWriter(toServer)
	for {
		line, tooLong, err := readLine(r, px.max)
		if tooLong {
			px.logf("dropped a client message larger than %d bytes", px.max)
			px.writeError(nil, codeInvalidRequest, fmt.Sprintf("toolguard mcp-proxy: message larger than %d bytes (--max-message); it was not sent to the server", px.max))
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if forward := px.clientMessage(ctx, trimmed); forward != nil {
				_, werr := w.Write(append(forward, '\n'))
				if werr == nil {
					werr = w.Flush()
				}
				if werr != nil {
					px.logf("writing to the server: %v", werr)
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				px.logf("reading from the client: %v", err)
			}
			return
		}
	}
}

// clientMessage handles one message from the client and returns what to
// send to the server: the message, or nil when the proxy answered it.
func (px *proxy) clientMessage(ctx context.Context, line []byte) []byte {
	if !json.Valid(line) {
		px.writeError(nil, codeParseError, "toolguard mcp-proxy: parse error: the message is not valid JSON")
		return nil
	}
	if line[0] != '{' {
		return line // a batch or other JSON: the server answers it
	}
	var m message
	if json.Unmarshal(line, &m) != nil {
		return line
	}
	switch {
	case m.isRequest() && m.Method == "tools/call":
		return px.toolCall(ctx, &m, line)
	case m.isRequest():
		px.mu.Lock()
		key := idKey(m.ID)
		px.inflight[key] = m.Method
		switch m.Method {
		case "tools/list":
			px.lists[key] = true
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(m.Params, &p) == nil && px.version == "" {
				px.version = p.ProtocolVersion
			}
		}
		px.mu.Unlock()
	case m.Method == "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil && hasID(p.RequestID) {
			px.cancelled(ctx, idKey(p.RequestID))
		}
	}
	return line
}

// toolCall checks a tools/call: a refused call is answered here, an
// allowed one is forwarded and recorded when its response comes.
func (px *proxy) toolCall(ctx context.Context, m *message, line []byte) []byte {
	var p callParams
	if json.Unmarshal(m.Params, &p) != nil || p.Name == "" {
		return line // the server answers the malformed call
	}
	c := toolguard.Call{Tool: p.Name, Args: p.Arguments}
	key := idKey(m.ID)
	// A retry that carries the answers to an input-required result
	// continues a call that was already allowed: it is not checked again.
	retry := len(p.InputResponses) > 0 || p.RequestState != ""

	px.mu.Lock()
	t := px.trackerLocked()
	stateless := mcpguard.IsStateless(px.version)
	px.mu.Unlock()
	var v string
	if json.Unmarshal(p.Meta[mcpguard.MetaProtocolVersion], &v) == nil && v != "" {
		stateless = mcpguard.IsStateless(v)
	}

	var before toolguard.Phase
	if retry {
		before = t.Guidance().Phase
	} else {
		d := t.ShouldSkipContext(ctx, c)
		if d.Skip() {
			px.writeResult(m.ID, skipped(d, stateless))
			return nil
		}
		before = d.Phase
	}
	px.mu.Lock()
	px.inflight[key] = m.Method
	px.calls[key] = pendingCall{call: c, before: before}
	px.mu.Unlock()
	return line
}

// trackerLocked returns the Tracker, made at the first call with the
// read-only hints learned so far.
func (px *proxy) trackerLocked() *toolguard.Tracker {
	if px.tracker == nil {
		px.tracker = toolguard.NewTracker(mcpguard.ReadOnly(px.policy, px.readOnly...))
	}
	return px.tracker
}

// skipped is the result of a refused call.
func skipped(d toolguard.Decision, stateless bool) map[string]any {
	res := map[string]any{
		"content": []any{map[string]any{"type": "text", "text": mcpguard.SkipText(d)}},
		"isError": true,
		"_meta":   mcpguard.Meta(d),
	}
	if stateless {
		res["resultType"] = "complete"
	}
	return res
}

// cancelled records a tools/call the client gave up on as failed.
func (px *proxy) cancelled(ctx context.Context, key string) {
	px.mu.Lock()
	pc, ok := px.calls[key]
	delete(px.calls, key)
	delete(px.inflight, key) // a cancelled request gets no response
	t := px.tracker
	px.mu.Unlock()
	if ok {
		t.RecordContext(ctx, pc.call, toolguard.Outcome{Err: errors.New("toolguard mcp-proxy: the client cancelled the call")})
	}
}

// fromServer forwards the server's messages to the client, recording the
// responses to tools/call and learning from tools/list. When the server's
// output ends, every request still waiting gets an error.
func (px *proxy) fromServer(ctx context.Context, fromServer io.Reader) {
	r := bufio.NewReaderSize(fromServer, 64<<10)
	for {
		line, tooLong, err := readLine(r, px.max)
		if tooLong {
			px.logf("dropped a server message larger than %d bytes (--max-message)", px.max)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			px.writeLine(px.serverMessage(ctx, trimmed))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				px.logf("reading from the MCP server: %v", err)
			}
			break
		}
	}
	px.mu.Lock()
	inflight := px.inflight
	calls := px.calls
	px.inflight, px.calls = make(map[string]string), make(map[string]pendingCall)
	t := px.tracker
	gone := px.clientGone
	px.mu.Unlock()
	for key, method := range inflight {
		if pc, ok := calls[key]; ok {
			t.RecordContext(ctx, pc.call, toolguard.Outcome{Err: errors.New("toolguard mcp-proxy: the MCP server ended before answering")})
		}
		if gone {
			continue
		}
		px.writeError(json.RawMessage(key), codeInternalError, fmt.Sprintf("toolguard mcp-proxy: the MCP server ended before answering %s", method))
	}
}

// serverMessage handles one message from the server and returns what to
// send to the client.
func (px *proxy) serverMessage(ctx context.Context, line []byte) []byte {
	if line[0] != '{' {
		return line
	}
	var m message
	if json.Unmarshal(line, &m) != nil || !m.isResponse() {
		return line
	}
	key := idKey(m.ID)
	px.mu.Lock()
	method := px.inflight[key]
	delete(px.inflight, key)
	pc, isCall := px.calls[key]
	delete(px.calls, key)
	isList := px.lists[key]
	delete(px.lists, key)
	t := px.tracker
	px.mu.Unlock()

	switch {
	case isCall:
		return px.callResult(ctx, t, pc, line, &m)
	case isList:
		px.learn(m.Result)
	case method == "initialize":
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(m.Result, &res) == nil && res.ProtocolVersion != "" {
			px.mu.Lock()
			px.version = res.ProtocolVersion
			px.mu.Unlock()
		}
	}
	return line
}

// toolResult is the part of a tools/call result the proxy reads.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	ResultType        string          `json:"resultType"`
}

// callResult records the response to an allowed call and, when that moves
// the turn into a later phase from PhaseNudge on, adds the phase's
// guidance to a successful result.
func (px *proxy) callResult(ctx context.Context, t *toolguard.Tracker, pc pendingCall, line []byte, m *message) []byte {
	if m.Error != nil {
		t.RecordContext(ctx, pc.call, toolguard.Outcome{Err: fmt.Errorf("tools/call error: %s", m.Error.Message)})
		return line
	}
	var res toolResult
	if json.Unmarshal(m.Result, &res) != nil {
		t.RecordContext(ctx, pc.call, toolguard.Outcome{Err: errors.New("toolguard mcp-proxy: the tools/call result is not an object")})
		return line
	}
	if res.ResultType == "input_required" {
		return line // the retry with the answers records the call
	}
	var texts []string
	for _, c := range res.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if text == "" && len(res.StructuredContent) > 0 {
		text = string(res.StructuredContent)
	}
	o := toolguard.Outcome{Result: text}
	if res.IsError {
		if text == "" {
			text = "the tool returned an error result"
		}
		o.Err = errors.New(text)
	}
	phase := t.RecordContext(ctx, pc.call, o)
	if res.IsError || phase <= pc.before || phase < toolguard.PhaseNudge {
		return line
	}
	g := t.Guidance()
	if g.Message == "" {
		return line
	}
	if out, err := withText(line, g.Message); err == nil {
		return out
	}
	return line
}

// withText returns the response line with one more text content in its
// result.
func withText(line []byte, text string) ([]byte, error) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		return nil, err
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(msg["result"], &res); err != nil {
		return nil, err
	}
	var content []json.RawMessage
	if c, ok := res["content"]; ok {
		if err := json.Unmarshal(c, &content); err != nil {
			return nil, err
		}
	}
	item, err := json.Marshal(map[string]string{"type": "text", "text": text})
	if err != nil {
		return nil, err
	}
	content = append(content, item)
	if res["content"], err = json.Marshal(content); err != nil {
		return nil, err
	}
	if msg["result"], err = json.Marshal(res); err != nil {
		return nil, err
	}
	return json.Marshal(msg)
}

// learn reads the readOnlyHint annotations of a tools/list result.
func (px *proxy) learn(result json.RawMessage) {
	var res struct {
		Tools []struct {
			Name        string `json:"name"`
			Annotations *struct {
				ReadOnlyHint bool `json:"readOnlyHint"`
			} `json:"annotations"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &res) != nil {
		return
	}
	px.mu.Lock()
	defer px.mu.Unlock()
	for _, tool := range res.Tools {
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || contains(px.readOnly, tool.Name) {
			continue
		}
		if px.tracker != nil {
			if !px.late {
				px.late = true
				px.logf("tool %q is read-only by its annotations, listed after the first tools/call: the hints of later listings are not applied", tool.Name)
			}
			continue
		}
		px.readOnly = append(px.readOnly, tool.Name)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeResult answers the request id with result.
func (px *proxy) writeResult(id json.RawMessage, result any) {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	if err != nil {
		px.writeError(id, codeInternalError, "toolguard mcp-proxy: cannot encode the result")
		return
	}
	px.writeLine(b)
}

// writeError answers the request id (null when nil) with an error.
func (px *proxy) writeError(id json.RawMessage, code int, msg string) {
	if !hasID(id) {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": msg},
	})
	px.writeLine(b)
}

// writeLine writes one message to the client.
func (px *proxy) writeLine(b []byte) {
	px.outMu.Lock()
	defer px.outMu.Unlock()
	_, _ = px.out.Write(append(b, '\n'))
}
