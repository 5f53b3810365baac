// Command example starts an mcp-go server whose tools are guarded by
// toolguard, connects a client that keeps making the same call (as a stuck
// model would) through the in-process transport, and prints what the
// client sees.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpgo"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	// One tracker per client session, dropped when the session ends.
	sessions := mcpgo.NewSessions(toolguard.Policy{}, mcpgo.SessionOptions{})
	hooks := &server.Hooks{}
	sessions.ForgetOnUnregister(hooks)

	srv := server.NewMCPServer("files", "1.0.0",
		server.WithHooks(hooks),
		server.WithToolHandlerMiddleware(sessions.Middleware()))
	srv.AddTool(mcp.NewTool("read_file", mcp.WithString("path", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("contents of " + req.GetString("path", "")), nil
		})

	c, err := client.NewInProcessClient(srv)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return err
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "looping-client", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return err
	}

	// A stuck model: the same call again and again, until the server stops it.
	for i := 1; i <= 6; i++ {
		req := mcp.CallToolRequest{}
		req.Params.Name = "read_file"
		req.Params.Arguments = map[string]any{"path": "notes.txt"}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return fmt.Errorf("call %d: protocol error: %w", i, err)
		}
		verdict := "ok"
		if res.Meta != nil {
			if v, ok := res.Meta.AdditionalFields[mcpgo.MetaVerdict].(string); ok {
				verdict = v
			}
		}
		fmt.Fprintf(w, "call %d: isError=%t verdict=%s\n", i, res.IsError, verdict)
		for _, content := range res.Content {
			if tc, ok := mcp.AsTextContent(content); ok {
				for _, line := range strings.Split(tc.Text, "\n") {
					fmt.Fprintf(w, "  %s\n", line)
				}
			}
		}
		if verdict == "abort" {
			fmt.Fprintln(w, "the harness stops the turn")
			break
		}
	}
	return nil
}
