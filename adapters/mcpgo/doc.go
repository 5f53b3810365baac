// Package mcpgo guards the tools of a github.com/mark3labs/mcp-go server
// with a toolguard.Tracker.
//
// Middleware (or MiddlewareFunc, or Sessions.Middleware) returns a
// server.ToolHandlerMiddleware. Add it with server.WithToolHandlerMiddleware
// or MCPServer.Use. For every tools/call it builds a toolguard.Call (the
// tool name, the arguments as JSON, the request's progress token as the
// call id when the client sent one) and asks the Tracker:
//
//   - Allow: the tool runs. Its outcome is recorded: a Go error or a result
//     with IsError is a failure, and the result's text content is the
//     result the Tracker compares to see progress.
//   - Hint: the tool does not run. The client gets a CallToolResult with
//     IsError set and the hint as text content. It starts with
//     toolguard.HintMarker ("[loop-detected]") and says that the call was
//     not executed.
//   - Abort: the tool does not run. The client gets a CallToolResult with
//     IsError set, the explanation, and a last line that tells the model
//     plainly to stop (an MCP server cannot end its client's loop); no Go
//     error text.
//
// A skipped call is never returned as a Go error: mcp-go turns a handler
// error into a JSON-RPC error, which most clients show to the user and not
// to the model, so the model would never learn why its call failed. Both
// skipped results carry the verdict and the reason in their _meta under
// MetaVerdict and MetaReason, so a harness on the client side can tell
// them from real tool errors and stop the turn on an abort.
//
// Which calls share a Tracker is up to Sessions: a key from
// SessionOptions.Key (an auth principal, HeaderKey, MetaKey), else the
// client's _meta MetaConversation, else the session where one exists.
// Protocol revision 2026-07-28 and stateless HTTP have no sessions: a call
// with none of these is keyed by the W3C trace id of its _meta
// "traceparent" (one agent run), and without one gets a Tracker of its own
// (UnkeyedDerive, the default: per-call checks and shared quotas apply,
// loops across calls go unnoticed, a warning is logged once), or with
// UnkeyedRefuse is not run and gets a tool error result the model reads
// (ErrNoKey; reason "no-key" in _meta). Two conversations never share a
// Tracker by accident, and no call runs unguarded.
//
// On the client side, Client guards CallTool with the Tracker of one
// conversation: a hint comes back as the result, an abort as the
// *toolguard.LoopError (or *toolguard.BudgetError). PolicyFor reads the
// server's readOnlyHint annotations from tools/list.
//
// When the Record of a call moves the turn into the nudge or the wind-down
// phase, the guidance for that phase (toolguard.Tracker.Guidance) is added
// to the call's result as one more text content: an MCP server has no other
// way to tell the model to wrap up.
//
// A call the client cancels (notifications/cancelled, or a client that goes
// away: the call's context is cancelled by the time the tool returns) has
// no result: it is recorded as toolguard.Outcome{Cancelled: true}, so the
// same call sent again is not a repeat, and its budget unit and quota
// counts are given back.
//
// A tool that asks the client for input (an input-required result) makes
// one call: it is checked when it is first called and recorded when the
// retry that carries the answers finishes.
//
// # Which Tracker
//
// Middleware uses one Tracker for every call. MiddlewareFunc chooses a
// Tracker for each request, for example from a header. Sessions keeps one
// Tracker per MCP client session (server.ClientSessionFromContext), forgets
// it when the session unregisters (Sessions.ForgetOnUnregister), and keeps
// at most SessionOptions.MaxSessions of them.
//
// # Read-only tools
//
// A tool whose calls change nothing (a read, a lookup, a status check) can
// say so with MCP's readOnlyHint annotation
// (mcp.WithReadOnlyHintAnnotation(true)). ReadOnlyHints copies those hints
// into a Policy as ToolPolicy.ReadOnly: pass it the mcp.Tool values given
// to AddTool (or those of MCPServer.ListTools) before making the Tracker or
// Sessions. The calls of a read-only tool are no progress for other calls,
// so a status check that the model repeats between reads is caught as a
// repeat; without the hint toolguard must assume that a tool in between
// may have changed what the status check returns. The entries of
// Policy.Tools that you set are kept.
//
// # Turns
//
// An MCP server does not see the user's turns: unless something calls
// Tracker.Reset, a session is one long turn, and Policy.MaxCallsPerTurn
// counts every call of the session. Set SessionOptions.IdleReset to start a
// new turn after a pause, call Reset on the Tracker yourself, or choose a
// budget that fits a whole session.
package mcpgo
