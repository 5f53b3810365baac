// Command server is a plain, unguarded stdio MCP server built on the
// official Go SDK, for the tests of toolguard mcp-proxy: the proxy puts the
// guard in front of it. Its tools:
//
//	read_file {path}   "contents of PATH" (readOnlyHint)
//	write_note {text}  "saved" (changes something)
//	crash {}           the server exits with status 3 without answering
//	hang {}            never answers
//	echo_size {blob}   "got N bytes"
//
// HANG_IGNORES_CANCEL=1 makes hang ignore cancellation; HANG_AFTER_EOF=1
// keeps the server running after its input ends.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type pathArgs struct {
	Path string `json:"path"`
}

type noteArgs struct {
	Text string `json:"text"`
}

type blobArgs struct {
	Blob string `json:"blob"`
}

type none struct{}

type sizeArgs struct {
	Size int `json:"size"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "proxy-test-server", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file", Description: "reads a file", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
			return text("contents of " + in.Path), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "write_note", Description: "saves a note"},
		func(_ context.Context, _ *mcp.CallToolRequest, in noteArgs) (*mcp.CallToolResult, any, error) {
			return text("saved"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "exits"},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "hang", Description: "never answers"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			if os.Getenv("HANG_IGNORES_CANCEL") == "1" {
				select {}
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo_size", Description: "counts bytes"},
		func(_ context.Context, _ *mcp.CallToolRequest, in blobArgs) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprintf("got %d bytes", len(in.Blob))), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_tool", Description: "adds a tool (its clients are told the list changed)"},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(srv, &mcp.Tool{Name: "added", Description: "added at run time"},
				func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
					return text("added"), nil, nil
				})
			return text("added a tool"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "deploy", Description: "always fails"},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "permission denied"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "big", Description: "returns size bytes"},
		func(_ context.Context, _ *mcp.CallToolRequest, in sizeArgs) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", in.Size)), nil, nil
		})
	if addr := os.Getenv("HTTP_ADDR"); addr != "" {
		// Streamable HTTP on a loopback address; the first line of output
		// is the URL.
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("http://%s/mcp\n", ln.Addr())
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
			Stateless: os.Getenv("HTTP_STATELESS") == "1", JSONResponse: os.Getenv("HTTP_JSON") == "1"})
		log.Fatal(http.Serve(ln, protect(h, ln.Addr().String())))
	}
	err := srv.Run(context.Background(), &mcp.StdioTransport{})
	if os.Getenv("HANG_AFTER_EOF") == "1" {
		time.Sleep(time.Hour) // a server that does not exit when its input ends
	}
	if err != nil {
		log.Fatal(err)
	}
}

// protect asks for a bearer token among HTTP_TOKENS (comma-separated) when
// that is set, naming HTTP_AS as the authorization server in its protected
// resource metadata, as MCP's authorization asks of a server.
func protect(h http.Handler, addr string) http.Handler {
	tokens := os.Getenv("HTTP_TOKENS")
	if tokens == "" {
		return h
	}
	prm := "http://" + addr + "/.well-known/oauth-protected-resource"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"resource":"http://%s/mcp","authorization_servers":[%q]}`, addr, os.Getenv("HTTP_AS"))
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !slices.Contains(strings.Split(tokens, ","), tok) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+prm+`"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
