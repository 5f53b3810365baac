// Package anthropicguard connects a toolguard.Tracker to the Messages API
// of github.com/anthropics/anthropic-sdk-go.
//
// Its import path is github.com/toolguard/toolguard/adapters/anthropicguard; the
// package is named anthropicguard so that it never collides with the SDK's
// package anthropic.
//
// One step of an agent loop, after the model answered with tool_use blocks:
//
//	messages = append(messages, msg.ToParam())
//	round := anthropicguard.Check(ctx, tracker, *msg)
//	blocks := round.Run(ctx, exec) // one tool_result block per tool_use block
//	if g := tracker.Guidance(); g.Phase != told {
//		told = g.Phase
//		if b, ok := anthropicguard.GuidanceBlock(g); ok {
//			blocks = append(blocks, b) // after the tool results, as the API requires
//		}
//	}
//	messages = append(messages, anthropic.NewUserMessage(blocks...))
//	if err := round.Err(); err != nil {
//		return err // a call was aborted: stop the turn
//	}
//	if tracker.Guidance().StripTools {
//		anthropicguard.StripTools(&params) // the model may no longer call tools
//	}
//
// The API requires the user message that follows an assistant message with
// tool_use blocks to begin with a tool_result block for each of them, and
// Run returns exactly those, skipped calls included: a skipped call's
// tool_result has is_error set and holds Decision.Message, which starts
// with toolguard.HintMarker and says the call was not executed.
//
// The phase texts (the nudge, the request to summarize) go as a text block
// after the tool results in that same user message: the Messages API has
// no system role inside the conversation (the system prompt is a request
// parameter, and changing it would invalidate the prompt cache), and a
// second user message in a row would only be merged into the first. These
// texts come from the harness, not from new user input: do not call
// Tracker.Reset for them.
package anthropicguard

import (
	"context"
	"errors"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/round"
)

// errNoExecutor is the outcome of an allowed call when Run has no executor.
var errNoExecutor = errors.New("anthropicguard: no executor")

// Calls returns the tool_use blocks of an assistant message as toolguard
// calls, in order: ID is the block's id, Tool its name and Args its input
// JSON (an empty input becomes nil). Other blocks (text, thinking, server
// tool uses, which the API runs itself) are left out.
func Calls(msg anthropic.Message) []toolguard.Call {
	var calls []toolguard.Call
	for _, b := range msg.Content {
		if b.Type != "tool_use" {
			continue
		}
		c := toolguard.Call{ID: b.ID, Tool: b.Name}
		if len(b.Input) > 0 {
			c.Args = b.Input
		}
		calls = append(calls, c)
	}
	return calls
}

// Round is the tool calls of one assistant message, checked together with
// Tracker.ShouldSkipRound. Calls and Decisions have the same length and
// order as the message's tool_use blocks.
type Round struct {
	Calls     []toolguard.Call
	Decisions []toolguard.Decision
	tracker   *toolguard.Tracker
}

// Check converts the tool_use blocks of an assistant message with Calls
// and checks them as one round (Tracker.WithRound and ShouldSkipContext
// with ctx, so hooks see the call's context). A nil Tracker allows every
// call.
func Check(ctx context.Context, t *toolguard.Tracker, msg anthropic.Message) *Round {
	calls := Calls(msg)
	return &Round{Calls: calls, Decisions: round.Check(ctx, t, calls), tracker: t}
}

// Err returns the error of the round's first aborted call (a
// *toolguard.LoopError, a *toolguard.BudgetError or an ErrInvalidCall
// error), or nil when no call was aborted. A loop that gets an error
// should stop the turn; the blocks from Run or SkipBlocks still answer
// every tool_use block, so the conversation can be continued later.
func (r *Round) Err() error { return round.Err(r.Decisions) }

// Skipped returns the number of calls that must not run (Hint or Abort).
func (r *Round) Skipped() int { return round.Skipped(r.Decisions) }

// SkipBlocks returns a tool_result block, with is_error set and the
// decision's message as its text, for every skipped call, in order. Use it
// when running the allowed calls yourself: the user message that answers
// the assistant message must hold the tool_result blocks of all its calls.
func (r *Round) SkipBlocks() []anthropic.ContentBlockParamUnion {
	return round.Skips(r.Calls, r.Decisions, toolResult)
}

// Run runs the round's allowed calls with exec, one after another, records
// each outcome with Tracker.RecordContext under ctx, and returns one tool_result block per
// call, in the order of the calls: the tool's result for a call that ran
// (is_error set, and "error: " with the error text before any result, for a
// failed call), the decision's message with is_error set for a skipped
// call. Put the blocks, in this order and before any other block, in the
// user message that follows the assistant message. Allowed calls run even
// when another call of the round was aborted, because the Tracker already
// counted them. Call Run once per round.
func (r *Round) Run(ctx context.Context, exec func(context.Context, toolguard.Call) (string, error)) []anthropic.ContentBlockParamUnion {
	return round.Run(ctx, r.tracker, exec, errNoExecutor, r.Calls, r.Decisions, toolResult)
}

// GuidanceBlock returns the text for the guidance's phase as a text block
// for the next user message, after its tool_result blocks: the nudge in
// PhaseNudge, the request to summarize from PhaseWindDown on. ok is false
// when there is nothing to say. The Tracker returns the same guidance until
// the phase changes: send it once per phase.
func GuidanceBlock(g toolguard.Guidance) (block anthropic.ContentBlockParamUnion, ok bool) {
	if g.Message == "" {
		return anthropic.ContentBlockParamUnion{}, false
	}
	return anthropic.NewTextBlock(g.Message), true
}

// StripTools sets the request's tool_choice to "none", so the model can no
// longer call tools; apply it when Guidance().StripTools is true. The tool
// definitions stay in the request: a conversation that holds tool_use and
// tool_result blocks needs them on some Anthropic-compatible endpoints,
// and removing them would invalidate the prompt cache. A nil p is ignored.
func StripTools(p *anthropic.MessageNewParams) {
	if p == nil {
		return
	}
	p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
}

// toolResult returns a tool_result block. An empty text is left out: the
// API rejects empty text blocks.
func toolResult(c toolguard.Call, text string, isError bool) anthropic.ContentBlockParamUnion {
	if text != "" {
		return anthropic.NewToolResultBlock(c.ID, text, isError)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{
		ToolUseID: c.ID,
		IsError:   anthropic.Bool(isError),
	}}
}
