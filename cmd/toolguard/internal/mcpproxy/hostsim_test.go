package mcpproxy

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/quotafile"
)

// clock is a settable clock: hours of a host's life pass in a test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func policyFile(base *toolguard.Policy, path string) (toolguard.Policy, error) {
	if base == nil {
		return quotafile.Load(path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return toolguard.Policy{}, err
	}
	return quotafile.Apply(*base, path, data)
}

// chat is what one chat of a desktop host does through the proxy it keeps
// for its whole life: some work, then a model stuck on one call, and a
// failing deploy retried. Each call's verdict is returned, in order.
func chat(s *session, clk *clock, n int) []string {
	var got []string
	step := func(tool string, args map[string]any) {
		got = append(got, verdict(s.call(tool, args)))
		clk.advance(2 * time.Second) // the model's next response
	}
	step("write_note", map[string]any{"text": fmt.Sprint("chat ", n)})
	for range 4 {
		step("read_file", map[string]any{"path": "/etc/hosts"})
	}
	for range 5 {
		step("deploy", map[string]any{})
	}
	return got
}

// TestHostSimulation is a desktop host's day: one proxy process, one
// initialize, chat after chat with the user away between them. Every chat
// sees the same verdicts whatever came before, for each policy.
func TestHostSimulation(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"quota-rule", []string{"--preset", "quota-rule"}},
		{"turn-tracker", []string{"--preset", "turn-tracker"}},
		{"turn-budget", []string{"--preset", "turn-budget"}},
		{"loop-detection", []string{"--preset", "loop-detection"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			s := startEnv(t, nil, Env{Now: clk.Now, PolicyFile: policyFile}, tc.args...)
			s.initialize()
			s.request("tools/list", map[string]any{})
			first := chat(s, clk, 0)
			for n := 1; n < 40; n++ {
				// The user reads, thinks, opens the next chat: minutes to hours.
				clk.advance(time.Duration(2+n%7*13) * time.Minute)
				require.Equal(t, first, chat(s, clk, n), "chat %d", n)
			}
			t.Logf("%s: every chat saw %s", tc.name, strings.Join(first, ","))
			assert.Equal(t, "allow", first[1], "a call refused in the chat before runs in this one")
			if tc.name != "turn-budget" {
				assert.Contains(t, first[2:5], "hint", "the loop is stopped within the chat")
			}
		})
	}
}

// Chats closer than --idle-reset are one conversation: the loop state
// carries over (the proxy cannot tell them apart); one gap longer starts over.
func TestIdleReset(t *testing.T) {
	clk := newClock()
	s := startEnv(t, nil, Env{Now: clk.Now}, "--idle-reset", "30s")
	s.initialize()
	read := map[string]any{"path": "/etc/hosts"}
	var got []string
	for range 2 {
		got = append(got, verdict(s.call("read_file", read)))
	}
	clk.advance(29 * time.Second)
	got = append(got, verdict(s.call("read_file", read)))
	clk.advance(30 * time.Second)
	got = append(got, verdict(s.call("read_file", read)))
	assert.Equal(t, []string{"allow", "allow", "hint", "allow"}, got)

	// --idle-reset 0: one conversation for the proxy's life.
	clk2 := newClock()
	s2 := startEnv(t, nil, Env{Now: clk2.Now}, "--idle-reset", "0")
	s2.initialize()
	got = nil
	for range 4 {
		got = append(got, verdict(s2.call("read_file", read)))
		clk2.advance(time.Hour)
	}
	assert.Equal(t, []string{"allow", "allow", "hint", "abort"}, got)
}

// A call in flight is not idleness: a slow tool does not split a turn.
func TestIdleWaitsForCallsInFlight(t *testing.T) {
	clk := newClock()
	s := startEnv(t, nil, Env{Now: clk.Now}, "--idle-reset", "30s")
	s.initialize()
	read := map[string]any{"path": "/etc/hosts"}
	s.call("read_file", read)
	s.call("read_file", read)
	s.send(`{"jsonrpc":"2.0","id":"h","method":"tools/call","params":{"name":"hang","arguments":{}}}`)
	s.request("tools/list", map[string]any{}) // read after the hang call
	clk.advance(time.Hour)
	assert.Equal(t, "hint", verdict(s.call("read_file", read)), "the hung call keeps the conversation open")
}

// A client that names its conversations gets one Tracker each; an idle gap
// ends a turn there, not the conversation (session quotas go on).
func TestConversationIDs(t *testing.T) {
	clk := newClock()
	file := filepath.Join(t.TempDir(), "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte("tool_quota: {write_note: 3}\n"), 0o600))
	s := startEnv(t, nil, Env{Now: clk.Now, PolicyFile: policyFile}, "--policy", file)
	s.initialize()
	callIn := func(conv any, tool string, args map[string]any) string {
		return verdict(s.request("tools/call", map[string]any{"name": tool, "arguments": args,
			"_meta": map[string]any{MetaConversation: conv}}))
	}
	read := map[string]any{"path": "/etc/hosts"}
	var a, b []string
	for range 3 {
		a = append(a, callIn("chat-a", "read_file", read))
		b = append(b, callIn(7, "read_file", read))
	}
	assert.Equal(t, []string{"allow", "allow", "hint"}, a)
	assert.Equal(t, []string{"allow", "allow", "hint"}, b, "interleaved, each its own")

	// Session quota: write_note 3 per conversation, across turns.
	var w []string
	for i := range 4 {
		w = append(w, callIn("chat-a", "write_note", map[string]any{"text": fmt.Sprint(i)}))
		clk.advance(5 * time.Minute) // a new turn each time
	}
	assert.Equal(t, []string{"allow", "allow", "allow", "hint"}, w)
	assert.Equal(t, "allow", callIn("chat-b", "write_note", map[string]any{"text": "x"}), "another conversation has its own quota")
	// After the idle gap the turn of chat-a started over: its loop state is gone.
	assert.Equal(t, "allow", callIn("chat-a", "read_file", read))
}

// A new initialize (the client connecting again) ends every conversation.
func TestInitializeStartsOver(t *testing.T) {
	clk := newClock()
	s := startEnv(t, nil, Env{Now: clk.Now}, "--idle-reset", "0")
	s.initialize()
	read := map[string]any{"path": "/etc/hosts"}
	for range 3 {
		s.call("read_file", read)
	}
	// The server may refuse a second initialize; the proxy starts over anyway.
	s.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	assert.Equal(t, "allow", verdict(s.call("read_file", read)))
}

// TestManyChatsMemory runs 10,000 chats through one proxy and measures
// the proxy's heap after them: it does not grow with the chats.
//
//	go test -run TestManyChatsMemory -v ./internal/mcpproxy/
func TestManyChatsMemory(t *testing.T) {
	chats := 10000
	if testing.Short() || raceEnabled {
		chats = 500 // the figure comes from the run without -race (.ci/run)
	}
	clk := newClock()
	s := startEnv(t, nil, Env{Now: clk.Now, Stderr: io.Discard}) // the log is not the proxy's memory
	s.initialize()
	s.request("tools/list", map[string]any{})
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	read := map[string]any{"path": "/etc/hosts"}
	one := func(n int) {
		for range 3 {
			s.call("read_file", read)
		}
		s.call("write_note", map[string]any{"text": fmt.Sprint(n)})
		clk.advance(5 * time.Minute)
	}
	for n := range 100 { // warm up
		one(n)
	}
	before := heap()
	start := time.Now()
	for n := range chats {
		one(n)
	}
	elapsed := time.Since(start)
	after := heap()
	growth := int64(after) - int64(before)
	t.Logf("%d chats (%d calls) in %v (%v per call through proxy and server); heap %d B before, %d B after (%+d B)",
		chats, chats*4, elapsed.Round(time.Millisecond), (elapsed / time.Duration(chats*4)).Round(time.Microsecond), before, after, growth)
	assert.Less(t, growth, int64(1<<20), "the proxy's heap grows with the chats")
}
