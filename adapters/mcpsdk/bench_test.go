package mcpsdk_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpsdk"
)

// benchPolicy lets every call of the benchmarks run: no budget, no quota.
var benchPolicy = toolguard.Policy{MaxCallsPerTurn: -1, SessionLimit: -1, LedgerSize: 1024}

// BenchmarkMiddleware measures what the guard adds to one call: the
// middleware around a handler that returns a fixed result.
func BenchmarkMiddleware(b *testing.B) {
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents"}}}, nil
	}
	for _, bc := range []struct {
		name string
		mw   func() mcp.Middleware
	}{
		{"bare", func() mcp.Middleware { return mcpsdk.Middleware(nil) }},
		{"guarded", func() mcp.Middleware { return mcpsdk.Middleware(toolguard.NewTracker(benchPolicy)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := bc.mw()(next)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
					Name:      "read_file",
					Arguments: []byte(`{"path":"/f` + strconv.Itoa(i) + `"}`),
				}}
				res, err := h(ctx, "tools/call", req)
				if err != nil || res.(*mcp.CallToolResult).IsError {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCall measures one tools/call through the in-memory transport,
// with and without the guard.
func BenchmarkCall(b *testing.B) {
	for _, bc := range []struct {
		name string
		mw   func() mcp.Middleware
	}{
		{"unguarded", func() mcp.Middleware { return mcpsdk.Middleware(nil) }},
		{"guarded", func() mcp.Middleware { return mcpsdk.Middleware(toolguard.NewTracker(benchPolicy)) }},
		{"sessions", func() mcp.Middleware { return mcpsdk.NewSessions(benchPolicy, mcpsdk.SessionOptions{}).Middleware() }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cs, _ := connect(b, newServer(&tools{}, bc.mw()))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				res, err := call(cs, "read_file", map[string]any{"path": "/f" + strconv.Itoa(i)})
				if err != nil || res.IsError {
					b.Fatal(err, text(res))
				}
			}
		})
	}
}
