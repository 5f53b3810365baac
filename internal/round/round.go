// Package round holds the SDK-independent part of the chat adapters'
// Round: the calls of one model response checked together, the allowed
// ones run and recorded, the skipped ones answered with a hint text. The
// adapters turn its texts into their SDK's tool result messages.
package round

import (
	"context"

	"github.com/toolguard/toolguard"
)

// Check returns the decisions for calls checked as one round with
// t.ShouldSkipRoundContext: the events carry ctx, and the Store is asked
// once for the round.
// A nil t allows every call; a nil ctx is context.Background().
func Check(ctx context.Context, t *toolguard.Tracker, calls []toolguard.Call) []toolguard.Decision {
	if t == nil {
		return make([]toolguard.Decision, len(calls))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	return t.ShouldSkipRoundContext(ctx, calls)
}

// Err returns the error of the first aborted decision, toolguard.ErrLoop
// when that decision has none, or nil when no decision aborts.
func Err(ds []toolguard.Decision) error {
	for _, d := range ds {
		if d.Verdict == toolguard.Abort {
			if d.Err != nil {
				return d.Err
			}
			return toolguard.ErrLoop
		}
	}
	return nil
}

// Skipped returns the number of decisions that skip their call (Hint or
// Abort).
func Skipped(ds []toolguard.Decision) int {
	n := 0
	for _, d := range ds {
		if d.Skip() {
			n++
		}
	}
	return n
}

// Result makes one tool result message of an adapter's SDK: c is the call
// it answers, text the result text and isError whether the call failed or
// was skipped.
type Result[T any] func(c toolguard.Call, text string, isError bool) T

// Skips returns mk(call, SkipText(d), true) for every skipped call, in
// order. calls and ds have the same length.
func Skips[T any](calls []toolguard.Call, ds []toolguard.Decision, mk Result[T]) []T {
	var out []T
	for i, d := range ds {
		if d.Skip() && i < len(calls) {
			out = append(out, mk(calls[i], SkipText(d), true))
		}
	}
	return out
}

// Run runs the allowed calls with exec, one after another, records each
// outcome with t.RecordContext(ctx, …) (when t is not nil), and returns one result per call, in
// order: mk(call, ResultText(res, err), err != nil) for a call that ran,
// mk(call, SkipText(d), true) for a skipped one. A nil exec fails every
// allowed call with noExec. calls and ds have the same length.
func Run[T any](ctx context.Context, t *toolguard.Tracker, exec func(context.Context, toolguard.Call) (string, error), noExec error, calls []toolguard.Call, ds []toolguard.Decision, mk Result[T]) []T {
	out := make([]T, len(calls))
	for i, c := range calls {
		var d toolguard.Decision
		if i < len(ds) {
			d = ds[i]
		}
		if d.Skip() {
			out[i] = mk(c, SkipText(d), true)
			continue
		}
		res, err := "", noExec
		if exec != nil {
			res, err = exec(ctx, c)
		}
		if t != nil {
			t.RecordContext(ctx, c, toolguard.Outcome{Result: res, Err: err})
		}
		out[i] = mk(c, ResultText(res, err), err != nil)
	}
	return out
}

// SkipText is the tool result of a skipped call: the decision's message,
// or a HintMarker text that says the call was not executed.
func SkipText(d toolguard.Decision) string {
	switch {
	case d.Message != "":
		return d.Message
	case d.Err != nil:
		return toolguard.HintMarker + " This call was not executed: " + d.Err.Error()
	}
	return toolguard.HintMarker + " This call was not executed."
}

// ResultText is the tool result of a call that ran: res, or for a failed
// call "error: " and the error text, then res on a line of its own.
func ResultText(res string, err error) string {
	if err == nil {
		return res
	}
	s := "error: " + err.Error()
	if res != "" {
		s += "\n" + res
	}
	return s
}
