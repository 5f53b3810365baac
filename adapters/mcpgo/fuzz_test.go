package mcpgo_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/adapters/mcpgo"
)

// FuzzMiddlewareJSONRPC feeds malformed and odd JSON-RPC messages to a real
// mcp-go server with the guard installed (by conversation key, and by one
// shared tracker). Property: nothing panics, and every answer is JSON.
func FuzzMiddlewareJSONRPC(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a"},"_meta":{"dev.toolguard/conversation":"c1","progressToken":7}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"","arguments":null}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":"not an object"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a"},"inputResponses":{"x":{}},"requestState":"s"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_file","_meta":{"dev.toolguard/conversation":42}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":[]}`,
		`{"jsonrpc":"1.0","id":{},"method":7}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"\ud800"}}`,
		`null`, `{}`, ``, `"`, `{"id":1e999}`,
	} {
		f.Add([]byte(seed))
	}
	ts := &tools{}
	keyed := mcpgo.NewSessions(toolguard.Policy{}, mcpgo.SessionOptions{Key: mcpgo.MetaKey(mcpgo.MetaConversation), MaxSessions: 8})
	servers := []*server.MCPServer{
		newServer(ts, server.WithToolHandlerMiddleware(keyed.Middleware())),
		newServer(ts, server.WithToolHandlerMiddleware(mcpgo.Middleware(toolguard.NewTracker(toolguard.Policy{})))),
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, srv := range servers {
			resp := srv.HandleMessage(context.Background(), json.RawMessage(msg))
			if resp == nil {
				continue
			}
			if _, err := json.Marshal(resp); err != nil {
				t.Fatalf("the answer to %q is not JSON: %v", msg, err)
			}
		}
	})
}
