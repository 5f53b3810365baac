package mcpgo_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpgo"
)

// benchPolicy lets every call of the benchmarks run: no budget, no quota.
var benchPolicy = toolguard.Policy{MaxCallsPerTurn: -1, SessionLimit: -1, LedgerSize: 1024}

// BenchmarkMiddleware measures what the guard adds to one call: the
// middleware around a handler that returns a fixed result.
func BenchmarkMiddleware(b *testing.B) {
	h := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("contents"), nil
	}
	for _, bc := range []struct {
		name string
		h    func() server.ToolHandlerFunc
	}{
		{"bare", func() server.ToolHandlerFunc { return h }},
		{"guarded", func() server.ToolHandlerFunc { return mcpgo.Middleware(toolguard.NewTracker(benchPolicy))(h) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := bc.h()
			req := mcp.CallToolRequest{}
			req.Params.Name = "read_file"
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				req.Params.RawArguments = []byte(`{"path":"/f` + strconv.Itoa(i) + `"}`)
				if res, err := h(ctx, req); err != nil || res.IsError {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCall measures one tools/call through the in-process client, with
// and without the guard.
func BenchmarkCall(b *testing.B) {
	for _, bc := range []struct {
		name string
		mw   func() server.ToolHandlerMiddleware
	}{
		{"unguarded", func() server.ToolHandlerMiddleware { return mcpgo.Middleware(nil) }},
		{"guarded", func() server.ToolHandlerMiddleware { return mcpgo.Middleware(toolguard.NewTracker(benchPolicy)) }},
		{"sessions", func() server.ToolHandlerMiddleware {
			return mcpgo.NewSessions(benchPolicy, mcpgo.SessionOptions{}).Middleware()
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := connect(b, newServer(&tools{}, server.WithToolHandlerMiddleware(bc.mw())))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				res, err := call(c, "read_file", map[string]any{"path": "/f" + strconv.Itoa(i)})
				if err != nil || res.IsError {
					b.Fatal(err, text(res))
				}
			}
		})
	}
}
