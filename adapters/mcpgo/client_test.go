package mcpgo_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpgo"
	"github.com/toolguard/toolguard/internal/mcpnode"
)

func callReq(tool string, args map[string]any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	return req
}

// clientLoop calls tool with the same arguments four times through a
// guarded client and checks: two results, a hint result, an abort error.
func clientLoop(t *testing.T, g *mcpgo.Client, tool string, args map[string]any) {
	t.Helper()
	ctx := context.Background()
	for i := range 2 {
		res, err := g.CallTool(ctx, callReq(tool, args))
		require.NoError(t, err, "call %d", i+1)
		assert.False(t, res.IsError, "call %d", i+1)
		assert.Nil(t, meta(res, mcpgo.MetaVerdict), "call %d", i+1)
	}
	res, err := g.CallTool(ctx, callReq(tool, args))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "hint", meta(res, mcpgo.MetaVerdict))
	assert.Contains(t, text(res), "was not executed")

	res, err = g.CallTool(ctx, callReq(tool, args))
	assert.Nil(t, res)
	var le *toolguard.LoopError
	require.ErrorAs(t, err, &le)
	assert.True(t, errors.Is(err, toolguard.ErrLoop))
	assert.Equal(t, tool, le.Tool)
}

func TestClientGuardsCallTool(t *testing.T) {
	ts := &tools{}
	srv := newServer(ts)
	srv.AddTool(mcp.NewTool("status", mcp.WithReadOnlyHintAnnotation(true), mcp.WithIdempotentHintAnnotation(true)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	c := connect(t, srv)

	p, err := mcpgo.PolicyFor(context.Background(), c, toolguard.Policy{})
	require.NoError(t, err)
	assert.True(t, p.Tools["status"].ReadOnly, "readOnlyHint from tools/list")
	assert.False(t, p.Tools["read_file"].ReadOnly)

	g := mcpgo.NewClient(c, toolguard.NewTracker(p))
	clientLoop(t, g, "read_file", map[string]any{"path": "/etc/hosts"})
	assert.EqualValues(t, 2, ts.runs.Load(), "the hint and the abort did not reach the server")

	res, err := g.CallTool(context.Background(), callReq("deploy", map[string]any{"target": "prod"}))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	l := g.Tracker().Ledger()
	assert.True(t, l[len(l)-1].Done && l[len(l)-1].Failed)
}

func TestClientBudgetGuidance(t *testing.T) {
	c := connect(t, newServer(&tools{}))
	g := mcpgo.NewClient(c, toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 2}))
	ctx := context.Background()
	_, err := g.CallTool(ctx, callReq("read_file", map[string]any{"path": "/a"}))
	require.NoError(t, err)
	res, err := g.CallTool(ctx, callReq("read_file", map[string]any{"path": "/b"}))
	require.NoError(t, err)
	assert.Contains(t, text(res), "answer the user's question")
	_, err = g.CallTool(ctx, callReq("read_file", map[string]any{"path": "/c"}))
	assert.ErrorIs(t, err, toolguard.ErrBudgetExhausted)
}

// The guarded client against a real third-party server from npm: the
// reference "everything" server over stdio.
func TestClientEverythingServer(t *testing.T) {
	mcpnode.Require(t)
	ctx := context.Background()
	c, err := client.NewStdioMCPClient("node", nil, filepath.Join(mcpnode.Dir(), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "toolguard-test", Version: "1.0.0"}
	_, err = c.Initialize(ctx, init)
	require.NoError(t, err)

	p, err := mcpgo.PolicyFor(ctx, c, toolguard.Policy{})
	require.NoError(t, err)
	assert.True(t, p.Tools["echo"].ReadOnly, "the everything server marks echo read-only")
	clientLoop(t, mcpgo.NewClient(c, toolguard.NewTracker(p)), "echo", map[string]any{"message": "are we there yet?"})
}
