package mcpsdk_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpsdk"
)

func TestReadOnlyHints(t *testing.T) {
	listFiles := &mcp.Tool{Name: "list_files", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	writeFile := &mcp.Tool{Name: "write_file", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, Title: "Write"}}
	bare := &mcp.Tool{Name: "status"} // no annotations at all

	t.Run("only a true hint is read-only", func(t *testing.T) {
		p := mcpsdk.ReadOnlyHints(toolguard.Policy{}, listFiles, writeFile, bare, nil)
		assert.Equal(t, map[string]toolguard.ToolPolicy{"list_files": {ReadOnly: true}}, p.Tools)
	})
	t.Run("no hinted tool leaves the policy as it was", func(t *testing.T) {
		p := mcpsdk.ReadOnlyHints(toolguard.Policy{MaxRepeats: 3}, writeFile, bare)
		assert.Nil(t, p.Tools)
		assert.Equal(t, 3, p.MaxRepeats)
	})
	t.Run("a name that would be a pattern is left out", func(t *testing.T) {
		p := mcpsdk.ReadOnlyHints(toolguard.Policy{}, &mcp.Tool{Name: "get*", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}})
		assert.Nil(t, p.Tools)
	})
	t.Run("the hint as a client lists it", func(t *testing.T) {
		srv := newServer(&tools{})
		(&tools{}).addStatus(srv)
		cs, _ := connect(t, srv)
		res, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		p := mcpsdk.ReadOnlyHints(toolguard.Policy{}, res.Tools...)
		assert.Equal(t, toolguard.ToolPolicy{ReadOnly: true}, p.Tools["list_files"])
		assert.Len(t, p.Tools, 1)
	})
}

type dirArgs struct {
	Dir string `json:"dir"`
}

// addStatus adds a status tool (no hint: it might change something) and a
// list_files tool annotated readOnlyHint: true, and returns their
// definitions.
func (ts *tools) addStatus(srv *mcp.Server) []*mcp.Tool {
	status := &mcp.Tool{Name: "status", Description: "build status", InputSchema: map[string]any{"type": "object"}}
	list := &mcp.Tool{Name: "list_files", Description: "lists a directory",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	srv.AddTool(status, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ts.runs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "build: failing"}}}, nil
	})
	mcp.AddTool(srv, list, func(_ context.Context, _ *mcp.CallToolRequest, in dirArgs) (*mcp.CallToolResult, any, error) {
		ts.runs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "files in " + in.Dir}}}, nil, nil
	})
	return []*mcp.Tool{status, list}
}

// TestReadOnlyHintsThroughTheMiddleware checks a status check repeated
// around reads: with the hints the reads are no progress and the third
// status call is a repeat; without them a read might have changed the
// world, so it runs.
func TestReadOnlyHintsThroughTheMiddleware(t *testing.T) {
	steps := func(third step) []step {
		return []step{
			{tool: "status", verdict: "allow"},
			{tool: "list_files", args: map[string]any{"dir": "a"}, verdict: "allow"},
			{tool: "status", verdict: "allow"},
			{tool: "list_files", args: map[string]any{"dir": "b"}, verdict: "allow"},
			third,
		}
	}
	t.Run("with the hints", func(t *testing.T) {
		ts := &tools{}
		srv := newServer(ts)
		policy := mcpsdk.ReadOnlyHints(toolguard.Policy{}, ts.addStatus(srv)...)
		require.True(t, policy.Tools["list_files"].ReadOnly)
		srv.AddReceivingMiddleware(mcpsdk.Middleware(toolguard.NewTracker(policy)))
		cs, _ := connect(t, srv)
		run(t, cs, ts, steps(step{tool: "status", verdict: "hint", reason: "duplicate",
			contains: []string{"Tool 'status' was already executed with identical parameters"}}))
	})
	t.Run("without them", func(t *testing.T) {
		ts := &tools{}
		srv := newServer(ts)
		ts.addStatus(srv)
		srv.AddReceivingMiddleware(mcpsdk.Middleware(toolguard.NewTracker(toolguard.Policy{})))
		cs, _ := connect(t, srv)
		run(t, cs, ts, steps(step{tool: "status", verdict: "allow", contains: []string{"build: failing"}}))
	})
	t.Run("per session", func(t *testing.T) {
		ts := &tools{}
		srv := newServer(ts)
		sessions := mcpsdk.NewSessions(mcpsdk.ReadOnlyHints(toolguard.Policy{}, ts.addStatus(srv)...), mcpsdk.SessionOptions{})
		srv.AddReceivingMiddleware(sessions.Middleware())
		cs, _ := connect(t, srv)
		run(t, cs, ts, steps(step{tool: "status", verdict: "hint", reason: "duplicate"}))
	})
}
