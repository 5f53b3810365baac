package toolguard

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard/store"
)

// Each refusal is labelled with what happened: only the loop rules say
// loop-detected.
func TestMessageMarkers(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: 1})
	c := call("step", `{}`)
	require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
	tr.Record(c, Outcome{Result: "ok"})
	d := tr.ShouldSkip(call("step", `{"n":2}`))
	require.Equal(t, ReasonBudget, d.Reason)
	assert.Equal(t, "[budget-exhausted] All 1 available tool call for this turn were used. "+
		"This call was not executed. Summarize your work and answer the user's question.", d.Message)
	assert.NotContains(t, d.Message, HintMarker)
	assert.Equal(t, "toolguard: all 1 available tool call for this turn were used; this call was not executed: "+
		"summarize your work and answer the user's question", d.Err.Error())

	d = tr.ShouldSkip(Call{})
	assert.True(t, strings.HasPrefix(d.Message, "[invalid-call] "), d.Message)

	down := NewTracker(Policy{Store: failingStore{}, SharedQuotas: []store.SharedQuota{{Name: "fleet", Limit: 5}}})
	d = down.ShouldSkip(call("web_fetch", `{"url":"https://x.org"}`))
	require.Equal(t, Hint, d.Verdict)
	assert.True(t, strings.HasPrefix(d.Message, "[quota-unavailable] "), d.Message)

	tr = NewTracker(Policy{MaxRepeats: 1})
	tr.Record(c, Outcome{Result: "ok"})
	assert.True(t, strings.HasPrefix(tr.ShouldSkip(c).Message, HintMarker+" "))
}

type failingStore struct{}

func (failingStore) Reserve(context.Context, []store.Reservation) ([]store.Grant, error) {
	return nil, errors.New("connection refused")
}
func (failingStore) Commit(context.Context, []store.Reservation) error {
	return errors.New("connection refused")
}
func (failingStore) Release(context.Context, []store.Reservation) error {
	return errors.New("connection refused")
}

// A tool's own session quota is a session quota; counts of one are singular.
func TestQuotaMessages(t *testing.T) {
	assert.Equal(t, "[loop-detected] Tool 'Bash' has reached its session quota (agent quota: 1 call, 1 made). "+
		"This call was not executed. Do not call it again: report the progress so far, the budget state "+
		"(1 of 2 tool rounds left this turn) and the next narrower action instead.",
		quotaMessage("Bash", "agent", 1, 1, 1, 2, unitRounds))
	assert.Contains(t, quotaMessage("fetch", "shared tenant:acme:daily", 100, 100, 0, 0, unitCalls),
		"has reached the shared quota 'tenant:acme:daily' (100 calls, 100 made by every session that shares it)")
	assert.Contains(t, churnMessage("fetch", false, 1, 1), "fetched the same address once in the last 1 call ")
	assert.Contains(t, acrossMessage("bash", 1), "in each of the last 1 turn and")
	assert.Equal(t, "You have used 1 of 1 tool call. Start wrapping up.", nudgeMessage(1, 1, unitCalls))
}

// Ledger JSON holds the arguments' hash as hex, and reads it back.
func TestHashText(t *testing.T) {
	tr := NewTracker(Policy{})
	c := call("read_file", `{"path":"a"}`)
	tr.Record(c, Outcome{Result: "x"})
	e := tr.Ledger()[0]
	b, err := json.Marshal(e)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"args_hash":"`+e.ArgsHash.String()+`"`)
	assert.Len(t, e.ArgsHash.String(), 32)

	var back Entry
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, e.ArgsHash, back.ArgsHash)

	var h Hash
	assert.Error(t, h.UnmarshalText([]byte("abc")))
	assert.Error(t, h.UnmarshalText([]byte(strings.Repeat("zz", 16))))
	assert.Equal(t, Hash{}, h, "a failed decode leaves the hash as it was")
}
