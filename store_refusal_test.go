package toolguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard/store"
)

// TestStoreDownIsNoAbort pins issue 29 item 8: a fail-closed refusal was
// an Abort, so one store stall stopped the agent's turn as a loop would.
// Now the model is told the quota cannot be checked (a Hint: the call
// did not run) and the turn goes on: a tool without shared counters still
// runs. A Policy with ActionAbort still aborts.
func TestStoreDownIsNoAbort(t *testing.T) {
	q := []store.SharedQuota{{Name: "fleet", Tools: []string{"web"}, Limit: 10}}
	tr := NewTracker(Policy{Store: &brokenStore{}, SharedQuotas: q})
	d := tr.ShouldSkip(call("web", `{"q":1}`))
	assert.Equal(t, Hint, d.Verdict)
	assert.Equal(t, ReasonToolLimit, d.Reason)
	require.ErrorIs(t, d.Err, store.ErrUnavailable)
	assert.Contains(t, d.Message, "cannot be checked")
	assert.Equal(t, PhaseNormal, d.Phase)
	// The turn goes on.
	run(t, tr, []step{allow(call("read", `{"path":"a"}`), "r")})
	assert.False(t, tr.Summary().Stopped, "the turn was not stopped")

	tr = NewTracker(Policy{Action: ActionAbort, Store: &brokenStore{}, SharedQuotas: q})
	d = tr.ShouldSkip(call("web", `{"q":1}`))
	assert.Equal(t, Abort, d.Verdict, "the user chose to abort at the first firing")
	require.ErrorIs(t, d.Err, store.ErrUnavailable)
}
