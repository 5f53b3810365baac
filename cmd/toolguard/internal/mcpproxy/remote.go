package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolguard/toolguard/internal/mcpguard"
)

// httpServer is a remote MCP server on the streamable HTTP transport
// (--url): each message of the client is POSTed to the endpoint, and the
// answer (a JSON body or a stream of server-sent events) comes back as
// lines, so the proxy guards it as it guards a stdio server. The
// Mcp-Session-Id the server gives at initialize is sent with every later
// message, with the negotiated MCP-Protocol-Version.
//
// A server that answers 401 gets MCP's authorization flow (oauth.go) and
// the request is sent again with the token. Once the session is
// initialized, a GET stream carries what the server sends unasked
// (notifications, its own requests). From revision 2026-07-28 the
// Mcp-Method and Mcp-Name headers are sent; Mcp-Param-* headers, which a
// tool's schema may ask for, are not.
type httpServer struct {
	url    string
	client *http.Client
	log    func(format string, a ...any)
	auth   *oauth // nil: no authorization

	ctx    context.Context
	cancel context.CancelFunc
	posts  sync.WaitGroup

	pr *io.PipeReader
	pw *io.PipeWriter

	outMu      sync.Mutex // one message at a time into pw
	listenOnce sync.Once

	mu      sync.Mutex
	buf     []byte // a partial line written by the proxy
	session string // Mcp-Session-Id
	version string // the negotiated protocol revision
}

func newHTTPServer(url string, auth *oauth, log func(format string, a ...any)) *httpServer {
	ctx, cancel := context.WithCancel(context.Background())
	return &httpServer{url: url, client: &http.Client{}, auth: auth, log: log, ctx: ctx, cancel: cancel}
}

func (u *httpServer) start() (io.WriteCloser, io.Reader, error) {
	u.pr, u.pw = io.Pipe()
	return u, u.pr, nil
}

// Write takes the proxy's lines to the server; each complete line is one
// POST. initialize is sent before anything else is read (the session id
// comes with its answer); other messages go out at once, each in its own
// request, so a long call holds up nothing.
func (u *httpServer) Write(p []byte) (int, error) {
	u.mu.Lock()
	u.buf = append(u.buf, p...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(u.buf, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, bytes.Clone(u.buf[:i]))
		u.buf = u.buf[i+1:]
	}
	u.mu.Unlock()
	for _, line := range lines {
		var m message
		_ = json.Unmarshal(line, &m)
		if m.Method == "initialize" {
			u.post(line, &m)
			continue
		}
		u.posts.Add(1)
		go func() {
			defer u.posts.Done()
			u.post(line, &m)
		}()
	}
	return len(p), nil
}

// Close ends the client's side: no more messages.
func (u *httpServer) Close() error { return nil }

// post sends one message and writes what the server answers.
func (u *httpServer) post(line []byte, m *message) {
	resp, err := u.do(line)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && u.auth != nil {
		sent := resp.Request.Header.Get("Authorization")
		resp.Body.Close()
		if err = u.auth.unauthorized(u.ctx, resp, strings.TrimPrefix(sent, "Bearer ")); err == nil {
			resp, err = u.do(line)
		} else {
			err = fmt.Errorf("authorization: %w", err)
		}
	}
	if err != nil {
		u.fail(m, err.Error())
		return
	}
	u.handle(resp, m)
}

// do POSTs one message.
func (u *httpServer) do(line []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(u.ctx, http.MethodPost, u.url, bytes.NewReader(line))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	u.mu.Lock()
	if u.session != "" {
		req.Header.Set("Mcp-Session-Id", u.session)
	}
	version := u.version
	u.mu.Unlock()
	// From 2026-07-28 each request names its revision in _meta, and the
	// header must say the same.
	var p struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
			Name string                     `json:"name"`
			URI  string                     `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &p) == nil {
		var v string
		if json.Unmarshal(p.Params.Meta[mcpguard.MetaProtocolVersion], &v) == nil && v != "" {
			version = v
		}
	}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	// From 2026-07-28 a request names its method (and the tool, prompt or
	// resource it is about) in headers too.
	if mcpguard.IsStateless(version) && p.Method != "" {
		req.Header.Set("Mcp-Method", p.Method)
		switch p.Method {
		case "tools/call", "prompts/get":
			req.Header.Set("Mcp-Name", headerValue(p.Params.Name))
		case "resources/read":
			req.Header.Set("Mcp-Name", headerValue(p.Params.URI))
		}
	}
	if u.auth != nil {
		if tok := u.auth.token(); tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	return u.client.Do(req)
}

// handle writes the server's answer to a message.
func (u *httpServer) handle(resp *http.Response, m *message) {
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		u.mu.Lock()
		u.session = id
		u.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		if m.Method == "notifications/initialized" {
			u.listenOnce.Do(func() { go u.listen() })
		}
		return
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var r message
		if json.Unmarshal(body, &r) == nil && r.isResponse() && r.Error != nil && idKey(r.ID) == idKey(m.ID) {
			// The server's own JSON-RPC error for the request: the client
			// gets it as the server wrote it.
			u.outMu.Lock()
			_, _ = u.pw.Write(append(bytes.Join(bytes.Fields(body), []byte(" ")), '\n'))
			u.outMu.Unlock()
			return
		}
		u.fail(m, fmt.Sprintf("HTTP %s: %s", resp.Status, strings.TrimSpace(string(body[:min(len(body), 512)]))))
		return
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		u.events(resp.Body, m)
		return
	}
	u.message(resp.Body, m)
}

// message copies one JSON body to the proxy as a line: JSON needs no raw
// line break (those in strings are escaped), so they become spaces.
func (u *httpServer) message(body io.Reader, m *message) {
	if m.Method == "initialize" {
		// Small, and the revision it settles is sent with every later message.
		data, _ := io.ReadAll(io.LimitReader(body, 1<<20))
		data = bytes.ReplaceAll(bytes.ReplaceAll(bytes.TrimSpace(data), []byte("\r"), []byte(" ")), []byte("\n"), []byte(" "))
		u.learnVersion(data)
		u.outMu.Lock()
		_, _ = u.pw.Write(append(data, '\n'))
		u.outMu.Unlock()
		return
	}
	u.outMu.Lock()
	defer u.outMu.Unlock()
	br := bufio.NewReader(body)
	for {
		chunk, err := br.ReadSlice('\n')
		chunk = bytes.TrimRight(chunk, "\r\n")
		if len(chunk) > 0 {
			if _, werr := u.pw.Write(chunk); werr != nil {
				return
			}
		}
		if err == nil {
			_, _ = u.pw.Write([]byte{' '})
			continue
		}
		if err != bufio.ErrBufferFull {
			break
		}
	}
	_, _ = u.pw.Write([]byte{'\n'})
}

// events copies the data of each server-sent event to the proxy as a line.
func (u *httpServer) events(body io.Reader, m *message) {
	br := bufio.NewReaderSize(body, 64<<10)
	var data []byte
	flush := func() {
		if len(bytes.TrimSpace(data)) == 0 {
			data = data[:0]
			return
		}
		u.learnVersion(data)
		u.outMu.Lock()
		_, _ = u.pw.Write(append(data, '\n'))
		u.outMu.Unlock()
		data = data[:0]
	}
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			flush()
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, ' ')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
		if err != nil {
			flush()
			if err != io.EOF && u.ctx.Err() == nil {
				u.log("reading the event stream of %s: %v", u.url, err)
			}
			return
		}
	}
}

// learnVersion reads the protocol revision of an initialize result.
func (u *httpServer) learnVersion(msg []byte) {
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &r) == nil && r.Result.ProtocolVersion != "" {
		u.mu.Lock()
		u.version = r.Result.ProtocolVersion
		u.mu.Unlock()
	}
}

// fail answers a request the server could not be asked, so the client
// does not wait for it; a notification is only logged.
func (u *httpServer) fail(m *message, problem string) {
	if u.ctx.Err() != nil {
		return // the proxy is ending
	}
	u.log("the MCP server at %s: %s", u.url, problem)
	if !m.isRequest() {
		return
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID,
		"error": map[string]any{"code": codeInternalError, "message": "toolguard mcp-proxy: the MCP server at " + u.url + ": " + problem}})
	u.outMu.Lock()
	_, _ = u.pw.Write(append(b, '\n'))
	u.outMu.Unlock()
}

// stop lets the requests under way finish for grace, then cancels them,
// ends the session (DELETE) and the proxy's input from the server.
func (u *httpServer) stop(grace time.Duration, _ <-chan struct{}) {
	done := make(chan struct{})
	go func() {
		u.posts.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		u.log("the MCP server at %s did not answer within %v: giving up", u.url, grace)
	}
	u.cancel()
	u.mu.Lock()
	session := u.session
	u.mu.Unlock()
	if session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u.url, nil); err == nil {
			req.Header.Set("Mcp-Session-Id", session)
			if resp, err := u.client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	_ = u.pw.Close()
}

func (u *httpServer) wait() error { return nil }

// headerValue is s as an HTTP header value: as it is when it is printable
// ASCII without surrounding blanks, else in the =?base64?…?= form MCP uses.
func headerValue(s string) string {
	plain := s == strings.TrimSpace(s)
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// listen reads the stream of messages the server sends unasked: a GET on
// the endpoint with the session. A server without one answers 405.
func (u *httpServer) listen() {
	u.mu.Lock()
	session, version := u.session, u.version
	u.mu.Unlock()
	if session == "" {
		return // a stateless server has no stream to listen to
	}
	req, err := http.NewRequestWithContext(u.ctx, http.MethodGet, u.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if u.auth != nil {
		if tok := u.auth.token(); tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	resp, err := u.client.Do(req)
	if err != nil {
		if u.ctx.Err() == nil {
			u.log("the MCP server at %s: no stream of server messages: %v", u.url, err)
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return // 405: the server sends nothing unasked
	}
	u.events(resp.Body, &message{})
}
