// Package mcpproxy is the "toolguard mcp-proxy" command: a stdio MCP
// server that starts any MCP server command as its child, forwards every
// message both ways, and guards tools/call with a toolguard Tracker per
// conversation. Desktop hosts start a stdio server once and keep it for
// every chat, so the proxy decides what a conversation and a turn are (see
// conversation.go and docs/integrations.md): an idle gap, a new initialize,
// or a conversation id the client sends in _meta.
//
// The proxy speaks newline-delimited JSON-RPC (the stdio transport of
// every MCP revision) and reads only what it needs: tools/call requests
// and their responses, tools/list responses (to learn readOnlyHint), the
// protocol revision, and cancellations. Everything else passes through
// byte for byte.
package mcpproxy

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/toolguard/toolguard"
)

// Exit statuses of Main.
const (
	ExitOK       = 0 // the client closed its input and the server ended
	ExitServer   = 1 // the server could not start, or ended on its own
	ExitBadInput = 2 // bad flags or policy
)

// Env is what Main reads and writes besides its arguments.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// PolicyFile reads a --policy quota file: over the defaults when base
	// is nil, layered onto the --preset policy otherwise. nil means
	// --policy is refused.
	PolicyFile func(base *toolguard.Policy, path string) (toolguard.Policy, error)
	// Now is the clock of the idle reset and of the Trackers. nil means
	// time.Now.
	Now func() time.Time
	// OpenURL opens an authorization page for --url servers that ask for
	// one. nil means the user's browser.
	OpenURL func(string) error
	// OAuthDir is where the tokens of --url servers are kept. "" means
	// os.UserConfigDir()/toolguard/oauth.
	OAuthDir string
	// Ready, when set, is told the URL "interceptor serve" listens on.
	Ready func(url string)
	// Signals, when set, receives the signals that end the proxy as if
	// the client had closed its input. nil means SIGINT and SIGTERM.
	Signals <-chan os.Signal
	// Getenv reads the environment (TOOLGUARD_OAUTH_CLIENT_SECRET). nil
	// means os.Getenv.
	Getenv func(string) string
}

// ClientSecretEnv is the environment variable that holds the secret of
// the client given with --client-id, kept off the command line, which
// other users of the machine can read.
const ClientSecretEnv = "TOOLGUARD_OAUTH_CLIENT_SECRET"

const usage = `usage: toolguard mcp-proxy [flags] -- COMMAND [ARG...]
       toolguard mcp-proxy [flags] --url URL
       toolguard mcp-proxy --version

Runs COMMAND as a stdio MCP server and serves it on standard input and
output, guarding every tools/call with toolguard: a repeated or looping call
gets a tool result that tells the model what to do instead, and is not sent
to the server.

  --policy FILE        a policy file (YAML, docs/policy.md: every field,
                       a preset, per-tool overrides), over the defaults or
                       over --preset
  --preset NAME        a preset policy: %s
  --idle-reset DURATION
                       a gap without tool calls that ends a conversation
                       (a turn, for a client that names its conversations
                       in _meta); 0 turns it off (default %s)
  --url URL            a remote MCP server on streamable HTTP instead of a
                       COMMAND; one that asks for authorization gets MCP's
                       OAuth flow in the browser, the tokens kept in the
                       user's config directory (toolguard/oauth, 0600)
  --client-id ID       for --url: authorize as this client, registered with
                       the authorization server by hand (its secret, if
                       any, in $TOOLGUARD_OAUTH_CLIENT_SECRET), or the https
                       URL of its client ID metadata document; default:
                       dynamic client registration
  --redirect-port N    for --url: the loopback port of the redirect URI
                       (http://127.0.0.1:N/callback), for a client
                       registered with a fixed one; default: any free port
  --dry-run            shadow mode: refuse nothing, log each call that
                       would have been refused
  --log-format FORMAT  text (default) or json: the log on standard error
                       (refusals, problems, the session summary at exit)
  --version            print the version and exit
  --max-message BYTES  the largest message read from either side
                       (default %d); a longer one is dropped with an error
  --grace DURATION     how long the server may take to exit once the client
                       has gone, before it is terminated (default %s)
`

// DefaultMaxMessage is the default of --max-message.
const DefaultMaxMessage = 16 << 20

// DefaultGrace is the default of --grace.
const DefaultGrace = 5 * time.Second

// Version is the version of the toolguard command: its module's version
// when built by "go install …@version", else the VCS revision it was built
// from, else "(devel)".
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	v := bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		return "(devel) " + rev + modified
	}
	if v == "" {
		return "(devel)"
	}
	return v
}

// Main runs the command and returns its exit status.
func Main(args []string, env Env) int {
	fset := flag.NewFlagSet("toolguard mcp-proxy", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	gf := addGuardFlags(fset)
	maxMessage := fset.Int("max-message", DefaultMaxMessage, "")
	grace := fset.Duration("grace", DefaultGrace, "")
	version := fset.Bool("version", false, "")
	remote := fset.String("url", "", "")
	clientID := fset.String("client-id", "", "")
	redirectPort := fset.Int("redirect-port", 0, "")
	fail := func(format string, a ...any) int {
		fmt.Fprintf(env.Stderr, "toolguard mcp-proxy: "+format+"\n", a...)
		fmt.Fprintln(env.Stderr, `run "toolguard mcp-proxy -h" for help`)
		return ExitBadInput
	}
	if err := fset.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(env.Stdout, usage, strings.Join(toolguard.PresetNames(), ", "), DefaultIdleReset, DefaultMaxMessage, DefaultGrace)
		return ExitOK
	} else if err != nil {
		return fail("%v", err)
	}
	if *version {
		fmt.Fprintf(env.Stdout, "toolguard mcp-proxy %s\n", Version())
		return ExitOK
	}
	command := fset.Args()
	switch {
	case *remote != "" && len(command) > 0:
		return fail("give a server command or --url, not both")
	case *remote != "":
		if u, err := url.Parse(*remote); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fail("--url %q: want an http:// or https:// URL", *remote)
		}
	case len(command) == 0:
		return fail("no server command: give it after --, as in toolguard mcp-proxy -- npx -y some-mcp-server")
	}
	if *remote == "" && (*clientID != "" || *redirectPort != 0) {
		return fail("--client-id and --redirect-port are for a --url server")
	}
	if *redirectPort < 0 || *redirectPort > 65535 {
		return fail("--redirect-port %d: want a port, 1 to 65535", *redirectPort)
	}
	if *maxMessage < 1024 {
		return fail("--max-message %d is too small (at least 1024)", *maxMessage)
	}
	if *grace < 0 {
		return fail("--grace %v is negative", *grace)
	}
	p, opts, err := gf.setup(env)
	if err != nil {
		return fail("%v", err)
	}
	opts.max = *maxMessage

	sigs, stop := signals(env)
	defer stop()

	px := newProxy(p, opts, env.Stdout, env.Stderr)
	if *remote != "" {
		auth := &oauth{server: *remote, client: &http.Client{Timeout: 30 * time.Second}, dir: env.OAuthDir,
			open: env.OpenURL, log: px.logf, wait: 5 * time.Minute, clientID: *clientID, redirectPort: *redirectPort}
		getenv := env.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		auth.clientSecret = getenv(ClientSecretEnv)
		if auth.open == nil {
			auth.open = openBrowser
		}
		if auth.dir == "" {
			dir, err := defaultOAuthDir()
			if err != nil {
				px.logf("no directory for OAuth tokens (%v): a server that asks for authorization cannot be used", err)
				auth = nil
			} else {
				auth.dir = dir
			}
		}
		return px.run(context.Background(), newHTTPServer(*remote, auth, px.logf), env.Stdin, sigs, *grace)
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = env.Stderr
	prepare(cmd)
	return px.run(context.Background(), &stdioServer{cmd: cmd, log: px.logf}, env.Stdin, sigs, *grace)
}

// guardFlags are the flags of the guard that mcp-proxy and interceptor
// share.
type guardFlags struct {
	preset, policyFile, logFormat *string
	idle                          *time.Duration
	dryRun                        *bool
}

func addGuardFlags(fset *flag.FlagSet) *guardFlags {
	return &guardFlags{
		preset:     fset.String("preset", "", ""),
		policyFile: fset.String("policy", "", ""),
		logFormat:  fset.String("log-format", "text", ""),
		idle:       fset.Duration("idle-reset", DefaultIdleReset, ""),
		dryRun:     fset.Bool("dry-run", false, ""),
	}
}

// setup returns the policy and the options the flags set.
func (g *guardFlags) setup(env Env) (toolguard.Policy, options, error) {
	if *g.idle < 0 {
		return toolguard.Policy{}, options{}, fmt.Errorf("--idle-reset %v is negative", *g.idle)
	}
	opts := options{max: DefaultMaxMessage, idle: *g.idle, dryRun: *g.dryRun, now: env.Now}
	switch *g.logFormat {
	case "text":
		opts.log = slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	case "json":
		opts.log = slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	default:
		return toolguard.Policy{}, options{}, fmt.Errorf("--log-format %q: want text or json", *g.logFormat)
	}
	// No turn budget unless the user sets one: a proxy does not see turns,
	// and a budget over a host's whole life refuses every call once spent.
	p := toolguard.Policy{MaxCallsPerTurn: -1}
	if *g.preset != "" {
		pp, err := toolguard.Preset(*g.preset)
		if err != nil {
			return toolguard.Policy{}, options{}, fmt.Errorf("--preset: %w", err)
		}
		p = pp
	}
	if *g.policyFile != "" {
		if env.PolicyFile == nil {
			return toolguard.Policy{}, options{}, errors.New("--policy is not supported here")
		}
		pp, err := env.PolicyFile(&p, *g.policyFile)
		if err != nil {
			return toolguard.Policy{}, options{}, fmt.Errorf("--policy: %w", err)
		}
		p = pp
	}
	return p, opts, nil
}

// signals returns env.Signals, or SIGINT and SIGTERM with the function
// that stops receiving them.
func signals(env Env) (<-chan os.Signal, func()) {
	if env.Signals != nil {
		return env.Signals, func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}
