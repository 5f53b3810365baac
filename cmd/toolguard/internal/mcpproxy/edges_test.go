package mcpproxy

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawReply reads the next line from the proxy.
func (s *session) rawReply() string {
	s.t.Helper()
	ch := make(chan string, 1)
	go func() {
		line, _ := s.out.ReadString('\n')
		ch <- line
	}()
	select {
	case line := <-ch:
		return line
	case <-time.After(15 * time.Second):
		s.t.Fatalf("no reply; stderr: %s", s.stderr.String())
		return ""
	}
}

// A request over --max-message is answered with its id, even when the id
// comes after the large params (as the TypeScript SDK writes requests).
func TestOversizedRequestKeepsItsID(t *testing.T) {
	s := start(t, nil, "--max-message", "4096")
	s.initialize()
	blob := strings.Repeat("x", 10000)
	s.send(`{"method":"tools/call","params":{"name":"echo_size","arguments":{"blob":"` + blob + `","nested":{"id":99}}},"jsonrpc":"2.0","id":"late-id"}`)
	m := s.reply()
	assert.Equal(t, "late-id", m["id"], "%v", m)
	assert.EqualValues(t, -32600, m["error"].(map[string]any)["code"])
	s.send(`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"echo_size","arguments":{"blob":"` + blob + `"}}}`)
	assert.EqualValues(t, 41, s.reply()["id"])
	// The proxy still serves.
	assert.Equal(t, "got 3 bytes", resultText(s.call("echo_size", map[string]any{"blob": "abc"})))
}

// A server response over --max-message is replaced by an error result for
// its call, which the model reads; the call is booked as failed.
func TestOversizedResponseIsAnErrorResult(t *testing.T) {
	s := start(t, nil, "--max-message", "4096")
	s.initialize()
	m := s.call("big", map[string]any{"size": 10000})
	res, _ := m["result"].(map[string]any)
	require.NotNil(t, res, "%v", m)
	assert.Equal(t, true, res["isError"])
	assert.Contains(t, resultText(m), "larger than 4096 bytes")
	assert.Equal(t, 1000, len(resultText(s.call("big", map[string]any{"size": 1000}))))
}

// A JSON-RPC batch of tools/call is guarded call by call: the loop in it
// is refused, the rest run.
func TestBatchIsGuardedCallByCall(t *testing.T) {
	s := start(t, nil)
	m := s.request("initialize", map[string]any{"protocolVersion": "2025-03-26", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	require.NotNil(t, m["result"], "%v", m)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var calls []string
	for i := 1; i <= 4; i++ {
		calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":"b%d","method":"tools/call","params":{"name":"read_file","arguments":{"path":"/etc/hosts"}}}`, i))
	}
	s.send("[" + strings.Join(calls, ",") + "]")
	got := map[string]string{}
	for len(got) < 4 {
		line := s.rawReply()
		if strings.HasPrefix(line, "[") {
			var items []map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &items))
			for _, it := range items {
				got[it["id"].(string)] = verdict(it)
			}
			continue
		}
		var it map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &it))
		got[it["id"].(string)] = verdict(it)
	}
	assert.Equal(t, map[string]string{"b1": "allow", "b2": "allow", "b3": "hint", "b4": "abort"}, got)
}

// A call the client cancelled has no result: the same call sent again is
// not refused as a repeat "without a new result".
func TestCancelledCallsAreNotResults(t *testing.T) {
	s := start(t, nil)
	s.initialize()
	for _, id := range []string{"h1", "h2", "h3"} {
		// Sent from a goroutine: a refusal the test does not read yet must
		// not block the next line.
		go func() {
			_, _ = io.WriteString(s.in, `{"jsonrpc":"2.0","id":"`+id+`","method":"tools/call","params":{"name":"hang","arguments":{}}}`+"\n"+
				`{"jsonrpc":"2.0","id":"`+id+`-list","method":"tools/list","params":{}}`+"\n")
		}()
		for {
			m := s.reply()
			require.NotEqual(t, id, m["id"], "%s was refused: %v", id, m)
			if m["id"] == id+"-list" {
				break
			}
		}
		s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `"}}`)
	}
	assert.NotContains(t, s.stderr.String(), "call skipped")
}
