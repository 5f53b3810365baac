package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
)

// result stands for an SDK's tool call result.
type result struct {
	texts   []string
	isError bool
	pending bool
	meta    map[string]any
}

var handler = Handler[*result]{
	Name: "test",
	Skipped: func(d toolguard.Decision) (*result, error) {
		return &result{texts: []string{SkipText(d)}, isError: true, meta: Meta(d)}, nil
	},
	Pending: func(r *result) bool { return r != nil && r.pending },
	Outcome: func(r *result, err error) toolguard.Outcome {
		switch {
		case err != nil:
			return toolguard.Outcome{Err: err}
		case r == nil:
			return toolguard.Outcome{Err: errors.New("test: no result")}
		}
		return toolguard.Outcome{Result: r.texts[0]}
	},
	WithText: func(r *result, text string) *result {
		if r == nil {
			return nil
		}
		out := *r
		out.texts = append(append([]string(nil), r.texts...), text)
		return &out
	},
}

// step is one call through Guard.
type step struct {
	args    string // the call's arguments; empty means {"n": step index}
	invalid bool   // the call has no tool name
	retry   bool
	res     *result // what next returns
	err     error
	skipped bool   // want: next did not run, the result is Skipped's
	verdict string // want: MetaVerdict of a skipped call
	texts   int    // want: number of texts in the result; 0 means not checked
	ledger  int    // want: ledger entries after the step
}

func TestGuard(t *testing.T) {
	ok := func() *result { return &result{texts: []string{"ok"}} }
	boom := errors.New("boom")
	cases := []struct {
		name   string
		policy toolguard.Policy
		steps  []step
	}{
		{
			name: "allowed calls run and are recorded",
			steps: []step{
				{res: ok(), texts: 1, ledger: 1},
				{res: ok(), texts: 1, ledger: 2},
			},
		},
		{
			name: "repeats are skipped",
			steps: []step{
				{args: `{"p":1}`, res: ok(), ledger: 1},
				{args: `{"p":1}`, res: ok(), ledger: 2},
				{args: `{"p":1}`, skipped: true, verdict: "hint", ledger: 3},
			},
		},
		{
			name:  "an invalid call aborts",
			steps: []step{{invalid: true, skipped: true, verdict: "abort", ledger: 1}},
		},
		{
			name: "a retry is not checked again",
			steps: []step{
				{args: `{"p":1}`, res: ok(), ledger: 1},
				{args: `{"p":1}`, res: &result{texts: []string{"?"}, pending: true}, ledger: 2},
				{args: `{"p":1}`, retry: true, res: ok(), texts: 1, ledger: 2},
			},
		},
		{
			name: "errors are returned as they are",
			steps: []step{
				{res: nil, err: boom, ledger: 1},
				{res: nil, ledger: 2},
			},
		},
		{
			name:   "the guidance is added once when the phase moves on",
			policy: toolguard.Policy{MaxCallsPerTurn: 4, NudgeRatio: 0.5},
			steps: []step{
				{res: ok(), texts: 1, ledger: 1},
				{res: ok(), texts: 2, ledger: 2}, // the nudge
				{res: ok(), texts: 1, ledger: 3},
				{res: ok(), texts: 2, ledger: 4}, // the wind-down
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := toolguard.NewTracker(tc.policy)
			for i, s := range tc.steps {
				c := toolguard.Call{Tool: "read", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
				if s.args != "" {
					c.Args = json.RawMessage(s.args)
				}
				if s.invalid {
					c.Tool = ""
				}
				ran := false
				got, err := Guard(context.Background(), tr, c, s.retry, func() (*result, error) { ran = true; return s.res, s.err }, handler)
				require.Equal(t, !s.skipped, ran, "step %d: ran", i)
				if s.skipped {
					require.NoError(t, err, "step %d", i)
					require.NotNil(t, got, "step %d", i)
					assert.True(t, got.isError, "step %d", i)
					assert.Equal(t, s.verdict, got.meta[MetaVerdict], "step %d", i)
					assert.NotEmpty(t, got.meta[MetaReason], "step %d", i)
				} else {
					require.Equal(t, s.err, err, "step %d", i)
				}
				if s.texts != 0 {
					require.Len(t, got.texts, s.texts, "step %d: %q", i, got.texts)
				}
				require.Len(t, tr.Ledger(), s.ledger, "step %d", i)
			}
		})
	}
}

func TestGuardPanic(t *testing.T) {
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 1})
	c := toolguard.Call{Tool: "read"}
	assert.PanicsWithValue(t, "handler", func() {
		_, _ = Guard(context.Background(), tr, c, false, func() (*result, error) { panic("handler") }, handler)
	})
	// The call was recorded as failed: it does not stay pending.
	l := tr.Ledger()
	require.Len(t, l, 1)
	assert.True(t, l[0].Done && l[0].Failed)
}

func TestSkipText(t *testing.T) {
	loop := errors.New("toolguard: loop detected: raw Go error text")
	none := toolguard.HintMarker + " This tool call was not executed: toolguard could not check it."
	cases := []struct {
		name string
		d    toolguard.Decision
		want string
	}{
		{"hint", toolguard.Decision{Verdict: toolguard.Hint, Message: "[loop-detected] m", Err: loop}, "[loop-detected] m"},
		{"abort", toolguard.Decision{Verdict: toolguard.Abort, Message: "[loop-detected] m", Err: loop}, "[loop-detected] m\n" + StopText},
		{"abort without message", toolguard.Decision{Verdict: toolguard.Abort, Err: loop}, none + "\n" + StopText},
		{"empty", toolguard.Decision{}, none},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := SkipText(tc.d)
			assert.Equal(t, tc.want, got)
			assert.NotContains(t, got, "raw Go error text")
		})
	}
}

func TestIsStateless(t *testing.T) {
	assert.False(t, IsStateless("2025-06-18"))
	assert.False(t, IsStateless(""))
	assert.True(t, IsStateless("2026-07-28"))
	assert.True(t, IsStateless("2027-01-01"))
}

func TestMeta(t *testing.T) {
	d := toolguard.Decision{Verdict: toolguard.Hint, Reason: toolguard.ReasonDuplicate}
	assert.Equal(t, map[string]any{MetaVerdict: "hint", MetaReason: "duplicate"}, Meta(d))
}

func TestTraceKey(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"00-" + id + "-00f067aa0ba902b7-01", "trace:" + id},
		{"00-" + id + "-00f067aa0ba902b7-00", "trace:" + id},
		{"01-" + id + "-00f067aa0ba902b7-01-future", "trace:" + id}, // a later version may add fields
		{"00-" + id + "-00f067aa0ba902b7-01-x", ""},                 // version 00 has none
		{"ff-" + id + "-00f067aa0ba902b7-01", ""},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"00-" + id + "-0000000000000000-01", ""},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", ""},
		{"00-" + id + "-00f067aa0ba902b7", ""},
		{"00_" + id + "_00f067aa0ba902b7_01", ""},
		{42, ""},
		{nil, ""},
	} {
		assert.Equal(t, tc.want, TraceKey(tc.v), "%v", tc.v)
	}
}
