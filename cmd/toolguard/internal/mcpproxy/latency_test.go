package mcpproxy

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// directSession talks to the test server without the proxy.
func directSession(t *testing.T) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	cmd := exec.Command(serverBin)
	cmd.Stdin, cmd.Stdout = inR, outW
	require.NoError(t, cmd.Start())
	s := &session{t: t, in: inW, out: bufio.NewReader(outR), stderr: &syncBuffer{}, done: make(chan int, 1)}
	t.Cleanup(func() {
		inW.Close()
		_ = cmd.Wait()
		outW.Close()
	})
	return s
}

// TestProxyLatency measures what the proxy adds to a tools/call: the same
// calls to the test server, directly and through the proxy.
//
//	go test -run TestProxyLatency -v ./internal/mcpproxy/
func TestProxyLatency(t *testing.T) {
	n := 2000
	if testing.Short() || raceEnabled {
		n = 200
	}
	measure := func(s *session) time.Duration {
		s.initialize()
		for i := range 50 { // warm up
			s.call("echo_size", map[string]any{"blob": fmt.Sprint("w", i)})
		}
		start := time.Now()
		for i := range n {
			s.call("echo_size", map[string]any{"blob": fmt.Sprint(i)})
		}
		return time.Since(start) / time.Duration(n)
	}
	direct := measure(directSession(t))
	proxied := measure(start(t, nil))
	t.Logf("%d calls: %v per call direct, %v through the proxy (+%v)", n,
		direct.Round(time.Microsecond), proxied.Round(time.Microsecond), (proxied - direct).Round(time.Microsecond))
}
