package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/toolguard/toolguard"
)

// FuzzProxyMessages feeds malformed and odd JSON-RPC messages to both
// sides of the proxy, with a tools/call and a tools/list in flight.
// Properties: nothing panics; every message the proxy writes to the client
// itself is one line of JSON; what it forwards is the message or, for a
// tools/call response, valid JSON.
func FuzzProxyMessages(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":"not a list","isError":"yes"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom"}}`,
		`{"jsonrpc":"2.0","id":"l","result":{"tools":[{"name":"read_file","annotations":{"readOnlyHint":true}},{"name":7}]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":7}}`,
		`{"jsonrpc":"2.0","id":1,"result":null}`,
		`[1,2,3]`, `{`, `null`, `"x"`, `{"id":{"a":1},"method":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		msg = bytes.TrimSpace(msg)
		if len(msg) == 0 || bytes.ContainsRune(msg, '\n') {
			return // the line reader never hands these on
		}
		var out bytes.Buffer
		px := newProxy(toolguard.Policy{}, options{max: DefaultMaxMessage, idle: DefaultIdleReset}, &out, io.Discard)
		ctx := context.Background()
		px.clientMessage(ctx, []byte(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`))
		px.clientMessage(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a"}}}`))

		px.clientMessage(ctx, msg)
		fwd := px.serverMessage(ctx, msg)
		if !bytes.Equal(fwd, msg) && !json.Valid(fwd) {
			t.Fatalf("forwarded %q for %q", fwd, msg)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(line) > 0 && !json.Valid(line) {
				t.Fatalf("wrote %q for %q", line, msg)
			}
		}
	})
}
