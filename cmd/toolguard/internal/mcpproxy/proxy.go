package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
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
	conv   *conversation
}

// options are the proxy's settings besides its policy.
type options struct {
	max    int           // --max-message
	idle   time.Duration // --idle-reset
	dryRun bool          // --dry-run: refuse nothing, log what would be refused
	now    func() time.Time
	log    *slog.Logger // nil: text on stderr
}

// stats are the counts of the session summary.
type stats struct {
	started     time.Time
	checked     int            // tools/call checked
	refused     map[string]int // by verdict and reason, "hint/duplicate"
	wouldRefuse int            // --dry-run: refusals not made
	oversized   int            // messages over --max-message
	cancelled   int
}

// proxy is the state of one proxy process.
type proxy struct {
	policy toolguard.Policy
	max    int
	dryRun bool
	log    *slog.Logger

	outMu sync.Mutex
	out   io.Writer // to the client

	now func() time.Time

	mu       sync.Mutex
	convs    conversations          // their Trackers, made at their first tools/call
	readOnly []string               // tools whose tools/list annotations say readOnlyHint
	version  string                 // the protocol revision of initialize
	inflight map[string]string      // client requests sent to the server: id → method
	calls    map[string]pendingCall // tools/call among them
	lists    map[string]bool        // tools/list among them
	late     bool                   // read-only hints came after the policy was resolved
	// clientGone is set when the client closed its input: requests still
	// waiting are not answered.
	clientGone bool
	stats      stats
}

func newProxy(p toolguard.Policy, o options, stdout, stderr io.Writer) *proxy {
	if o.now == nil {
		o.now = time.Now
	}
	if p.Now == nil {
		p.Now = o.now
	}
	if o.log == nil {
		o.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if p.Logger == nil {
		p.Logger = o.log
	}
	return &proxy{
		policy:   p,
		now:      o.now,
		convs:    conversations{idle: o.idle},
		max:      o.max,
		dryRun:   o.dryRun,
		log:      o.log,
		out:      stdout,
		stats:    stats{started: o.now(), refused: make(map[string]int)},
		inflight: make(map[string]string),
		calls:    make(map[string]pendingCall),
		lists:    make(map[string]bool),
	}
}

// logf logs a problem of the proxy or of the server, at Warn.
func (px *proxy) logf(format string, a ...any) {
	px.log.Warn("toolguard mcp-proxy: " + fmt.Sprintf(format, a...))
}

// upstream is the MCP server the proxy forwards to: a command on stdio,
// or a streamable HTTP endpoint (--url).
type upstream interface {
	// start connects: what is written to toServer goes to the server, one
	// message a line; fromServer yields its messages, one a line, and ends
	// when the server does.
	start() (toServer io.WriteCloser, fromServer io.Reader, err error)
	// stop ends the server once toServer is closed: it has grace to finish
	// (done is closed when fromServer has ended) before it is ended.
	stop(grace time.Duration, done <-chan struct{})
	// wait returns why the server ended (nil: it closed its output).
	wait() error
}

// run starts the server and forwards until the client or the server ends.
func (px *proxy) run(ctx context.Context, up upstream, stdin io.Reader, sigs <-chan os.Signal, grace time.Duration) int {
	toServer, fromServer, err := up.start()
	if err != nil {
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
	_ = toServer.Close()
	up.stop(grace, serverDone)
	werr := up.wait()
	px.summary()
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

// stdioServer is a server command on stdio.
type stdioServer struct {
	cmd *exec.Cmd
	log func(format string, a ...any)
}

func (u *stdioServer) start() (io.WriteCloser, io.Reader, error) {
	toServer, err := u.cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	fromServer, err := u.cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := u.cmd.Start(); err != nil {
		return nil, nil, err
	}
	return toServer, fromServer, nil
}

// stop: closing its input asks a stdio server to exit; it gets grace to do
// so (and to write what it still has to say) before it is terminated, then
// killed.
func (u *stdioServer) stop(grace time.Duration, done <-chan struct{}) {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		u.log("the MCP server did not exit within %v: terminating it", grace)
		terminate(u.cmd)
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			u.log("the MCP server did not end on SIGTERM: killing it")
			kill(u.cmd)
		}
	}
}

func (u *stdioServer) wait() error { return u.cmd.Wait() }

// readLine reads one newline-terminated message of at most max bytes.
// A longer one is read to its end and dropped, its top-level id and
// method kept: big is not nil.
func readLine(r *bufio.Reader, max int) (line []byte, big *idScanner, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		switch {
		case big != nil:
			big.feed(frag)
		case len(line)+len(frag) > max+1: // +1: the newline
			big = &idScanner{}
			big.feed(line)
			big.feed(frag)
			line = nil
		default:
			line = append(line, frag...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, big, err
		}
	}
}

// fromClient forwards the client's messages to the server, answering
// refused tools/call requests itself.
func (px *proxy) fromClient(ctx context.Context, stdin io.Reader, toServer io.Writer) {
	r := bufio.NewReaderSize(stdin, 64<<10)
	w := bufio.NewWriter(toServer)
	for {
		line, big, err := readLine(r, px.max)
		if big != nil {
			px.clientTooLarge(big)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if forward := px.clientMessage(ctx, trimmed); forward != nil {
				_, werr := w.Write(append(forward, '\n'))
				if werr == nil {
					werr = w.Flush()
				}
				if werr != nil {
					px.sendFailed(ctx, forward, werr)
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

// clientTooLarge answers a client message over --max-message: a request
// gets an error with its id, so the client does not wait for it.
func (px *proxy) clientTooLarge(big *idScanner) {
	id, method := big.result()
	px.mu.Lock()
	px.stats.oversized++
	px.mu.Unlock()
	px.log.Warn(fmt.Sprintf("toolguard mcp-proxy: dropped a client message larger than %d bytes (--max-message)", px.max),
		"method", method, "gen_ai.tool.call.id", callIDOf(id))
	if !hasID(id) && method != "" {
		return // a notification: nothing to answer
	}
	px.writeError(id, codeInvalidRequest, fmt.Sprintf("toolguard mcp-proxy: message larger than %d bytes (--max-message); it was not sent to the server", px.max))
}

// serverTooLarge replaces a server response over --max-message: a
// tools/call gets an error result the model reads (booked as a failed
// call), any other request an error.
func (px *proxy) serverTooLarge(ctx context.Context, big *idScanner) {
	id, method := big.result()
	px.log.Warn(fmt.Sprintf("toolguard mcp-proxy: dropped a server message larger than %d bytes (--max-message)", px.max),
		"method", method, "gen_ai.tool.call.id", callIDOf(id))
	if !hasID(id) || method != "" {
		return // a notification or a request of the server's: nothing waits for it here
	}
	px.mu.Lock()
	px.stats.oversized++
	reqMethod, waiting, pc, isCall := px.takeLocked(idKey(id))
	px.mu.Unlock()
	msg := fmt.Sprintf("toolguard mcp-proxy: the MCP server's response was larger than %d bytes (--max-message) and was dropped", px.max)
	switch {
	case isCall:
		pc.conv.tracker.RecordContext(ctx, pc.call, toolguard.Outcome{Err: errors.New(msg)})
		px.writeResult(id, map[string]any{
			"content": []any{map[string]any{"type": "text", "text": msg + ". Ask for less (a narrower query, a smaller page)."}},
			"isError": true,
		})
	case waiting:
		px.writeError(id, codeInternalError, msg+" (the answer to "+reqMethod+")")
	}
}

// takeLocked removes the request key from those waiting for the server:
// its method, whether it was waiting, and its call when it is a tools/call.
func (px *proxy) takeLocked(key string) (method string, waiting bool, pc pendingCall, isCall bool) {
	method, waiting = px.inflight[key]
	delete(px.inflight, key)
	delete(px.lists, key)
	pc, isCall = px.calls[key]
	delete(px.calls, key)
	if isCall {
		px.doneLocked(pc)
	}
	return method, waiting, pc, isCall
}

// sendFailed answers a message the server could not be sent, when it is a
// request the client waits for.
func (px *proxy) sendFailed(ctx context.Context, msg []byte, werr error) {
	px.logf("writing to the MCP server: %v", werr)
	var m message
	if msg[0] != '{' || json.Unmarshal(msg, &m) != nil || !m.isRequest() {
		return
	}
	px.mu.Lock()
	_, _, pc, isCall := px.takeLocked(idKey(m.ID))
	px.mu.Unlock()
	text := fmt.Sprintf("toolguard mcp-proxy: the MCP server is not reading its input: %v", werr)
	if isCall {
		pc.conv.tracker.RecordContext(ctx, pc.call, toolguard.Outcome{Err: errors.New(text)})
	}
	px.writeError(m.ID, codeInternalError, text)
}

// callIDOf is callID of a raw JSON-RPC id ("" for none).
func callIDOf(id json.RawMessage) string {
	if !hasID(id) {
		return ""
	}
	return callID(idKey(id))
}

// clientMessage handles one message from the client and returns what to
// send to the server: the message, or nil when the proxy answered it.
func (px *proxy) clientMessage(ctx context.Context, line []byte) []byte {
	if !json.Valid(line) {
		px.writeError(nil, codeParseError, "toolguard mcp-proxy: parse error: the message is not valid JSON")
		return nil
	}
	if line[0] == '[' {
		return px.clientBatch(ctx, line)
	}
	return px.clientObject(ctx, line)
}

// clientBatch guards the tools/call requests of a JSON-RPC batch one by
// one: those refused are answered here (each in a message of its own,
// which a receiver of batches accepts), the rest go to the server as a
// batch. An empty batch, or one that is not a list of objects, goes to
// the server as it is, which answers it.
func (px *proxy) clientBatch(ctx context.Context, line []byte) []byte {
	var items []json.RawMessage
	if json.Unmarshal(line, &items) != nil || len(items) == 0 {
		return line
	}
	for _, it := range items {
		if len(it) == 0 || it[0] != '{' {
			return line
		}
	}
	kept := items[:0]
	for _, it := range items {
		if fwd := px.clientObject(ctx, it); fwd != nil {
			kept = append(kept, fwd)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case len(items):
		return line // nothing refused: byte for byte
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return line
	}
	return out
}

// clientObject handles one JSON-RPC message object of the client.
func (px *proxy) clientObject(ctx context.Context, line []byte) []byte {
	if line[0] != '{' {
		return line
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
			// A client connecting (again): its conversations start over.
			px.convs.reset()
			px.late = false
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
	key := idKey(m.ID)
	c := toolguard.Call{ID: callID(key), Tool: p.Name, Args: p.Arguments}
	// A retry that carries the answers to an input-required result
	// continues a call that was already allowed: it is not checked again.
	retry := len(p.InputResponses) > 0 || p.RequestState != ""

	px.mu.Lock()
	conv := px.convs.get(conversationKey(p.Meta), px.now(), px.policyLocked)
	t := conv.tracker
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
		px.mu.Lock()
		px.stats.checked++
		if d.Skip() {
			px.stats.refused[d.Verdict.String()+"/"+d.Reason.String()]++
		}
		px.mu.Unlock()
		if d.Skip() && px.dryRun {
			// Shadow mode: the Tracker saw a refusal; the server runs the
			// call, and its result is not booked.
			px.log.Warn("toolguard mcp-proxy: dry run: this call would be refused; it was sent to the server",
				"gen_ai.tool.name", c.Tool, "gen_ai.tool.call.id", c.ID, "verdict", d.Verdict.String(), "reason", d.Reason.String())
			px.mu.Lock()
			px.stats.wouldRefuse++
			px.inflight[key] = m.Method
			px.mu.Unlock()
			return line
		}
		if d.Skip() {
			px.writeResult(m.ID, skipped(d, stateless))
			return nil
		}
		before = d.Phase
	}
	px.mu.Lock()
	px.inflight[key] = m.Method
	px.calls[key] = pendingCall{call: c, before: before, conv: conv}
	conv.inflight++
	px.mu.Unlock()
	return line
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

// cancelled releases a tools/call the client gave up on: it has no
// result, so nothing is booked (Outcome.Cancelled). The same call sent
// again is not a repeat "without a new result", whose hint would point the
// model to a result it never got.
func (px *proxy) cancelled(ctx context.Context, key string) {
	px.mu.Lock()
	pc, ok := px.calls[key]
	delete(px.calls, key)
	delete(px.inflight, key) // a cancelled request gets no response
	if ok {
		px.doneLocked(pc)
		px.stats.cancelled++
	}
	px.mu.Unlock()
	if ok {
		pc.conv.tracker.RecordContext(ctx, pc.call, toolguard.Outcome{Cancelled: true})
	}
}

// fromServer forwards the server's messages to the client, recording the
// responses to tools/call and learning from tools/list. When the server's
// output ends, every request still waiting gets an error.
func (px *proxy) fromServer(ctx context.Context, fromServer io.Reader) {
	r := bufio.NewReaderSize(fromServer, 64<<10)
	for {
		line, big, err := readLine(r, px.max)
		if big != nil {
			px.serverTooLarge(ctx, big)
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
	for _, pc := range calls {
		px.doneLocked(pc)
	}
	gone := px.clientGone
	px.mu.Unlock()
	for key, method := range inflight {
		if pc, ok := calls[key]; ok {
			pc.conv.tracker.RecordContext(ctx, pc.call, toolguard.Outcome{Err: errors.New("toolguard mcp-proxy: the MCP server ended before answering")})
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
	if line[0] == '[' {
		return px.serverBatch(ctx, line)
	}
	return px.serverObject(ctx, line)
}

// serverBatch handles each response of a batch, as serverMessage does.
func (px *proxy) serverBatch(ctx context.Context, line []byte) []byte {
	var items []json.RawMessage
	if json.Unmarshal(line, &items) != nil {
		return line
	}
	changed := false
	for i, it := range items {
		if out := px.serverObject(ctx, it); !bytes.Equal(out, it) {
			items[i], changed = out, true
		}
	}
	if !changed {
		return line
	}
	out, err := json.Marshal(items)
	if err != nil {
		return line
	}
	return out
}

// serverObject handles one JSON-RPC message object of the server.
func (px *proxy) serverObject(ctx context.Context, line []byte) []byte {
	if len(line) == 0 || line[0] != '{' {
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
	if isCall {
		px.doneLocked(pc)
	}
	px.mu.Unlock()

	switch {
	case isCall:
		return px.callResult(ctx, pc.conv.tracker, pc, line, &m)
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
		px.readOnly = append(px.readOnly, tool.Name)
		px.convs.changed = true
		if len(px.convs.byKey) > 0 && !px.late {
			px.late = true
			px.logf("tool %q is read-only by its annotations, listed after a conversation began: the hint applies from the next conversation on", tool.Name)
		}
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

// callID is the call id of a tools/call in the Tracker and the log: its
// JSON-RPC id, a string without its quotes.
func callID(key string) string {
	var s string
	if json.Unmarshal([]byte(key), &s) == nil {
		return s
	}
	return key
}

// summary logs what the proxy did, when it ends.
func (px *proxy) summary() {
	px.mu.Lock()
	st := px.stats
	refused := maps.Clone(st.refused)
	opened, turns := px.convs.opened, px.convs.turns
	px.mu.Unlock()
	total := 0
	for _, n := range refused {
		total += n
	}
	attrs := []any{
		"duration", px.now().Sub(st.started).Round(time.Millisecond).String(),
		"conversations", opened, "turns", turns,
		"calls", st.checked, "refused", total,
	}
	if px.dryRun {
		attrs = append(attrs, "dry_run", true, "would_refuse", st.wouldRefuse)
	}
	for _, k := range slices.Sorted(maps.Keys(refused)) {
		attrs = append(attrs, "refused."+k, refused[k])
	}
	if st.cancelled > 0 {
		attrs = append(attrs, "cancelled", st.cancelled)
	}
	if st.oversized > 0 {
		attrs = append(attrs, "oversized", st.oversized)
	}
	px.log.Info("toolguard mcp-proxy: session summary", attrs...)
}

// doneLocked books the end of a call sent to the server: its
// conversation's clock starts again.
func (px *proxy) doneLocked(pc pendingCall) {
	pc.conv.inflight--
	pc.conv.last = px.now()
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
