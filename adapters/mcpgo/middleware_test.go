package mcpgo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpgo"
)

// tools is a set of real mcp-go tools that count how often they ran.
type tools struct {
	runs atomic.Int64
}

func (ts *tools) add(srv *server.MCPServer) {
	srv.AddTool(mcp.NewTool("read_file", mcp.WithString("path")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.runs.Add(1)
			return mcp.NewToolResultText("contents of " + req.GetString("path", "")), nil
		})
	srv.AddTool(mcp.NewTool("deploy", mcp.WithString("target")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.runs.Add(1)
			return mcp.NewToolResultError("permission denied"), nil
		})
	srv.AddTool(mcp.NewTool("broken", mcp.WithString("x")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.runs.Add(1)
			return nil, errors.New("backend unavailable")
		})
	// wait answers after a minute, or when the client cancels the call.
	srv.AddTool(mcp.NewTool("wait"),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.runs.Add(1)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Minute):
				return mcp.NewToolResultText("done"), nil
			}
		})
	srv.AddTool(mcp.NewTool("explode"),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.runs.Add(1)
			panic("kaboom")
		})
}

// newServer returns a real MCP server with the tools and the options.
func newServer(ts *tools, opts ...server.ServerOption) *server.MCPServer {
	srv := server.NewMCPServer("test", "1.0.0", append([]server.ServerOption{server.WithToolCapabilities(false)}, opts...)...)
	ts.add(srv)
	return srv
}

// connect returns an initialized in-process client of srv.
func connect(t testing.TB, srv *server.MCPServer) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(srv)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "test-client", Version: "1.0.0"}
	_, err = c.Initialize(ctx, init)
	require.NoError(t, err)
	return c
}

func call(c *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	return c.CallTool(context.Background(), req)
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func meta(res *mcp.CallToolResult, key string) any {
	if res.Meta == nil {
		return nil
	}
	return res.Meta.AdditionalFields[key]
}

// step is one call of a scenario and what the client must see.
type step struct {
	tool     string
	args     map[string]any
	verdict  string // "allow", "hint" or "abort"
	reason   string // for hint and abort
	isError  bool   // for allow: the tool's own error result
	protoErr bool   // for allow: the tool returned a Go error
	contains []string
	absent   string // the result's text must not hold it (raw Go error text)
}

// run drives the steps through a real client and names the failing step.
func run(t *testing.T, c *client.Client, ts *tools, steps []step) {
	t.Helper()
	for i, s := range steps {
		before := ts.runs.Load()
		res, err := call(c, s.tool, s.args)
		name := fmt.Sprintf("step %d (%s %v)", i+1, s.tool, s.args)
		ran := ts.runs.Load() - before
		if s.verdict == "allow" {
			assert.EqualValues(t, 1, ran, "%s: the tool must run", name)
			if s.protoErr {
				require.Error(t, err, name)
				continue
			}
			require.NoError(t, err, name)
			assert.Equal(t, s.isError, res.IsError, "%s: IsError", name)
			assert.Nil(t, meta(res, mcpgo.MetaVerdict), name)
		} else {
			require.NoError(t, err, "%s: a skipped call must not be a protocol error", name)
			assert.EqualValues(t, 0, ran, "%s: the tool must not run", name)
			assert.True(t, res.IsError, "%s: IsError", name)
			got := text(res)
			// A loop hint or, past the budget, a budget refusal.
			assert.Regexp(t, `^(\[loop-detected\]|\[budget-exhausted\]) `, got, name)
			assert.Contains(t, got, "was not executed", name)
			assert.Equal(t, s.verdict, meta(res, mcpgo.MetaVerdict), name)
			assert.Equal(t, s.reason, meta(res, mcpgo.MetaReason), name)
		}
		if s.absent != "" {
			assert.NotContains(t, text(res), s.absent, name)
		}
		for _, want := range s.contains {
			assert.Contains(t, text(res), want, name)
		}
	}
}

func TestRepeatedCallHintThenAbort(t *testing.T) {
	ts := &tools{}
	tr := toolguard.NewTracker(toolguard.Policy{})
	c := connect(t, newServer(ts, server.WithToolHandlerMiddleware(mcpgo.Middleware(tr))))
	same := map[string]any{"path": "/etc/hosts"}
	run(t, c, ts, []step{
		{tool: "read_file", args: same, verdict: "allow", contains: []string{"contents of /etc/hosts"}},
		{tool: "read_file", args: same, verdict: "allow", contains: []string{"contents of /etc/hosts"}},
		{tool: "read_file", args: same, verdict: "hint", reason: "duplicate",
			contains: []string{"Tool 'read_file' was already executed with identical parameters"}},
		{tool: "read_file", args: same, verdict: "abort", reason: "duplicate",
			contains: []string{"STOP: toolguard has stopped this tool"}, absent: "toolguard: loop detected"},
		{tool: "read_file", args: map[string]any{"path": "/etc/passwd"}, verdict: "allow"},
	})

	// The ledger saw the same: two runs, a hint, an abort, a new call.
	var verdicts []toolguard.Verdict
	for _, e := range tr.Ledger() {
		verdicts = append(verdicts, e.Verdict)
	}
	assert.Equal(t, []toolguard.Verdict{toolguard.Allow, toolguard.Allow, toolguard.Hint, toolguard.Abort, toolguard.Allow}, verdicts)
}

func TestFailuresAreRecorded(t *testing.T) {
	t.Run("error result", func(t *testing.T) {
		ts := &tools{}
		tr := toolguard.NewTracker(toolguard.Policy{MaxFailures: 1})
		c := connect(t, newServer(ts, server.WithToolHandlerMiddleware(mcpgo.Middleware(tr))))
		run(t, c, ts, []step{
			{tool: "deploy", args: map[string]any{"target": "prod"}, verdict: "allow", isError: true,
				contains: []string{"permission denied"}},
			{tool: "deploy", args: map[string]any{"target": "production"}, verdict: "hint", reason: "repeated_failure"},
		})
		assert.True(t, tr.Ledger()[0].Done && tr.Ledger()[0].Failed)
	})
	t.Run("go error", func(t *testing.T) {
		ts := &tools{}
		tr := toolguard.NewTracker(toolguard.Policy{MaxFailures: 1})
		c := connect(t, newServer(ts, server.WithToolHandlerMiddleware(mcpgo.Middleware(tr))))
		run(t, c, ts, []step{
			{tool: "broken", args: map[string]any{"x": "1"}, verdict: "allow", protoErr: true},
			{tool: "broken", args: map[string]any{"x": "2"}, verdict: "hint", reason: "repeated_failure"},
			{tool: "broken", args: map[string]any{"x": "3"}, verdict: "allow", protoErr: true},
			{tool: "broken", args: map[string]any{"x": "4"}, verdict: "abort", reason: "repeated_failure"},
		})
	})
	t.Run("panic", func(t *testing.T) {
		ts := &tools{}
		tr := toolguard.NewTracker(toolguard.Policy{MaxFailures: 1})
		// WithRecovery is added first, so it is outside the guard: the
		// guard records the failure and passes the panic on to it.
		c := connect(t, newServer(ts, server.WithRecovery(),
			server.WithToolHandlerMiddleware(mcpgo.Middleware(tr))))
		run(t, c, ts, []step{
			{tool: "explode", verdict: "allow", protoErr: true},
			{tool: "explode", verdict: "hint", reason: "repeated_failure"},
		})
		l := tr.Ledger()
		require.Len(t, l, 2)
		assert.True(t, l[0].Done && l[0].Failed)
	})
}

func TestBudgetGuidanceAndExhaustion(t *testing.T) {
	ts := &tools{}
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4, NudgeRatio: 0.5})
	c := connect(t, newServer(ts, server.WithToolHandlerMiddleware(mcpgo.Middleware(tr))))
	args := func(i int) map[string]any { return map[string]any{"path": fmt.Sprint("/f", i)} }
	run(t, c, ts, []step{
		{tool: "read_file", args: args(1), verdict: "allow"},
		{tool: "read_file", args: args(2), verdict: "allow", contains: []string{"contents of /f2", "You have used 2 of 4 tool calls. Start wrapping up."}},
		{tool: "read_file", args: args(3), verdict: "allow"},
		{tool: "read_file", args: args(4), verdict: "allow", contains: []string{"Summarize your work and answer the user's question."}},
		{tool: "read_file", args: args(5), verdict: "abort", reason: "budget",
			contains: []string{"STOP: toolguard has stopped this tool"}, absent: "toolguard: "},
	})
	// Only the calls at a phase change carry guidance.
	res, err := call(c, "read_file", args(6))
	require.NoError(t, err)
	assert.Len(t, res.Content, 1)
}

func TestNilTrackerRunsUnguarded(t *testing.T) {
	ts := &tools{}
	mw := mcpgo.MiddlewareFunc(func(context.Context, mcp.CallToolRequest) *toolguard.Tracker { return nil })
	c := connect(t, newServer(ts, server.WithToolHandlerMiddleware(mw)))
	same := map[string]any{"path": "/x"}
	steps := make([]step, 6)
	for i := range steps {
		steps[i] = step{tool: "read_file", args: same, verdict: "allow"}
	}
	run(t, c, ts, steps)
}

func TestProgressTokenIsTheCallID(t *testing.T) {
	ts := &tools{}
	tr := toolguard.NewTracker(toolguard.Policy{})
	srv := newServer(ts)
	srv.Use(mcpgo.Middleware(tr))
	c := connect(t, srv)
	req := mcp.CallToolRequest{}
	req.Params.Name = "read_file"
	req.Params.Arguments = map[string]any{"path": "/a"}
	req.Params.Meta = &mcp.Meta{ProgressToken: "tok-7"}
	_, err := c.CallTool(context.Background(), req)
	require.NoError(t, err)
	l := tr.Ledger()
	require.Len(t, l, 1)
	assert.Equal(t, "tok-7", l[0].CallID)
	assert.Equal(t, "read_file", l[0].Tool)
	assert.True(t, l[0].Done && !l[0].Failed)
}

func TestConcurrentCalls(t *testing.T) {
	ts := &tools{}
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: -1, SessionLimit: -1})
	c := connect(t, newServer(ts, server.WithToolHandlerMiddleware(mcpgo.Middleware(tr))))
	const workers, calls = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				path := fmt.Sprintf("/w%d/%d", w, i)
				res, err := call(c, "read_file", map[string]any{"path": path})
				switch {
				case err != nil:
					errs <- err
				case res.IsError || text(res) != "contents of "+path:
					errs <- fmt.Errorf("%s: got %q", path, text(res))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.EqualValues(t, workers*calls, ts.runs.Load())
	l := tr.Ledger()
	assert.Len(t, l, workers*calls)
	for _, e := range l {
		assert.True(t, e.Done && !e.Failed)
	}
}

type accept struct{}

func (accept) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action:  mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"ok": true},
	}}, nil
}

func TestInputRequiredIsOneCall(t *testing.T) {
	// With a current client the client retries the call with the answers;
	// with a 2025-11-25 client the server asks the client and runs the
	// handler again itself. Either way the call is checked and recorded once.
	for _, version := range []string{"", mcp.ProtocolVersion20251125} {
		t.Run("protocol "+version, func(t *testing.T) { testInputRequired(t, version) })
	}
}

func testInputRequired(t *testing.T, version string) {
	var runs atomic.Int64
	tr := toolguard.NewTracker(toolguard.Policy{})
	srv := server.NewMCPServer("test", "1.0.0", server.WithElicitation(),
		server.WithToolHandlerMiddleware(mcpgo.Middleware(tr)))
	srv.AddTool(mcp.NewTool("deploy", mcp.WithString("target")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			if server.ElicitationResponse(req.Params.InputResponses, "confirm") != nil {
				return mcp.NewToolResultText("deployed"), nil
			}
			return server.NewInputRequestBuilder("s1").
				Elicit("confirm", mcp.ElicitationParams{Message: "Deploy?", RequestedSchema: map[string]any{"type": "object"}}).
				ToolResult(), nil
		})
	c, err := client.NewInProcessClientWithOptions(srv, client.WithElicitationHandler(accept{}))
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "c", Version: "1"}
	init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	_, err = c.Initialize(ctx, init)
	require.NoError(t, err)

	args := map[string]any{"target": "prod"}
	for i := range 2 {
		res, err := call(c, "deploy", args)
		require.NoError(t, err)
		assert.Equal(t, "deployed", text(res), "call %d", i+1)
	}
	// Each call ran the handler twice but is one call for the tracker.
	assert.EqualValues(t, 4, runs.Load())
	l := tr.Ledger()
	require.Len(t, l, 2)
	for _, e := range l {
		assert.True(t, e.Done && !e.Failed)
	}
	res, err := call(c, "deploy", args)
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "hint", meta(res, mcpgo.MetaVerdict))
	assert.EqualValues(t, 4, runs.Load())
}
