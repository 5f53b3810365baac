package clitest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"time"
)

// MCPServerEnv, set to 1 in its environment, makes the test binary a stdio
// MCP server (see TestMain): one tool, "run", which runs a shell command.
// mcphost's tools come only from MCP servers, so this is its shell.
const MCPServerEnv = "CLITEST_MCP_SERVER"

// ServeMCP serves the "run" tool on in and out (newline-delimited
// JSON-RPC, the stdio transport of every MCP revision) until in ends.
func ServeMCP(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
				Arguments       struct {
					Command string `json:"command"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue // a notification, or not JSON-RPC
		}
		var result any
		var rpcErr any
		switch req.Method {
		case "initialize":
			v := req.Params.ProtocolVersion
			if v == "" {
				v = "2025-06-18"
			}
			result = map[string]any{"protocolVersion": v, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "clitest-shell", "version": "1.0.0"}}
		case "ping":
			result = map[string]any{}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{
				"name": "run", "description": "Run a shell command in the project folder and return its output.",
				"inputSchema": map[string]any{"type": "object", "required": []string{"command"},
					"properties": map[string]any{"command": map[string]any{"type": "string"}}},
			}}}
		case "tools/call":
			if req.Params.Name != "run" {
				rpcErr = map[string]any{"code": -32602, "message": "unknown tool " + req.Params.Name}
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			b, err := exec.CommandContext(ctx, "/bin/sh", "-c", req.Params.Arguments.Command).CombinedOutput()
			cancel()
			text := string(b)
			if err != nil {
				text += "\n" + err.Error()
			}
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": err != nil}
		default:
			rpcErr = map[string]any{"code": -32601, "message": "method not found: " + req.Method}
		}
		msg := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if rpcErr != nil {
			msg["error"] = rpcErr
		} else {
			msg["result"] = result
		}
		if err := enc.Encode(msg); err != nil {
			return err
		}
	}
	return sc.Err()
}
