package mcpsdk_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpsdk"
	"github.com/toolguard/toolguard/internal/mcpnode"
)

// clientLoop calls tool with the same arguments four times through a
// guarded client and checks: two results, a hint result, an abort error.
func clientLoop(t *testing.T, g *mcpsdk.Client, tool string, args map[string]any) {
	t.Helper()
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	for i := range 2 {
		res, err := g.CallTool(ctx, params)
		require.NoError(t, err, "call %d", i+1)
		assert.False(t, res.IsError, "call %d", i+1)
		assert.Nil(t, res.Meta[mcpsdk.MetaVerdict], "call %d", i+1)
	}
	res, err := g.CallTool(ctx, params)
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "hint", res.Meta[mcpsdk.MetaVerdict])
	assert.Contains(t, text(res), "was not executed")

	res, err = g.CallTool(ctx, params)
	assert.Nil(t, res)
	var le *toolguard.LoopError
	require.ErrorAs(t, err, &le)
	assert.True(t, errors.Is(err, toolguard.ErrLoop))
	assert.Equal(t, tool, le.Tool)
}

func TestClientGuardsCallTool(t *testing.T) {
	ts := &tools{}
	srv := newServer(ts)
	mcp.AddTool(srv, &mcp.Tool{Name: "status", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	cs, _ := connect(t, srv)

	p, err := mcpsdk.PolicyFor(context.Background(), cs, toolguard.Policy{})
	require.NoError(t, err)
	assert.True(t, p.Tools["status"].ReadOnly, "readOnlyHint from tools/list")
	assert.False(t, p.Tools["read_file"].ReadOnly)

	g := mcpsdk.NewClient(cs, toolguard.NewTracker(p))
	clientLoop(t, g, "read_file", map[string]any{"path": "/etc/hosts"})
	assert.EqualValues(t, 2, ts.runs.Load(), "the hint and the abort did not reach the server")

	// A tool error result is recorded as a failure and handed back.
	res, err := g.CallTool(context.Background(), &mcp.CallToolParams{Name: "deploy", Arguments: map[string]any{"target": "prod"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	l := g.Tracker().Ledger()
	assert.True(t, l[len(l)-1].Done && l[len(l)-1].Failed)
}

func TestClientBudgetGuidance(t *testing.T) {
	ts := &tools{}
	cs, _ := connect(t, newServer(ts))
	g := mcpsdk.NewClient(cs, toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 2}))
	ctx := context.Background()
	_, err := g.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/a"}})
	require.NoError(t, err)
	res, err := g.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/b"}})
	require.NoError(t, err)
	assert.Contains(t, text(res), "answer the user's question")
	_, err = g.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/c"}})
	assert.ErrorIs(t, err, toolguard.ErrBudgetExhausted)
}

// The guarded client against a real third-party server from npm: the
// reference "everything" server over stdio.
func TestClientEverythingServer(t *testing.T) {
	mcpnode.Require(t)
	ctx := context.Background()
	cmd := exec.Command("node", filepath.Join(mcpnode.Dir(), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio")
	cl := mcp.NewClient(&mcp.Implementation{Name: "toolguard-test", Version: "1.0.0"}, nil)
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })

	p, err := mcpsdk.PolicyFor(ctx, cs, toolguard.Policy{})
	require.NoError(t, err)
	assert.True(t, p.Tools["echo"].ReadOnly, "the everything server marks echo read-only")
	clientLoop(t, mcpsdk.NewClient(cs, toolguard.NewTracker(p)), "echo", map[string]any{"message": "are we there yet?"})
}
