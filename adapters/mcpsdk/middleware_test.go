package mcpsdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpsdk"
)

// tools is a set of real SDK tools that count how often they ran.
type tools struct {
	runs atomic.Int64
}

type pathArgs struct {
	Path string `json:"path"`
}

type targetArgs struct {
	Target string `json:"target"`
}

func (ts *tools) add(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file", Description: "reads a file"},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
			ts.runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents of " + in.Path}}}, nil, nil
		})
	// A typed handler's error becomes an IsError result.
	mcp.AddTool(srv, &mcp.Tool{Name: "deploy", Description: "deploys"},
		func(context.Context, *mcp.CallToolRequest, targetArgs) (*mcp.CallToolResult, any, error) {
			ts.runs.Add(1)
			return nil, nil, errors.New("permission denied")
		})
	// A low-level handler's error becomes a protocol error.
	obj := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "broken", Description: "fails", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.runs.Add(1)
			return nil, errors.New("backend unavailable")
		})
	// wait answers after a minute, or when the client cancels the call.
	srv.AddTool(&mcp.Tool{Name: "wait", Description: "waits", InputSchema: obj},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.runs.Add(1)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Minute):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			}
		})
	srv.AddTool(&mcp.Tool{Name: "explode", Description: "panics", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.runs.Add(1)
			panic("kaboom")
		})
}

// recovering turns a panic below it into an error, as a server would.
func recovering(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, fmt.Errorf("panic: %v", p)
			}
		}()
		return next(ctx, method, req)
	}
}

// newServer returns a real SDK server with the tools and the middleware.
func newServer(ts *tools, mw ...mcp.Middleware) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1.0.0"}, nil)
	ts.add(srv)
	srv.AddReceivingMiddleware(mw...)
	// Added last, so it runs first: a panic passes the guard before it is
	// recovered here.
	srv.AddReceivingMiddleware(recovering)
	return srv
}

// connect connects a real client to srv over the in-memory transport.
func connect(t testing.TB, srv *mcp.Server) (*mcp.ClientSession, *mcp.ServerSession) {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1.0.0"}, nil)
	cs, err := cl.Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, ss
}

func call(cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
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
func run(t *testing.T, cs *mcp.ClientSession, ts *tools, steps []step) {
	t.Helper()
	for i, s := range steps {
		before := ts.runs.Load()
		res, err := call(cs, s.tool, s.args)
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
			assert.Nil(t, res.Meta[mcpsdk.MetaVerdict], name)
		} else {
			require.NoError(t, err, "%s: a skipped call must not be a protocol error", name)
			assert.EqualValues(t, 0, ran, "%s: the tool must not run", name)
			assert.True(t, res.IsError, "%s: IsError", name)
			got := text(res)
			// A loop hint or, past the budget, a budget refusal.
			assert.Regexp(t, `^(\[loop-detected\]|\[budget-exhausted\]) `, got, name)
			assert.Contains(t, got, "was not executed", name)
			assert.Equal(t, s.verdict, res.Meta[mcpsdk.MetaVerdict], name)
			assert.Equal(t, s.reason, res.Meta[mcpsdk.MetaReason], name)
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
	cs, _ := connect(t, newServer(ts, mcpsdk.Middleware(tr)))
	same := map[string]any{"path": "/etc/hosts"}
	run(t, cs, ts, []step{
		{tool: "read_file", args: same, verdict: "allow", contains: []string{"contents of /etc/hosts"}},
		{tool: "read_file", args: same, verdict: "allow", contains: []string{"contents of /etc/hosts"}},
		{tool: "read_file", args: same, verdict: "hint", reason: "duplicate",
			contains: []string{"Tool 'read_file' was already executed with identical parameters"}},
		{tool: "read_file", args: same, verdict: "abort", reason: "duplicate",
			contains: []string{"STOP: toolguard has stopped this tool"}, absent: "toolguard: loop detected"},
		{tool: "read_file", args: map[string]any{"path": "/etc/passwd"}, verdict: "allow"},
	})

	var verdicts []toolguard.Verdict
	for _, e := range tr.Ledger() {
		verdicts = append(verdicts, e.Verdict)
	}
	assert.Equal(t, []toolguard.Verdict{toolguard.Allow, toolguard.Allow, toolguard.Hint, toolguard.Abort, toolguard.Allow}, verdicts)
}

func TestOtherMethodsPass(t *testing.T) {
	ts := &tools{}
	tr := toolguard.NewTracker(toolguard.Policy{})
	cs, _ := connect(t, newServer(ts, mcpsdk.Middleware(tr)))
	for range 5 {
		res, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		assert.Len(t, res.Tools, 5)
	}
	assert.Empty(t, tr.Ledger())
}

func TestFailuresAreRecorded(t *testing.T) {
	t.Run("error result", func(t *testing.T) {
		ts := &tools{}
		tr := toolguard.NewTracker(toolguard.Policy{MaxFailures: 1})
		cs, _ := connect(t, newServer(ts, mcpsdk.Middleware(tr)))
		run(t, cs, ts, []step{
			{tool: "deploy", args: map[string]any{"target": "prod"}, verdict: "allow", isError: true,
				contains: []string{"permission denied"}},
			{tool: "deploy", args: map[string]any{"target": "production"}, verdict: "hint", reason: "repeated_failure"},
		})
		assert.True(t, tr.Ledger()[0].Done && tr.Ledger()[0].Failed)
	})
	t.Run("go error", func(t *testing.T) {
		ts := &tools{}
		tr := toolguard.NewTracker(toolguard.Policy{MaxFailures: 1})
		cs, _ := connect(t, newServer(ts, mcpsdk.Middleware(tr)))
		run(t, cs, ts, []step{
			{tool: "broken", args: map[string]any{"x": "1"}, verdict: "allow", protoErr: true},
			{tool: "broken", args: map[string]any{"x": "2"}, verdict: "hint", reason: "repeated_failure"},
			{tool: "broken", args: map[string]any{"x": "3"}, verdict: "allow", protoErr: true},
			{tool: "broken", args: map[string]any{"x": "4"}, verdict: "abort", reason: "repeated_failure"},
		})
	})
	t.Run("panic", func(t *testing.T) {
		ts := &tools{}
		tr := toolguard.NewTracker(toolguard.Policy{MaxFailures: 1})
		cs, _ := connect(t, newServer(ts, mcpsdk.Middleware(tr)))
		run(t, cs, ts, []step{
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
	cs, _ := connect(t, newServer(ts, mcpsdk.Middleware(tr)))
	args := func(i int) map[string]any { return map[string]any{"path": fmt.Sprint("/f", i)} }
	run(t, cs, ts, []step{
		{tool: "read_file", args: args(1), verdict: "allow"},
		{tool: "read_file", args: args(2), verdict: "allow", contains: []string{"contents of /f2", "You have used 2 of 4 tool calls. Start wrapping up."}},
		{tool: "read_file", args: args(3), verdict: "allow"},
		{tool: "read_file", args: args(4), verdict: "allow", contains: []string{"Summarize your work and answer the user's question."}},
		{tool: "read_file", args: args(5), verdict: "abort", reason: "budget", contains: []string{"STOP: toolguard has stopped this tool"}, absent: "toolguard: "},
	})
	res, err := call(cs, "read_file", args(6))
	require.NoError(t, err)
	assert.Len(t, res.Content, 1)
}

func TestNilTrackerRunsUnguarded(t *testing.T) {
	ts := &tools{}
	mw := mcpsdk.MiddlewareFunc(func(context.Context, *mcp.CallToolRequest) *toolguard.Tracker { return nil })
	cs, _ := connect(t, newServer(ts, mw, mcpsdk.MiddlewareFunc(nil), mcpsdk.Middleware(nil)))
	same := map[string]any{"path": "/x"}
	steps := make([]step, 6)
	for i := range steps {
		steps[i] = step{tool: "read_file", args: same, verdict: "allow"}
	}
	run(t, cs, ts, steps)
}

func TestProgressTokenIsTheCallID(t *testing.T) {
	ts := &tools{}
	tr := toolguard.NewTracker(toolguard.Policy{})
	cs, _ := connect(t, newServer(ts, mcpsdk.Middleware(tr)))
	p := &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/a"}}
	p.SetProgressToken("tok-7")
	_, err := cs.CallTool(context.Background(), p)
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
	cs, _ := connect(t, newServer(ts, mcpsdk.Middleware(tr)))
	const workers, calls = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				path := fmt.Sprintf("/w%d/%d", w, i)
				res, err := call(cs, "read_file", map[string]any{"path": path})
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

func TestInputRequiredIsOneCall(t *testing.T) {
	// With a current client the client retries the call with the answers;
	// with a 2025-11-25 client the server asks the client and retries the
	// handler itself. Either way the call is checked and recorded once.
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("protocol "+version, func(t *testing.T) { testInputRequired(t, version) })
	}
}

func testInputRequired(t *testing.T, version string) {
	var runs atomic.Int64
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "deploy"},
		func(_ context.Context, req *mcp.CallToolRequest, _ targetArgs) (*mcp.CallToolResult, any, error) {
			runs.Add(1)
			if len(req.Params.InputResponses) == 0 {
				return &mcp.CallToolResult{
					InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Message: "Deploy?"}},
					RequestState:  "s1",
				}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil, nil
		})
	tr := toolguard.NewTracker(toolguard.Policy{})
	srv.AddReceivingMiddleware(mcpsdk.Middleware(tr))

	ct, st := mcp.NewInMemoryTransports()
	_, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	cl := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := cl.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	defer cs.Close()

	args := map[string]any{"target": "prod"}
	for i := range 2 {
		res, err := call(cs, "deploy", args)
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
	res, err := call(cs, "deploy", args)
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "hint", res.Meta[mcpsdk.MetaVerdict])
	assert.EqualValues(t, 4, runs.Load())
}
