package toolguard

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard/store"
)

// TestReusedCallIDStrandsNothing pins issue 29 item 6: two calls checked
// with the same id (a harness that reuses ids), the second recorded with
// the id and the first without one. The Record with the id completed the
// first call (the first pending call with that id), the Record without
// one then found no call and booked a new one: 4 ledger entries for 3
// calls, and the second call's reservation was never committed, so its
// unit came back and a 4th call was allowed against a limit of 3. A
// Record now completes the call with its id and its arguments first.
func TestReusedCallIDStrandsNothing(t *testing.T) {
	mem := newHeldStore(nil)
	tr := NewTracker(Policy{Store: mem, SharedQuotas: []store.SharedQuota{{Name: "q", Limit: 3}}})
	a := Call{ID: "x", Tool: "read", Args: json.RawMessage(`{"path":"a"}`)}
	b := Call{ID: "x", Tool: "read", Args: json.RawMessage(`{"path":"b"}`)}
	c := Call{ID: "y", Tool: "read", Args: json.RawMessage(`{"path":"c"}`)}
	for _, call := range []Call{a, b, c} {
		require.Equal(t, Allow, tr.ShouldSkip(call).Verdict)
	}
	tr.Record(b, Outcome{Result: "rb"})
	tr.Record(Call{Tool: a.Tool, Args: a.Args}, Outcome{Result: "ra"}) // no id
	tr.Record(c, Outcome{Result: "rc"})

	l := tr.Ledger()
	assert.Len(t, l, 3, "one ledger entry per call")
	for _, e := range l {
		assert.True(t, e.Done && !e.Failed, "entry %d", e.Seq)
	}
	assert.Zero(t, mem.held(), "every reservation settled")
	assert.Equal(t, 3, mem.Count("quota:q"))
	d := tr.ShouldSkip(Call{ID: "z", Tool: "read", Args: json.RawMessage(`{"path":"d"}`)})
	assert.NotEqual(t, Allow, d.Verdict, "a 4th call against a limit of 3")
	t.Logf("ledger entries for 3 calls: %d; reservations left held: %d; 4th call: %v", len(l), mem.held(), d.Verdict)
}
