// Command example starts an MCP server (official Go SDK) whose tools are
// guarded by toolguard, connects a client that keeps making the same call
// (as a stuck model would) through the in-memory transport, and prints what
// the client sees.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpsdk"
)

type readArgs struct {
	Path string `json:"path" jsonschema:"the file to read"`
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file", Description: "Read a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, in readArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents of " + in.Path}}}, nil, nil
		})
	// One tracker per session, forgotten when the session ends.
	sessions := mcpsdk.NewSessions(toolguard.Policy{}, mcpsdk.SessionOptions{})
	srv.AddReceivingMiddleware(sessions.Middleware())

	clientT, serverT := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, serverT, nil)
	if err != nil {
		return err
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "looping-client", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		return err
	}
	defer cs.Close()

	// A stuck model: the same call again and again, until the server stops it.
	for i := 1; i <= 6; i++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name:      "read_file",
			Arguments: map[string]any{"path": "notes.txt"},
		})
		if err != nil {
			return fmt.Errorf("call %d: protocol error: %w", i, err)
		}
		verdict, ok := res.Meta[mcpsdk.MetaVerdict].(string)
		if !ok {
			verdict = "ok"
		}
		fmt.Fprintf(w, "call %d: isError=%t verdict=%s\n", i, res.IsError, verdict)
		for _, content := range res.Content {
			if tc, ok := content.(*mcp.TextContent); ok {
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
