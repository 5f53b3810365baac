package hook

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// DefaultAddr is the address `toolguard serve` listens on by default.
const DefaultAddr = "127.0.0.1:7878"

const serveUsage = `usage: toolguard serve [--addr HOST:PORT] [--policy FILE]

Serves the hook events of agent CLIs over HTTP, keeping each session's state
in memory (and in the same session log as "toolguard hook run", from which a
session is rebuilt after a restart):

  POST /hook/AGENT[?event=E]   the hook payload as the body; the answer is the
                               agent's hook output as the body (Claude Code's
                               type: "http" hooks post here: /hook/claude)
  GET  /healthz                200 "ok"

  --addr HOST:PORT   where to listen (default %s; keep it on loopback)
  --policy FILE      a policy file, as for "toolguard hook run"
`

// Serve runs "toolguard serve" until SIGINT or SIGTERM.
func Serve(args []string, env Env) int {
	fset := flag.NewFlagSet("toolguard serve", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	addr := fset.String("addr", DefaultAddr, "")
	policyFile := fset.String("policy", "", "")
	if err := fset.Parse(args); err != nil || fset.NArg() > 0 {
		fmt.Fprintf(env.Stderr, serveUsage, DefaultAddr)
		return ExitBadInput
	}
	h, err := NewHandler(&env, *policyFile)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolguard serve: %v\n", err)
		return ExitBadInput
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolguard serve: %v\n", err)
		return ExitFailed
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(env.Stderr, "toolguard serve: listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(env.Stderr, "toolguard serve: %v\n", err)
		return ExitFailed
	}
	return ExitOK
}

// maxServeLog bounds a session log the server reads: it replays a log once,
// when it first meets the session.
const maxServeLog = 256 << 20

// Handler serves hook events over HTTP with one resident engine per agent.
type Handler struct {
	env     *Env
	engines map[string]*Engine
}

// NewHandler returns the HTTP handler of `toolguard serve`.
func NewHandler(env *Env, policyFile string) (*Handler, error) {
	h := &Handler{env: env, engines: map[string]*Engine{}}
	for name, a := range agents {
		pol, err := hookPolicy(env, a, policyFile)
		if err != nil {
			return nil, fmt.Errorf("--policy: %w", err)
		}
		e := NewEngine(a, pol, stateDir(env), env.Now)
		e.cache = map[string]*cached{}
		e.maxLog = maxServeLog
		h.engines[name] = e
	}
	return h, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		_, _ = io.WriteString(w, "ok\n")
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, "/hook/")
	e := h.engines[name]
	if !ok || e == nil {
		http.Error(w, "not found: POST /hook/AGENT, AGENT one of "+strings.Join(agentNames(), ", "), http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	if err != nil || len(data) > maxPayload {
		http.Error(w, "payload unreadable or too large", http.StatusRequestEntityTooLarge)
		return
	}
	out, err := h.decide(e, data, r.URL.Query().Get("event"))
	if err != nil {
		// As in "hook run": a failure lets the call run. An empty 200
		// is an Allow in every contract.
		logFailure(h.env, name, err)
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out.Stdout)
}

func (h *Handler) decide(e *Engine, data []byte, event string) (out Output, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	if v := strings.ToLower(h.env.getenv("TOOLGUARD_HOOK")); v == "off" || v == "0" || v == "false" {
		return Output{}, nil
	}
	p, err := parsePayload(data)
	if err != nil {
		return Output{}, err
	}
	ev, err := e.agent.parse(p, event)
	if err != nil {
		return Output{}, err
	}
	if ev.Kind == KindOther {
		return e.agent.render(ev, Answer{}), nil
	}
	toTranscript(e.agent.name, &ev)
	a, err := e.Handle(ev)
	if err != nil {
		return Output{}, err
	}
	return e.agent.render(ev, a), nil
}
