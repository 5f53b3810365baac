// Package goopenai connects a toolguard.Tracker to the Chat Completions
// client github.com/sashabaranov/go-openai.
//
// One step of an agent loop, after the model answered with tool calls:
//
//	msg := resp.Choices[0].Message
//	req.Messages = append(req.Messages, msg)
//	round := goopenai.Check(ctx, tracker, msg)
//	req.Messages = append(req.Messages, round.Run(ctx, exec)...) // one tool message per tool call
//	if err := round.Err(); err != nil {
//		return err // a call was aborted: stop the turn
//	}
//	if g := tracker.Guidance(); g.Phase != told {
//		told = g.Phase
//		if m, ok := goopenai.GuidanceMessage(g); ok {
//			req.Messages = append(req.Messages, m) // the nudge or the wind-down, once
//		}
//	}
//	if tracker.Guidance().StripTools {
//		goopenai.StripTools(&req) // the next request goes without tools
//	}
//
// Every tool call is answered by a tool message, skipped calls included, so
// the conversation stays valid for the API: a skipped call's tool message
// holds Decision.Message, which starts with toolguard.HintMarker and says
// the call was not executed. The phase texts go as a user message, for the
// reasons given in the openaiguard adapter: every OpenAI-compatible server
// accepts one after tool messages. They come from the harness, not from new
// user input: do not call Tracker.Reset for them.
package goopenai

import (
	"context"
	"errors"

	openai "github.com/sashabaranov/go-openai"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/round"
)

// errNoExecutor is the outcome of an allowed call when Run has no executor.
var errNoExecutor = errors.New("goopenai: no executor")

// emptyResult is the content of a tool message whose result is empty:
// go-openai leaves an empty content out, and the API requires one.
const emptyResult = "(no output)"

// Calls returns the tool calls of an assistant message as toolguard calls,
// in order: ID is the tool call's id, Tool the function's name and Args its
// arguments JSON as the model wrote it (empty arguments become nil). The
// deprecated function_call (without tool_calls) is not a tool call and is
// left out.
func Calls(msg openai.ChatCompletionMessage) []toolguard.Call {
	if len(msg.ToolCalls) == 0 {
		return nil
	}
	calls := make([]toolguard.Call, len(msg.ToolCalls))
	for i, tc := range msg.ToolCalls {
		calls[i] = toolguard.Call{ID: tc.ID, Tool: tc.Function.Name}
		if tc.Function.Arguments != "" {
			calls[i].Args = []byte(tc.Function.Arguments)
		}
	}
	return calls
}

// Round is the tool calls of one assistant message, checked together.
// Calls and Decisions have the same length and order as the message's tool
// calls.
type Round struct {
	Calls     []toolguard.Call
	Decisions []toolguard.Decision
	tracker   *toolguard.Tracker
}

// Check converts the tool calls of an assistant message with Calls and
// checks them as one round (Tracker.WithRound and ShouldSkipContext with
// ctx, so hooks see the call's context). A nil Tracker allows every call.
func Check(ctx context.Context, t *toolguard.Tracker, msg openai.ChatCompletionMessage) *Round {
	calls := Calls(msg)
	return &Round{Calls: calls, Decisions: round.Check(ctx, t, calls), tracker: t}
}

// Err returns the error of the round's first aborted call (a
// *toolguard.LoopError, a *toolguard.BudgetError or an ErrInvalidCall
// error), or nil. A loop that gets an error should stop the turn; the
// messages from Run or SkipMessages still answer every tool call.
func (r *Round) Err() error { return round.Err(r.Decisions) }

// Skipped returns the number of calls that must not run (Hint or Abort).
func (r *Round) Skipped() int { return round.Skipped(r.Decisions) }

// SkipMessages returns a tool message for every skipped call, in order.
// Use it when running the allowed calls yourself; then Record their
// outcomes with the Tracker.
func (r *Round) SkipMessages() []openai.ChatCompletionMessage {
	return round.Skips(r.Calls, r.Decisions, toolMessage)
}

// Run runs the round's allowed calls with exec, one after another, records
// each outcome with Tracker.RecordContext under ctx, and returns one tool
// message per call, in order: the tool's result for a call that ran (for a
// failed call, "error: " and the error text, then any result; "(no
// output)" for an empty result), the decision's message for a skipped call.
// Call Run once per round.
func (r *Round) Run(ctx context.Context, exec func(context.Context, toolguard.Call) (string, error)) []openai.ChatCompletionMessage {
	return round.Run(ctx, r.tracker, exec, errNoExecutor, r.Calls, r.Decisions, toolMessage)
}

// GuidanceMessage returns the text for the guidance's phase as a user
// message: the nudge in PhaseNudge, the request to summarize from
// PhaseWindDown on. ok is false when there is nothing to say. Send it once
// per phase.
func GuidanceMessage(g toolguard.Guidance) (msg openai.ChatCompletionMessage, ok bool) {
	if g.Message == "" {
		return openai.ChatCompletionMessage{}, false
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: g.Message}, true
}

// StripTools removes the tools from a request, with the fields only valid
// next to them (tool_choice, parallel_tool_calls, and the deprecated
// functions and function_call). Apply it when Guidance().StripTools is true.
// A nil req is ignored.
func StripTools(req *openai.ChatCompletionRequest) {
	if req == nil {
		return
	}
	req.Tools = nil
	req.ToolChoice = nil
	req.ParallelToolCalls = nil
	//lint:ignore SA1019 a request may still carry the deprecated fields: they are tools too
	req.Functions = nil
	//lint:ignore SA1019 the deprecated choice goes with them
	req.FunctionCall = nil
}

// toolMessage returns the tool message that answers the tool call id.
func toolMessage(c toolguard.Call, text string, _ bool) openai.ChatCompletionMessage {
	if text == "" {
		text = emptyResult
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: text, ToolCallID: c.ID}
}
