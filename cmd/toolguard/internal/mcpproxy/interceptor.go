package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/mcpguard"
)

// The interceptor is toolguard for Docker's MCP Gateway, whose
// "--interceptor before:http:URL" POSTs each tools/call to URL before the
// call runs, and "before:exec:COMMAND" gives the same JSON to COMMAND on
// standard input: an empty answer lets the call run, a CallToolResult
// replaces it. The JSON is the gateway's go-sdk request as Go encodes it,
// {"Session":{},"Params":{"name":…,"arguments":…,"_meta":…},"Extra":…}
// (seen from docker-mcp built from its repository); a JSON-RPC shaped
// {"method":"tools/call","params":{…}} is read too.
//
// "toolguard interceptor serve" holds the Trackers and answers the POSTs;
// "toolguard interceptor --url URL" is the exec side, a client of a serving
// one (each exec is a new process, and a guard needs the calls before it).
// A before interceptor sees calls, not results: a call it lets run is
// booked with no result, so identical calls count as repeats unless
// another call changed something in between (the default policy's
// progress rule); conversations and turns are those of mcp-proxy (an idle
// gap, or the client's _meta conversation id).

const interceptorUsage = `usage: toolguard interceptor serve [--listen ADDR] [flags]
       toolguard interceptor --url URL

serve answers Docker MCP Gateway's before:http interceptor:
  docker mcp gateway run --interceptor before:http:http://127.0.0.1:7077/before
--url is its before:exec side, for a gateway that runs commands:
  docker mcp gateway run --interceptor 'before:exec:toolguard interceptor --url http://127.0.0.1:7077/before'

  --listen ADDR        where serve listens (default 127.0.0.1:7077)
  --policy FILE        a policy file (docs/policy.md)
  --preset NAME        a preset policy: %s
  --idle-reset DURATION
                       a gap without tool calls that ends a conversation
                       (default %s)
  --dry-run            refuse nothing, log what would be refused
  --log-format FORMAT  text (default) or json
`

// DefaultListen is the default of interceptor serve --listen.
const DefaultListen = "127.0.0.1:7077"

// maxIntercepted bounds the JSON of one intercepted call.
const maxIntercepted = 16 << 20

// InterceptorMain runs "toolguard interceptor" and returns its exit status.
func InterceptorMain(args []string, env Env) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(env.Stderr, "toolguard interceptor: "+format+"\n", a...)
		fmt.Fprintln(env.Stderr, `run "toolguard interceptor -h" for help`)
		return ExitBadInput
	}
	if len(args) > 0 && args[0] == "serve" {
		return interceptorServe(args[1:], env, fail)
	}
	fset := flag.NewFlagSet("toolguard interceptor", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	target := fset.String("url", "", "")
	if err := fset.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(env.Stdout, interceptorUsage, strings.Join(toolguard.PresetNames(), ", "), DefaultIdleReset)
		return ExitOK
	} else if err != nil {
		return fail("%v", err)
	}
	if *target == "" || fset.NArg() > 0 {
		return fail("give --url of a running toolguard interceptor serve")
	}
	body, err := io.ReadAll(io.LimitReader(env.Stdin, maxIntercepted))
	if err != nil {
		return fail("reading the call: %v", err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post(*target, "application/json", bytes.NewReader(body))
	if err != nil {
		// The guard is down: the call runs (a guard must not take the tools
		// away), and the gateway's log says why.
		fmt.Fprintf(env.Stderr, "toolguard interceptor: %v: the call runs unguarded\n", err)
		return ExitOK
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(env.Stderr, "toolguard interceptor: %s: the call runs unguarded\n", resp.Status)
		return ExitOK
	}
	_, _ = io.Copy(env.Stdout, io.LimitReader(resp.Body, maxIntercepted))
	return ExitOK
}

func interceptorServe(args []string, env Env, fail func(string, ...any) int) int {
	fset := flag.NewFlagSet("toolguard interceptor serve", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	gf := addGuardFlags(fset)
	listen := fset.String("listen", DefaultListen, "")
	if err := fset.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(env.Stdout, interceptorUsage, strings.Join(toolguard.PresetNames(), ", "), DefaultIdleReset)
		return ExitOK
	} else if err != nil {
		return fail("%v", err)
	}
	p, opts, err := gf.setup(env)
	if err != nil {
		return fail("%v", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail("%v", err)
	}
	ic := newInterceptor(p, opts, env.Stderr)
	ic.px.log.Info("toolguard interceptor: listening", "url", "http://"+ln.Addr().String()+"/before")
	if env.Ready != nil {
		env.Ready("http://" + ln.Addr().String() + "/before")
	}
	srv := &http.Server{Handler: ic, ReadHeaderTimeout: 10 * time.Second}
	sigs, stop := signals(env)
	defer stop()
	go func() {
		<-sigs
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		ic.px.logf("%v", err)
		return ExitServer
	}
	ic.px.summary()
	return ExitOK
}

// interceptor answers the gateway's before:http POSTs.
type interceptor struct {
	px *proxy // its conversations, policy, log and counts
}

func newInterceptor(p toolguard.Policy, o options, stderr io.Writer) *interceptor {
	return &interceptor{px: newProxy(p, o, io.Discard, stderr)}
}

func (ic *interceptor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "toolguard interceptor: POST a tools/call", http.StatusMethodNotAllowed)
		return
	}
	// Field names match case-insensitively: "Params" is params.
	var in struct {
		Method string     `json:"method"`
		Params callParams `json:"params"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxIntercepted)).Decode(&in); err != nil {
		http.Error(w, "toolguard interceptor: the body is not a tools/call", http.StatusBadRequest)
		return
	}
	if (in.Method != "" && in.Method != "tools/call") || in.Params.Name == "" {
		return // not a call: nothing to say, it runs
	}
	res := ic.decide(r.Context(), in.Params)
	if res == nil {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// decide checks one call: nil lets it run (and books it, with no result),
// otherwise the result that replaces it.
func (ic *interceptor) decide(ctx context.Context, p callParams) map[string]any {
	px := ic.px
	c := toolguard.Call{Tool: p.Name, Args: p.Arguments}
	px.mu.Lock()
	conv := px.convs.get(conversationKey(p.Meta), px.now(), px.policyLocked)
	px.stats.checked++
	px.mu.Unlock()
	d := conv.tracker.ShouldSkipContext(ctx, c)
	if d.Skip() {
		px.mu.Lock()
		px.stats.refused[d.Verdict.String()+"/"+d.Reason.String()]++
		if px.dryRun {
			px.stats.wouldRefuse++
		}
		px.mu.Unlock()
		if !px.dryRun {
			var v string
			_ = json.Unmarshal(p.Meta[mcpguard.MetaProtocolVersion], &v)
			return skipped(d, mcpguard.IsStateless(v))
		}
		px.log.Warn("toolguard interceptor: dry run: this call would be refused; it runs", "gen_ai.tool.name", c.Tool,
			"verdict", d.Verdict.String(), "reason", d.Reason.String())
		return nil
	}
	conv.tracker.RecordContext(ctx, c, toolguard.Outcome{})
	return nil
}
