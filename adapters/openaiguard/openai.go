// Package openaiguard connects a toolguard.Tracker to the Chat Completions
// API and the Responses API of github.com/openai/openai-go/v3.
//
// Its import path is github.com/toolguard/toolguard/adapters/openaiguard; the
// package is named openaiguard so that it never collides with the SDK's
// package openai.
//
// One step of an agent loop, after the model answered with tool calls:
//
//	msg := completion.Choices[0].Message
//	messages = append(messages, msg.ToParam())
//	round := openaiguard.Check(ctx, tracker, msg)
//	messages = append(messages, round.Run(ctx, exec)...) // one tool message per tool call
//	if err := round.Err(); err != nil {
//		return err // a call was aborted: stop the turn
//	}
//	if g := tracker.Guidance(); g.Phase != told {
//		told = g.Phase
//		if m, ok := openaiguard.GuidanceMessage(g); ok {
//			messages = append(messages, m) // the nudge or the wind-down, once
//		}
//	}
//	if tracker.Guidance().StripTools {
//		openaiguard.StripTools(&params) // the next request goes without tools
//	}
//
// For the Responses API, CheckResponse does the same for the function_call
// and custom_tool_call items of a response, and its Run returns one
// function_call_output (or custom_tool_call_output) item per call; see
// CheckResponse.
//
// Every tool call of the assistant message is answered by a tool message,
// skipped calls included, so the conversation stays valid for the API: a
// skipped call's tool message holds Decision.Message, which starts with
// toolguard.HintMarker and says the call was not executed.
//
// The phase texts are sent as a user message, not a system or developer
// message: every Chat Completions server accepts a user message after tool
// messages, while a system message in the middle of a conversation is
// rejected by the chat templates of several open models served behind
// OpenAI-compatible endpoints, and the developer role is known only to
// OpenAI's own API. A user message is also what the model answers next,
// which is what the wind-down needs (a summary). These messages come from
// the harness, not from new user input: do not call Tracker.Reset for them.
package openaiguard

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/openai/openai-go/v3"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/round"
)

// errNoExecutor is the outcome of an allowed call when Run has no executor.
var errNoExecutor = errors.New("openaiguard: no executor")

// Calls returns the tool calls of an assistant message as toolguard calls,
// in order: ID is the tool call's id, Tool the function's name and Args its
// arguments JSON as the model wrote it (empty arguments become nil). A
// custom tool call's free-text input becomes a JSON string, so identical
// inputs still compare equal. Tool calls of an unknown type keep their id
// and have no tool name, which the Tracker refuses with ErrInvalidCall.
func Calls(msg openai.ChatCompletionMessage) []toolguard.Call {
	if len(msg.ToolCalls) == 0 {
		return nil
	}
	calls := make([]toolguard.Call, len(msg.ToolCalls))
	for i, tc := range msg.ToolCalls {
		c := toolguard.Call{ID: tc.ID}
		switch tc.Type {
		case "custom":
			c.Tool = tc.Custom.Name
			c.Args, _ = json.Marshal(tc.Custom.Input) // a string always marshals
		default: // "function", and "" from servers that omit the type
			c.Tool = tc.Function.Name
			if tc.Function.Arguments != "" {
				c.Args = json.RawMessage(tc.Function.Arguments)
			}
		}
		calls[i] = c
	}
	return calls
}

// Round is the tool calls of one assistant message, checked together as
// one round. Calls and Decisions have the same length and order as the
// message's tool calls.
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
// error), or nil when no call was aborted. A loop that gets an error
// should stop the turn; the messages from Run or SkipMessages still answer
// every tool call, so the conversation can be continued later.
func (r *Round) Err() error { return round.Err(r.Decisions) }

// Skipped returns the number of calls that must not run (Hint or Abort).
func (r *Round) Skipped() int { return round.Skipped(r.Decisions) }

// SkipMessages returns a tool message for every skipped call, in order,
// with the decision's message as its content. Use it when running the
// allowed calls yourself (in parallel, say): answer those with
// openai.ToolMessage, then Record their outcomes with the Tracker.
func (r *Round) SkipMessages() []openai.ChatCompletionMessageParamUnion {
	return round.Skips(r.Calls, r.Decisions, toolMessage)
}

// Run runs the round's allowed calls with exec, one after another, records
// each outcome with Tracker.RecordContext under ctx, and returns one tool message per tool
// call, in the order of the calls: the tool's result for a call that ran
// (for a failed call, "error: " and the error text, then any result), the
// decision's message for a skipped call. Allowed calls run even when
// another call of the round was aborted, because the Tracker already
// counted them. Call Run once per round.
func (r *Round) Run(ctx context.Context, exec func(context.Context, toolguard.Call) (string, error)) []openai.ChatCompletionMessageParamUnion {
	return round.Run(ctx, r.tracker, exec, errNoExecutor, r.Calls, r.Decisions, toolMessage)
}

// GuidanceMessage returns the text for the guidance's phase as a user
// message: the nudge in PhaseNudge, the request to summarize from
// PhaseWindDown on. ok is false when there is nothing to say. The Tracker
// returns the same guidance until the phase changes: send it once per
// phase.
func GuidanceMessage(g toolguard.Guidance) (msg openai.ChatCompletionMessageParamUnion, ok bool) {
	if g.Message == "" {
		return openai.ChatCompletionMessageParamUnion{}, false
	}
	return openai.UserMessage(g.Message), true
}

// StripTools removes the tools from a request, with the fields that are
// only valid next to tools (tool_choice, parallel_tool_calls). Apply it
// when Guidance().StripTools is true. A nil p is ignored.
func StripTools(p *openai.ChatCompletionNewParams) {
	if p == nil {
		return
	}
	p.Tools = nil
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{}
	p.ParallelToolCalls = openai.ChatCompletionNewParams{}.ParallelToolCalls
}

// toolMessage returns the tool message that answers the tool call id. The
// Chat Completions API has no error flag on tool messages: a failure is
// told by the text.
func toolMessage(c toolguard.Call, text string, _ bool) openai.ChatCompletionMessageParamUnion {
	return openai.ToolMessage(text, c.ID)
}
