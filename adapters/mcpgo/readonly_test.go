package mcpgo_test

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpgo"
)

func TestReadOnlyHints(t *testing.T) {
	listFiles := mcp.NewTool("list_files", mcp.WithString("dir"), mcp.WithReadOnlyHintAnnotation(true))
	writeFile := mcp.NewTool("write_file", mcp.WithReadOnlyHintAnnotation(false))
	plain := mcp.NewTool("deploy") // NewTool sets readOnlyHint false
	bare := mcp.Tool{Name: "status"}
	require.Nil(t, bare.Annotations.ReadOnlyHint, "no hint at all")

	t.Run("only a true hint is read-only", func(t *testing.T) {
		p := mcpgo.ReadOnlyHints(toolguard.Policy{}, listFiles, writeFile, plain, bare)
		assert.Equal(t, map[string]toolguard.ToolPolicy{"list_files": {ReadOnly: true}}, p.Tools)
	})
	t.Run("no hinted tool leaves the policy as it was", func(t *testing.T) {
		p := mcpgo.ReadOnlyHints(toolguard.Policy{MaxRepeats: 3}, writeFile, plain, bare)
		assert.Nil(t, p.Tools)
		assert.Equal(t, 3, p.MaxRepeats)
	})
	t.Run("a name that would be a pattern is left out", func(t *testing.T) {
		p := mcpgo.ReadOnlyHints(toolguard.Policy{}, mcp.NewTool("get*", mcp.WithReadOnlyHintAnnotation(true)))
		assert.Nil(t, p.Tools)
	})
	t.Run("the tools of a server", func(t *testing.T) {
		srv := server.NewMCPServer("test", "1.0.0")
		ts := &tools{}
		ts.addStatus(srv)
		var registered []mcp.Tool
		for _, st := range srv.ListTools() {
			registered = append(registered, st.Tool)
		}
		p := mcpgo.ReadOnlyHints(toolguard.Policy{}, registered...)
		assert.Equal(t, map[string]toolguard.ToolPolicy{"list_files": {ReadOnly: true}}, p.Tools)
	})
}

// addStatus adds a status tool (no hint: it might change something) and a
// list_files tool annotated readOnlyHint: true, and returns their
// definitions.
func (ts *tools) addStatus(srv *server.MCPServer) []mcp.Tool {
	status := mcp.NewTool("status")
	list := mcp.NewTool("list_files", mcp.WithString("dir"), mcp.WithReadOnlyHintAnnotation(true))
	srv.AddTool(status, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ts.runs.Add(1)
		return mcp.NewToolResultText("build: failing"), nil
	})
	srv.AddTool(list, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ts.runs.Add(1)
		return mcp.NewToolResultText("files in " + req.GetString("dir", "")), nil
	})
	return []mcp.Tool{status, list}
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
		policy := mcpgo.ReadOnlyHints(toolguard.Policy{}, ts.addStatus(srv)...)
		require.True(t, policy.Tools["list_files"].ReadOnly)
		srv.Use(mcpgo.Middleware(toolguard.NewTracker(policy)))
		run(t, connect(t, srv), ts, steps(step{tool: "status", verdict: "hint", reason: "duplicate",
			contains: []string{"Tool 'status' was already executed with identical parameters"}}))
	})
	t.Run("without them", func(t *testing.T) {
		ts := &tools{}
		srv := newServer(ts)
		ts.addStatus(srv)
		srv.Use(mcpgo.Middleware(toolguard.NewTracker(toolguard.Policy{})))
		run(t, connect(t, srv), ts, steps(step{tool: "status", verdict: "allow", contains: []string{"build: failing"}}))
	})
	t.Run("per session", func(t *testing.T) {
		ts := &tools{}
		srv := newServer(ts)
		sessions := mcpgo.NewSessions(mcpgo.ReadOnlyHints(toolguard.Policy{}, ts.addStatus(srv)...), mcpgo.SessionOptions{})
		srv.Use(sessions.Middleware())
		run(t, connect(t, srv), ts, steps(step{tool: "status", verdict: "hint", reason: "duplicate"}))
	})
}
