package round

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
)

// res is the result type the tests build with Run and Skips.
type res struct {
	ID, Text string
	IsError  bool
}

func mk(c toolguard.Call, text string, isError bool) res { return res{c.ID, text, isError} }

var errNoExec = errors.New("round: no executor")

func call(id string) toolguard.Call {
	return toolguard.Call{ID: id, Tool: "read", Args: json.RawMessage(`{"path":"/x"}`)}
}

func TestSkipText(t *testing.T) {
	cases := []struct {
		name string
		d    toolguard.Decision
		want string
	}{
		{"message", toolguard.Decision{Verdict: toolguard.Hint, Message: "[loop-detected] stop", Err: errors.New("x")}, "[loop-detected] stop"},
		{"error only", toolguard.Decision{Verdict: toolguard.Abort, Err: errors.New("toolguard: loop")}, toolguard.HintMarker + " This call was not executed: toolguard: loop"},
		{"nothing", toolguard.Decision{Verdict: toolguard.Hint}, toolguard.HintMarker + " This call was not executed."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SkipText(tc.d))
		})
	}
}

func TestResultText(t *testing.T) {
	cases := []struct {
		name string
		res  string
		err  error
		want string
	}{
		{"ok", "42", nil, "42"},
		{"empty", "", nil, ""},
		{"error", "", errors.New("boom"), "error: boom"},
		{"error with result", "partial", errors.New("boom"), "error: boom\npartial"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ResultText(tc.res, tc.err))
		})
	}
}

func TestErrAndSkipped(t *testing.T) {
	loop := &toolguard.LoopError{}
	cases := []struct {
		name    string
		ds      []toolguard.Decision
		err     error
		skipped int
	}{
		{"none", nil, nil, 0},
		{"all allowed", []toolguard.Decision{{}, {}}, nil, 0},
		{"hint", []toolguard.Decision{{}, {Verdict: toolguard.Hint}}, nil, 1},
		{"abort with error", []toolguard.Decision{{Verdict: toolguard.Hint}, {Verdict: toolguard.Abort, Err: loop}, {Verdict: toolguard.Abort, Err: errors.New("later")}}, loop, 3},
		{"abort without error", []toolguard.Decision{{Verdict: toolguard.Abort}}, toolguard.ErrLoop, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.err, Err(tc.ds))
			assert.Equal(t, tc.skipped, Skipped(tc.ds))
		})
	}
}

func TestRun(t *testing.T) {
	hint := toolguard.Decision{Verdict: toolguard.Hint, Message: "[loop-detected] again"}
	cases := []struct {
		name     string
		tracker  bool
		exec     func(context.Context, toolguard.Call) (string, error)
		ds       []toolguard.Decision // nil: from Check
		calls    []toolguard.Call
		want     []res
		recorded int
	}{
		{
			name:    "allowed calls run and are recorded",
			tracker: true,
			exec:    func(_ context.Context, c toolguard.Call) (string, error) { return "ran " + c.ID, nil },
			calls:   []toolguard.Call{call("1"), {ID: "2", Tool: "list"}},
			want:    []res{{"1", "ran 1", false}, {"2", "ran 2", false}},
			// Both calls are recorded in the ledger.
			recorded: 2,
		},
		{
			name:     "failures become error results",
			tracker:  true,
			exec:     func(context.Context, toolguard.Call) (string, error) { return "out", errors.New("boom") },
			calls:    []toolguard.Call{call("1")},
			want:     []res{{"1", "error: boom\nout", true}},
			recorded: 1,
		},
		{
			name:     "no executor",
			tracker:  true,
			calls:    []toolguard.Call{call("1")},
			want:     []res{{"1", "error: round: no executor", true}},
			recorded: 1,
		},
		{
			name:    "skipped calls do not run",
			exec:    func(context.Context, toolguard.Call) (string, error) { return "ran", nil },
			ds:      []toolguard.Decision{hint, {}},
			calls:   []toolguard.Call{call("1"), call("2")},
			want:    []res{{"1", "[loop-detected] again", true}, {"2", "ran", false}},
			tracker: false,
		},
		{
			name:  "missing decisions allow",
			exec:  func(context.Context, toolguard.Call) (string, error) { return "ran", nil },
			ds:    []toolguard.Decision{},
			calls: []toolguard.Call{call("1")},
			want:  []res{{"1", "ran", false}},
		},
		{
			name:  "empty round",
			calls: nil,
			want:  []res{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tr *toolguard.Tracker
			if tc.tracker {
				tr = toolguard.NewTracker(toolguard.Policy{})
			}
			ds := tc.ds
			if ds == nil {
				ds = Check(context.Background(), tr, tc.calls)
			}
			got := Run(context.Background(), tr, tc.exec, errNoExec, tc.calls, ds, mk)
			assert.Equal(t, tc.want, got)
			if tr != nil {
				assert.Len(t, tr.Ledger(), tc.recorded)
			}
		})
	}
}

func TestCheckAndSkips(t *testing.T) {
	// The same call three times in one round: the tracker allows the
	// first and skips the repeats.
	tr := toolguard.NewTracker(toolguard.Policy{})
	calls := []toolguard.Call{call("1"), call("2"), call("3")}
	ds := Check(context.Background(), tr, calls)
	require.Len(t, ds, 3)
	assert.Equal(t, toolguard.Allow, ds[0].Verdict)
	require.Positive(t, Skipped(ds))
	skips := Skips(calls, ds, mk)
	require.Len(t, skips, Skipped(ds))
	for _, s := range skips {
		assert.True(t, s.IsError)
		assert.Contains(t, s.Text, toolguard.HintMarker)
	}

	// A nil tracker allows everything.
	ds = Check(context.Background(), nil, calls)
	assert.Equal(t, make([]toolguard.Decision, 3), ds)
	assert.Empty(t, Skips(calls, ds, mk))
	assert.NoError(t, Err(ds))

	// More decisions than calls do not panic.
	assert.Empty(t, Skips(nil, []toolguard.Decision{{Verdict: toolguard.Hint}}, mk))
}

// ctxKey marks the context a test passes in, to see it in the events.
type ctxKey struct{}

func TestContextReachesEvents(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "turn-7")
	var seen []string
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: func(ev toolguard.Event) {
		v, _ := ev.Context.Value(ctxKey{}).(string)
		seen = append(seen, ev.Kind.String()+":"+v)
	}})
	calls := []toolguard.Call{call("1")}
	ds := Check(ctx, tr, calls)
	Run(ctx, tr, func(context.Context, toolguard.Call) (string, error) { return "x", nil }, errNoExec, calls, ds, mk)
	assert.Equal(t, []string{"decision:turn-7", "record:turn-7"}, seen)
}

func TestCheckIsOneRound(t *testing.T) {
	// With CountRounds a budget of one round lets both calls of the round
	// run; checked as two rounds, the second would be refused.
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 1, CountRounds: true})
	calls := []toolguard.Call{call("1"), {ID: "2", Tool: "list", Args: json.RawMessage(`{}`)}}
	ds := Check(context.Background(), tr, calls)
	assert.Zero(t, Skipped(ds))
}
