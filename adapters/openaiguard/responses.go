package openaiguard

import (
	"context"
	"encoding/json"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/round"
)

// ResponseCalls returns the function_call and custom_tool_call items of a
// Responses API response as toolguard calls, in order: ID is the item's
// call_id (what its output item must name), Tool the tool's name and Args
// the function's arguments JSON as the model wrote it (empty arguments
// become nil); a custom tool's free-text input becomes a JSON string, so
// identical inputs still compare equal. Other items (messages, reasoning,
// the built-in tools that OpenAI runs itself) are left out.
func ResponseCalls(resp *responses.Response) []toolguard.Call {
	calls, _ := responseCalls(resp)
	return calls
}

// responseCalls is ResponseCalls with, for each call, whether it is a
// custom tool call (answered by a custom_tool_call_output item).
func responseCalls(resp *responses.Response) (calls []toolguard.Call, custom []bool) {
	if resp == nil {
		return nil, nil
	}
	for _, item := range resp.Output {
		switch item.Type {
		case "function_call":
			fc := item.AsFunctionCall()
			c := toolguard.Call{ID: fc.CallID, Tool: fc.Name}
			if fc.Arguments != "" {
				c.Args = json.RawMessage(fc.Arguments)
			}
			calls, custom = append(calls, c), append(custom, false)
		case "custom_tool_call":
			cc := item.AsCustomToolCall()
			args, _ := json.Marshal(cc.Input) // a string always marshals
			calls, custom = append(calls, toolguard.Call{ID: cc.CallID, Tool: cc.Name, Args: args}), append(custom, true)
		}
	}
	return calls, custom
}

// ResponseRound is the tool calls of one Responses API response, checked
// together. Calls and Decisions have the same length and order as the
// response's function_call and custom_tool_call items.
type ResponseRound struct {
	Calls     []toolguard.Call
	Decisions []toolguard.Decision
	custom    []bool
	tracker   *toolguard.Tracker
}

// CheckResponse converts the tool call items of a response with
// ResponseCalls and checks them as one round, with ctx (see Check). A nil
// Tracker allows every call.
//
// One step of a Responses API loop that chains responses with
// previous_response_id:
//
//	round := openaiguard.CheckResponse(ctx, tracker, resp)
//	input := round.Run(ctx, exec) // one function_call_output per call
//	if g := tracker.Guidance(); g.Phase != told {
//		told = g.Phase
//		if item, ok := openaiguard.GuidanceItem(g); ok {
//			input = append(input, item) // the nudge or the wind-down, once
//		}
//	}
//	if err := round.Err(); err != nil {
//		return err // a call was aborted: stop the turn
//	}
//	params.PreviousResponseID = openai.String(resp.ID)
//	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
//	if tracker.Guidance().StripTools {
//		openaiguard.StripResponseTools(&params)
//	}
//
// A harness that sends the whole history instead appends the response's
// output items and then these items.
func CheckResponse(ctx context.Context, t *toolguard.Tracker, resp *responses.Response) *ResponseRound {
	calls, custom := responseCalls(resp)
	return &ResponseRound{Calls: calls, Decisions: round.Check(ctx, t, calls), custom: custom, tracker: t}
}

// Err returns the error of the round's first aborted call, or nil; see
// Round.Err.
func (r *ResponseRound) Err() error { return round.Err(r.Decisions) }

// Skipped returns the number of calls that must not run (Hint or Abort).
func (r *ResponseRound) Skipped() int { return round.Skipped(r.Decisions) }

// SkipItems returns an output item for every skipped call, in order, with
// the decision's message as its output. Use it when running the allowed
// calls yourself: answer those with
// responses.ResponseInputItemParamOfFunctionCallOutput, then Record their
// outcomes with the Tracker.
func (r *ResponseRound) SkipItems() []responses.ResponseInputItemUnionParam {
	return round.Skips(r.Calls, r.Decisions, r.outputItem())
}

// Run runs the round's allowed calls with exec, one after another, records
// each outcome with Tracker.RecordContext under ctx, and returns one output
// item per call, in the order of the calls: function_call_output for a
// function call, custom_tool_call_output for a custom tool call. Its
// output is the tool's result for a call that ran (for a failed call,
// "error: " and the error text, then any result) and the decision's
// message for a skipped call. Allowed calls run even when another call of
// the round was aborted, because the Tracker already counted them. Call
// Run once per round.
func (r *ResponseRound) Run(ctx context.Context, exec func(context.Context, toolguard.Call) (string, error)) []responses.ResponseInputItemUnionParam {
	return round.Run(ctx, r.tracker, exec, errNoExecutor, r.Calls, r.Decisions, r.outputItem())
}

// outputItem returns the maker of the round's output items. The Responses
// API has no error flag on them: a failure is told by the text.
func (r *ResponseRound) outputItem() round.Result[responses.ResponseInputItemUnionParam] {
	custom := make(map[string]bool)
	for i, c := range r.Calls {
		if i < len(r.custom) && r.custom[i] {
			custom[c.ID] = true
		}
	}
	return func(c toolguard.Call, text string, _ bool) responses.ResponseInputItemUnionParam {
		if custom[c.ID] {
			return responses.ResponseInputItemParamOfCustomToolCallOutput(c.ID, text)
		}
		item := responses.ResponseInputItemParamOfFunctionCallOutput(text)
		item.OfFunctionCallOutput.CallID = param.NewOpt(c.ID)
		return item
	}
}

// GuidanceItem returns the text for the guidance's phase as a user message
// item for the next request's input, after the output items: the nudge in
// PhaseNudge, the request to summarize from PhaseWindDown on. ok is false
// when there is nothing to say. Send it once per phase, and do not call
// Tracker.Reset for it: it comes from the harness, not from the user.
func GuidanceItem(g toolguard.Guidance) (item responses.ResponseInputItemUnionParam, ok bool) {
	if g.Message == "" {
		return responses.ResponseInputItemUnionParam{}, false
	}
	return responses.ResponseInputItemParamOfMessage(g.Message, responses.EasyInputMessageRoleUser), true
}

// StripResponseTools removes the tools from a Responses API request, with
// the fields that are only valid next to tools (tool_choice,
// parallel_tool_calls). Apply it when Guidance().StripTools is true. A nil p
// is ignored.
func StripResponseTools(p *responses.ResponseNewParams) {
	if p == nil {
		return
	}
	p.Tools = nil
	p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{}
	p.ParallelToolCalls = responses.ResponseNewParams{}.ParallelToolCalls
}
