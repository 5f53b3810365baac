package einoguard_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	einoguard "github.com/toolguard/toolguard/adapters/einoguard"
)

// A caller of the middleware (Eino's ToolsNode, or an agent's tool
// endpoint) that reads one chunk of a guarded stream and drops it without
// Close must not leave a goroutine behind, and the call must not stay
// pending: it is recorded once the reader is collected.
func TestAbandonedStreamsLeakNothing(t *testing.T) {
	tracker := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: -1})
	next := func(_ context.Context, _ *compose.ToolInput) (*compose.StreamToolOutput, error) {
		return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{"a", "b", "c"})}, nil
	}
	endpoint := einoguard.Middleware(tracker).Streamable(next)

	const n = 200
	before := runtime.NumGoroutine()
	for i := 0; i < n; i++ {
		out, err := endpoint(context.Background(), &compose.ToolInput{
			Name: "tail", CallID: "t" + itoa(i), Arguments: `{"id":` + itoa(i) + `}`,
		})
		require.NoError(t, err)
		_, err = out.Result.Recv()
		require.NoError(t, err)
		// abandoned: no Close
	}
	pending := func() int {
		p := 0
		for _, e := range tracker.Ledger() {
			if e.Verdict == toolguard.Allow && !e.Done {
				p++
			}
		}
		return p
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && (runtime.NumGoroutine() > before+5 || pending() > 0) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before+5, "goroutines left by %d abandoned streams", n)
	require.Len(t, tracker.Ledger(), n)
	require.Zero(t, pending(), "calls still pending")
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			return string(b)
		}
	}
}
