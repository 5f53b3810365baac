// Package mcpguard holds the SDK-independent part of the MCP adapters:
// guarding one tools/call with a Tracker (check, run, record, add the phase
// guidance), the text and _meta of a call that did not run, and the rules
// both sides of MCP share (protocol revisions, conversation keys). The
// adapters supply their SDK's result type through Handler.
package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard"
)

// The _meta keys of a result made for a call that did not run, in the
// reverse-DNS form MCP asks of implementation-specific keys.
const (
	// MetaVerdict holds the verdict: "hint" or "abort".
	MetaVerdict = "dev.toolguard/verdict"
	// MetaReason holds the rule that fired, such as "duplicate" or "budget".
	MetaReason = "dev.toolguard/reason"
	// MetaConversation is the _meta key of a request that the
	// conversation-key helpers read by convention: a client that sends the
	// same value with every tools/call of one conversation keeps one
	// Tracker on any transport.
	MetaConversation = "dev.toolguard/conversation"
	// MetaProtocolVersion is the _meta key of a request that carries its
	// protocol revision from 2026-07-28 on, where there is no initialize.
	MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
)

// MetaTraceparent is the request _meta key of W3C trace context, which a
// host that traces its agent runs sends with each call of a run.
const MetaTraceparent = "traceparent"

// TraceKey returns the conversation key of a W3C traceparent value v
// ("00-<trace id>-<parent id>-<flags>"): "trace:" and the trace id, or ""
// when v is not a valid traceparent. One trace is one agent run, so calls
// keyed by it never belong to two conversations.
func TraceKey(v any) string {
	s, ok := v.(string)
	if !ok || len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return ""
	}
	version, id := s[:2], s[3:35]
	if version == "ff" || (version == "00" && len(s) != 55) || (len(s) > 55 && s[55] != '-') ||
		!lowerHex(version) || !lowerHex(id) || !lowerHex(s[36:52]) || !lowerHex(s[53:55]) ||
		strings.Trim(id, "0") == "" || strings.Trim(s[36:52], "0") == "" {
		return ""
	}
	return "trace:" + id
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// PerRequestWarning is logged once per Sessions, at its first call that has
// no conversation key, no session and no trace: that call and every one
// like it gets a Tracker of its own.
const PerRequestWarning = "toolguard: tools/call without a conversation key, session or trace: each such call is guarded by a tracker of its own (per-call limits and shared quotas apply; loops across calls go unnoticed); have the client send _meta \"" + MetaConversation + "\" or traceparent, or set SessionOptions.Key"

// Stateless is the first protocol revision without initialize and
// sessions, whose results must carry resultType.
const Stateless = "2026-07-28"

// ErrNoKey is returned, with UnkeyedRefuse, for a tools/call for which a
// server guard found no conversation key (no key from the key function, no
// session, no trace): the call is not run, so that clients never share a
// Tracker. The adapters document how to supply a key.
var ErrNoKey = errors.New("toolguard: no conversation key for this tools/call: the transport has no session (stateless HTTP or protocol 2026-07-28) and the request no trace; set SessionOptions.Key, or SessionOptions.Unkeyed to UnkeyedDerive")

// NoKeyText is the tool result of a call refused with ErrNoKey, written
// for the model and for the operator who reads the transcript: the call did
// not run, and why.
const NoKeyText = "This call was not executed: toolguard on this MCP server cannot tell this conversation from " +
	"others (the request has no session and no conversation key), so it refuses calls rather than mix " +
	"conversations. Tell the user that the server's guard needs a conversation key: the client can send _meta " +
	"\"" + MetaConversation + "\" with each call, or the operator can set SessionOptions.Key."

// MetaReasonNoKey is the MetaReason of a call refused with ErrNoKey.
const MetaReasonNoKey = "no-key"

// StopText ends the text of an aborted call. An MCP server cannot end the
// client's agent loop, so an abort is a tool result that tells the model,
// in plain words, to stop.
const StopText = "STOP: toolguard has stopped this tool. Do not call it again in this conversation. " +
	"Answer the user now with what you have, and say what blocked you."

// Handler is what Guard needs to know of an SDK's tool call result R.
type Handler[R any] struct {
	// Name starts the error texts Guard makes, such as "mcpgo".
	Name string
	// Skipped returns what Guard returns for a call that must not run.
	Skipped func(toolguard.Decision) (R, error)
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
// ctx is the request's context, given to ShouldSkipContext and
// RecordContext. A retry (a call that carries the answers to an
// input-required result) continues a call that was already allowed: it is
// not checked again. A call whose ctx was cancelled by the time next
// returns (the client cancelled it or went away) is recorded as
// Outcome.Cancelled: it has no result. If next panics or calls runtime.Goexit, Guard records
// a failure to free the call's budget slot and lets the panic go on.
func Guard[R any](ctx context.Context, t *toolguard.Tracker, c toolguard.Call, retry bool, next func() (R, error), h Handler[R]) (res R, err error) {
	var before toolguard.Phase
	if !retry {
		d := t.ShouldSkipContext(ctx, c)
		if d.Skip() {
			return h.Skipped(d)
		}
		before = d.Phase
	} else {
		before = t.Guidance().Phase
	}

	recorded := false
	defer func() {
		if !recorded {
			t.RecordContext(context.WithoutCancel(ctx), c, toolguard.Outcome{Err: fmt.Errorf("%s: tool %q did not return", h.Name, c.Tool)})
		}
	}()
	res, err = next()
	recorded = true

	if errors.Is(context.Cause(ctx), context.Canceled) {
		// The client gave up on the call (notifications/cancelled, or it
		// went away): whatever next returned, no one reads it.
		t.RecordContext(context.WithoutCancel(ctx), c, toolguard.Outcome{Cancelled: true})
		return res, err
	}
	if err == nil && h.Pending(res) {
		return res, nil
	}
	phase := t.RecordContext(context.WithoutCancel(ctx), c, h.Outcome(res, err))
	if err == nil && phase > before && phase >= toolguard.PhaseNudge {
		if g := t.Guidance(); g.Message != "" {
			res = h.WithText(res, g.Message)
		}
	}
	return res, err
}

// SkipText is the text the model gets for a call that did not run: the
// decision's message and, for an abort, StopText on a line of its own. It
// never holds a Go error's text.
func SkipText(d toolguard.Decision) string {
	text := d.Message
	if text == "" {
		text = toolguard.HintMarker + " This tool call was not executed: toolguard could not check it."
	}
	if d.Verdict == toolguard.Abort {
		text += "\n" + StopText
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

// IsStateless reports whether the protocol revision v (a date string such
// as "2025-06-18") is Stateless or later. Revisions compare as strings.
func IsStateless(v string) bool { return v >= Stateless }
