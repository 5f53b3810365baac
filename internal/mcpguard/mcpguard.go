// Package mcpguard holds the SDK-independent part of the MCP adapters'
// middleware: guarding one tools/call with a Tracker (check, run, record,
// add the phase guidance) and the text and _meta of a skipped call. The
// adapters supply their SDK's result type through Handler.
package mcpguard

import (
	"fmt"

	"github.com/toolguard/toolguard"
)

// The _meta keys of a result the middleware made for a skipped call.
const (
	// MetaVerdict holds the verdict: "hint" or "abort".
	MetaVerdict = "toolguard/verdict"
	// MetaReason holds the rule that fired, such as "duplicate" or "budget".
	MetaReason = "toolguard/reason"
)

// Handler is what Guard needs to know of an SDK's tool call result R.
type Handler[R any] struct {
	// Name starts the error texts Guard makes, such as "mcpgo".
	Name string
	// Skipped returns the result for a call that must not run.
	Skipped func(toolguard.Decision) R
	// Pending reports whether a result asks the client for input: the
	// call is not finished, and its retry with the answers records it.
	Pending func(R) bool
	// Outcome turns what the handler returned into an Outcome.
	Outcome func(R, error) toolguard.Outcome
	// WithText returns the result with one more text content, or the
	// result unchanged when it cannot hold one (a nil result).
	WithText func(R, string) R
}

// Guard checks the call c with t, runs next when it is allowed, records
// its outcome and, when that moves the turn into a later phase from
// PhaseNudge on, adds the phase's guidance text to a successful result.
// A retry (a call that carries the answers to an input-required result)
// continues a call that was already allowed: it is not checked again. If
// next panics or calls runtime.Goexit, Guard records a failure to free the
// call's budget slot and lets the panic go on.
func Guard[R any](t *toolguard.Tracker, c toolguard.Call, retry bool, next func() (R, error), h Handler[R]) (res R, err error) {
	var before toolguard.Phase
	if !retry {
		d := t.ShouldSkip(c)
		if d.Skip() {
			return h.Skipped(d), nil
		}
		before = d.Phase
	} else {
		before = t.Phase()
	}

	recorded := false
	defer func() {
		if !recorded {
			t.Record(c, toolguard.Outcome{Err: fmt.Errorf("%s: tool %q did not return", h.Name, c.Tool)})
		}
	}()
	res, err = next()
	recorded = true

	if err == nil && h.Pending(res) {
		return res, nil
	}
	phase := t.Record(c, h.Outcome(res, err))
	if err == nil && phase > before && phase >= toolguard.PhaseNudge {
		if g := t.Guidance(); g.Message != "" {
			res = h.WithText(res, g.Message)
		}
	}
	return res, err
}

// SkipText is the text of the result of a skipped call: the decision's
// message and, for an abort, its error on a line of its own.
func SkipText(d toolguard.Decision) string {
	text := d.Message
	if d.Verdict == toolguard.Abort && d.Err != nil {
		if text != "" {
			text += "\n"
		}
		text += d.Err.Error()
	}
	return text
}

// Meta returns the _meta entries of the result of a skipped call.
func Meta(d toolguard.Decision) map[string]any {
	return map[string]any{
		MetaVerdict: d.Verdict.String(),
		MetaReason:  d.Reason.String(),
	}
}
