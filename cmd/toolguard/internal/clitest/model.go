package clitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// A Call is one tool call the scripted model makes.
type Call struct {
	Name string
	Args map[string]any
}

// A Step is one model response: the tool calls it makes, all in one
// response (so a CLI that runs calls in parallel runs them together), or,
// when it has none, its final text.
type Step struct {
	Calls []Call
	Text  string
}

// Result is a tool result the model server received: what the model read
// for one of the calls it made.
type Result struct {
	Step  int    // the step that made the call
	Index int    // the call's place in that step's Calls
	Name  string // the tool's name
	Text  string // the result as the model reads it
}

// Server is a scripted model on 127.0.0.1. It speaks the four wire
// protocols of the agent CLIs: Anthropic's /v1/messages, OpenAI's
// /v1/responses and /v1/chat/completions, and Gemini's
// :streamGenerateContent and :generateContent.
//
// A request that offers tools is the agent's; the server answers it with
// the step whose index is the number of model responses in the request's
// history, so a retried request gets the same step again and a resumed
// session goes on with the script. Requests without tools (titles, token
// counts, routing) get a short fixed text. Past the script's end the
// server answers with Fallback.
type Server struct {
	URL string

	mu       sync.Mutex
	script   []Step
	fallback Step
	served   map[int]bool
	results  map[string]Result // by call id
	order    []string          // call ids in the order their results came
	overrun  int
	unknown  []string
	requests int
	srv      *http.Server
}

// NewServer starts a server for script on a free loopback port; t's
// cleanup stops it.
func NewServer(t testing.TB, script []Step, fallback Step) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		URL:      "http://" + ln.Addr().String(),
		script:   script,
		fallback: fallback,
		served:   map[int]bool{},
		results:  map[string]Result{},
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// SetScript replaces the script.
func (s *Server) SetScript(script []Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = script
}

// Results returns the tool results received, in the order they first
// came.
func (s *Server) Results() []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Result, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.results[id])
	}
	return out
}

// ResultOf returns what the model read for call index of step, and
// whether it read anything.
func (s *Server) ResultOf(step, index int) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.results[callID(step, index)]
	return r.Text, ok
}

// Served reports whether the agent asked for step (so it read the results
// of every step before it).
func (s *Server) Served(step int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[step]
}

// Overrun is how many agent requests came past the script's end.
func (s *Server) Overrun() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overrun
}

// Unknown lists the requests the server had no answer for.
func (s *Server) Unknown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unknown...)
}

// Requests is how many requests the server answered.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// callID is the id of call index of step. Every protocol that carries call
// ids echoes it with the result.
func callID(step, index int) string { return fmt.Sprintf("call_s%di%d", step, index) }

// parseCallID is callID's inverse.
func parseCallID(id string) (step, index int, ok bool) {
	id = strings.TrimPrefix(id, "toolu_")
	n, err := fmt.Sscanf(id, "call_s%di%d", &step, &index)
	return step, index, err == nil && n == 2
}

// maxBody bounds a request body: the CLIs send their whole history, which
// stays far below this in a scripted session.
const maxBody = 32 << 20

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 100})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		s.anthropic(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		s.responses(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		s.chat(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":streamGenerateContent"):
		s.gemini(w, body, true)
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":generateContent"):
		s.gemini(w, body, false)
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 100})
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "m", "object": "model", "created": 0, "owned_by": "clitest"},
		}})
	default:
		s.mu.Lock()
		s.unknown = append(s.unknown, r.Method+" "+r.URL.String())
		s.mu.Unlock()
		http.NotFound(w, r)
	}
}

// historyItem is one entry of a request's conversation, whatever the
// protocol: a model response's text or call, or a tool result.
type historyItem struct {
	model  bool   // part of a model response
	callID string // a call (model) or the call a result answers
	name   string
	result bool
	text   string
}

// next records the results in history and returns the step to answer
// with and its number: the number of model responses in history
// (consecutive model items are one response).
func (s *Server) next(history []historyItem) (Step, int) {
	step := 0 // model responses so far
	prevModel := false
	pos := 0 // results since the last model response
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range history {
		if h.model {
			if !prevModel {
				step++
				pos = 0
			}
			prevModel = true
			continue
		}
		prevModel = false
		if !h.result {
			continue
		}
		id := h.callID
		if id == "" { // no call ids (Gemini): results follow the calls' order
			id = callID(step-1, pos)
		}
		pos++
		st, idx, ok := parseCallID(id)
		if !ok {
			continue
		}
		if _, seen := s.results[callID(st, idx)]; !seen {
			s.results[callID(st, idx)] = Result{Step: st, Index: idx, Name: h.name, Text: h.text}
			s.order = append(s.order, callID(st, idx))
		}
	}
	s.served[step] = true
	if step < len(s.script) {
		return s.script[step], step
	}
	s.overrun++
	return s.fallback, step
}

// sideText answers a request that offers no tools.
const sideText = "ok"

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events; event may be empty.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (e sse) send(event string, v any) {
	var b bytes.Buffer
	if event != "" {
		fmt.Fprintf(&b, "event: %s\n", event)
	}
	data, _ := json.Marshal(v)
	fmt.Fprintf(&b, "data: %s\n\n", data)
	_, _ = e.w.Write(b.Bytes())
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (e sse) raw(line string) {
	_, _ = io.WriteString(e.w, line)
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

// textOf flattens a content value (a string, or a list of parts with
// "text" fields) to its text.
func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					parts = append(parts, t)
				} else if t := textOf(m["content"]); t != "" {
					parts = append(parts, t)
				}
			} else if s, ok := p.(string); ok {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		if t, ok := c["text"].(string); ok {
			return t
		}
		b, _ := json.Marshal(c)
		return string(b)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func argsJSON(args map[string]any) string {
	if args == nil {
		return "{}"
	}
	b, _ := json.Marshal(args)
	return string(b)
}
