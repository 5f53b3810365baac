package toolguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard/store"
)

func TestEvents(t *testing.T) {
	var got []Event
	var tr *Tracker
	tr = NewTracker(Policy{MaxCallsPerTurn: 2, OnEvent: func(e Event) {
		got = append(got, e)
		_ = tr.Guidance().Phase // hooks run outside the lock
	}})
	a := Call{ID: "call_1", Tool: "read", Args: json.RawMessage(`{"secret":"sk-1"}`)}
	tr.ShouldSkip(a)
	tr.Record(a, Outcome{Result: "token=abc"})
	b := Call{ID: "call_2", Tool: "read", Args: json.RawMessage(`{"p":2}`)}
	tr.ShouldSkip(b)
	tr.Record(b, Outcome{Err: errors.New("boom")})
	tr.ShouldSkip(Call{ID: "call_3", Tool: "read"})

	kinds := make([]EventKind, len(got))
	for i, e := range got {
		kinds[i] = e.Kind
	}
	assert.Equal(t, []EventKind{EventDecision, EventRecord, EventPhase, EventDecision, EventRecord, EventPhase, EventDecision, EventPhase}, kinds)
	assert.Equal(t, "call_1", got[0].CallID)
	assert.Equal(t, "read", got[0].Tool)
	assert.True(t, got[1].NewResult)
	assert.False(t, got[1].Failed)
	assert.Equal(t, PhaseNormal, got[2].From)
	assert.Equal(t, PhaseNudge, got[2].Phase)
	assert.True(t, got[4].Failed)
	assert.Equal(t, PhaseWindDown, got[5].Phase)
	assert.Equal(t, Abort, got[6].Decision.Verdict)
	assert.Equal(t, ReasonBudget, got[6].Decision.Reason)
	assert.Equal(t, PhaseWindDown, got[7].From)
	assert.Equal(t, PhaseExhausted, got[7].Phase)
	assert.Equal(t, "phase", EventPhase.String())

	// A Record after Reset is an event of the old turn.
	got = nil
	tr = NewTracker(Policy{OnEvent: func(e Event) { got = append(got, e) }})
	slow := Call{ID: "slow", Tool: "build"}
	tr.ShouldSkip(slow)
	tr.Reset()
	tr.Record(slow, Outcome{Result: "done"})
	require.Len(t, got, 2)
	assert.Equal(t, EventRecord, got[1].Kind)
	assert.Equal(t, 1, got[1].Turn)
	assert.Equal(t, got[0].Seq, got[1].Seq)
}

func TestSlogLogger(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tr := NewTracker(Policy{MaxRepeats: 1, Logger: logger})
	a := Call{ID: "call_9", Tool: "web_search", Args: json.RawMessage(`{"query":"password hunter2"}`)}
	tr.ShouldSkip(a)
	tr.Record(a, Outcome{Result: "secret result"})
	tr.ShouldSkip(a)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	var recs []map[string]any
	for _, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		recs = append(recs, m)
		assert.Equal(t, "web_search", m["gen_ai.tool.name"])
		assert.Equal(t, "call_9", m["gen_ai.tool.call.id"])
	}
	assert.Equal(t, "DEBUG", recs[0]["level"])
	assert.Equal(t, "DEBUG", recs[1]["level"])
	assert.Equal(t, "WARN", recs[2]["level"])
	assert.Equal(t, "hint", recs[2]["toolguard.verdict"])
	assert.Equal(t, "duplicate", recs[2]["toolguard.reason"])
	assert.NotContains(t, buf.String(), "hunter2")
	assert.NotContains(t, buf.String(), "secret result")

	// At Warn only firings are logged.
	buf.Reset()
	tr = NewTracker(Policy{MaxRepeats: 1, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	tr.ShouldSkip(a)
	tr.Record(a, Outcome{Result: "x"})
	assert.Empty(t, buf.String())
	tr.ShouldSkip(a)
	assert.Contains(t, buf.String(), "toolguard: call skipped")
}

func TestSummaryJSON(t *testing.T) {
	tr := NewTracker(Policy{MaxCallsPerTurn: 10, AgentQuota: &Quota{Tools: map[string]int{"bash": 5}}})
	run(t, tr, []step{
		fail(call("bash", `{"command":"make"}`), "make: no rule"),
		allow(call("bash", `{"command":"ls"}`), "Makefile.am"),
		allow(call("read", `{"path":"Makefile.am"}`), "SUBDIRS = src"),
		allow(call("read", `{"path":"Makefile.am"}`), "SUBDIRS = src"),
		hint(call("read", `{"path":"Makefile.am"}`), ReasonDuplicate),
	})
	s := tr.Summary()
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.EqualValues(t, 4, back["calls"])
	assert.EqualValues(t, 1, back["failed"])
	assert.EqualValues(t, 1, back["skipped"])
	budget := back["budget"].(map[string]any)
	assert.Equal(t, "calls", budget["unit"])
	assert.EqualValues(t, 6, budget["left"])
	assert.Equal(t, "normal", budget["phase"])
	tools := back["tools"].([]any)
	bash := tools[0].(map[string]any)
	assert.Equal(t, "bash", bash["tool"])
	assert.EqualValues(t, 5, bash["session_limit"])
	assert.Equal(t, "agent", bash["quota_from"])
	read := tools[1].(map[string]any)
	assert.Equal(t, map[string]any{"duplicate": float64(1)}, read["skip_reasons"])
	for _, secret := range []string{"Makefile.am", "SUBDIRS", "make: no rule"} {
		assert.NotContains(t, string(raw), secret)
		assert.NotContains(t, s.String(), secret)
	}
	assert.Contains(t, s.String(), "Budget: 4 of 10 tool calls used, 6 left (phase normal).")
	assert.Contains(t, s.Next, "'read'")
}

type ctxKey struct{}

// Events carry the context of the call they are about; a Store commit runs
// even when that context was cancelled after the call ran.
func TestEventsCarryTheCallContext(t *testing.T) {
	var got []Event
	mem := store.NewMemory(nil)
	tr := NewTracker(Policy{
		Store:        ctxStore{mem},
		SharedQuotas: []store.SharedQuota{{Name: "q", Limit: 5}},
		OnEvent:      func(e Event) { got = append(got, e) },
	})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "call-1"))
	c := Call{ID: "c1", Tool: "read"}
	require.Equal(t, Allow, tr.ShouldSkipContext(ctx, c).Verdict)
	cancel()
	tr.RecordContext(ctx, c, Outcome{Result: "ok"})
	tr.Record(Call{ID: "c2", Tool: "read"}, Outcome{Result: "ok"})

	require.Len(t, got, 3)
	for _, e := range got[:2] {
		assert.Equal(t, "call-1", e.Context.Value(ctxKey{}), e.Kind.String())
	}
	assert.Nil(t, got[2].Context.Value(ctxKey{}))
	for _, e := range got {
		assert.NotEqual(t, EventStore, e.Kind, "the commit must not fail on the cancelled context")
	}
	assert.Equal(t, 1, mem.Count(store.SharedQuota{Name: "q"}.Key("read")))
}

// ctxStore fails a commit whose context is done, as a network store does.
type ctxStore struct{ *store.Memory }

func (s ctxStore) Commit(ctx context.Context, rs []store.Reservation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Memory.Commit(ctx, rs)
}

// TestRoundDeliversEveryEvent: a round collects its events under one lock
// and delivers them after it, however many calls it has (a round of eight
// parallel calls once delivered five decisions of eight).
func TestRoundDeliversEveryEvent(t *testing.T) {
	var got []Event
	tr := NewTracker(Policy{MaxCallsPerTurn: 8, OnEvent: func(e Event) { got = append(got, e) }})
	calls := make([]Call, 12)
	for i := range calls {
		calls[i] = Call{ID: fmt.Sprintf("call_%d", i), Tool: "read", Args: json.RawMessage(fmt.Sprintf(`{"p":%d}`, i))}
	}
	ds := tr.ShouldSkipRound(calls)
	require.Len(t, got, len(calls), "one decision event per call")
	for i, e := range got {
		assert.Equal(t, EventDecision, e.Kind)
		assert.Equal(t, calls[i].ID, e.CallID)
		assert.Equal(t, ds[i], e.Decision)
	}
	assert.Equal(t, Allow, ds[7].Verdict)
	assert.NotEqual(t, Allow, ds[8].Verdict, "past the budget")
}
