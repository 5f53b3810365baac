// Package genaiguard connects a toolguard.Tracker to function calling with
// google.golang.org/genai, the Go client of the Gemini API (and of Gemini
// on Vertex AI).
//
// One step of an agent loop, after the model answered with function calls:
//
//	contents = append(contents, resp.Candidates[0].Content)
//	round := genaiguard.Check(ctx, tracker, resp)
//	parts := round.Run(ctx, exec) // one function response part per call
//	if g := tracker.Guidance(); g.Phase != told {
//		told = g.Phase
//		if p, ok := genaiguard.GuidancePart(g); ok {
//			parts = append(parts, p) // after the function responses
//		}
//	}
//	contents = append(contents, genai.NewContentFromParts(parts, genai.RoleUser))
//	if err := round.Err(); err != nil {
//		return err // a call was aborted: stop the turn
//	}
//	if tracker.Guidance().StripTools {
//		genaiguard.StripTools(config) // function calling mode NONE
//	}
//
// Every function call is answered by a function response, skipped calls
// included, with the call's id when it has one. The response follows the
// Gemini API's convention: {"output": result} for a call that ran,
// {"error": text} for a failed or skipped call; a skipped call's text is
// Decision.Message, which starts with toolguard.HintMarker and says the
// call was not executed. The phase texts go as a text part after the
// function responses, in the same user content: the Gemini API has no
// system role inside the conversation. They come from the harness, not from
// new user input: do not call Tracker.Reset for them.
package genaiguard

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/round"
	"google.golang.org/genai"
)

// errNoExecutor is the outcome of an allowed call when Run has no executor.
var errNoExecutor = errors.New("genaiguard: no executor")

// Calls returns the function calls of the response's first candidate as
// toolguard calls, in order: ID is the call's id (empty where the API sets
// none), Tool the function's name and Args its arguments as JSON (no
// arguments become nil). Arguments that cannot be encoded as JSON become
// nil too.
func Calls(resp *genai.GenerateContentResponse) []toolguard.Call {
	if resp == nil || len(resp.Candidates) == 0 || resp.Candidates[0] == nil || resp.Candidates[0].Content == nil {
		return nil
	}
	var calls []toolguard.Call
	for _, p := range resp.Candidates[0].Content.Parts {
		if p == nil || p.FunctionCall == nil {
			continue
		}
		fc := p.FunctionCall
		c := toolguard.Call{ID: fc.ID, Tool: fc.Name}
		if len(fc.Args) > 0 {
			if args, err := json.Marshal(fc.Args); err == nil {
				c.Args = args
			}
		}
		calls = append(calls, c)
	}
	return calls
}

// Round is the function calls of one model response, checked together.
// Calls and Decisions have the same length and order as its function calls.
type Round struct {
	Calls     []toolguard.Call
	Decisions []toolguard.Decision
	tracker   *toolguard.Tracker
}

// Check converts the function calls of a response with Calls and checks
// them as one round (Tracker.WithRound and ShouldSkipContext with ctx, so
// hooks see the call's context). A nil Tracker allows every call.
func Check(ctx context.Context, t *toolguard.Tracker, resp *genai.GenerateContentResponse) *Round {
	calls := Calls(resp)
	return &Round{Calls: calls, Decisions: round.Check(ctx, t, calls), tracker: t}
}

// Err returns the error of the round's first aborted call (a
// *toolguard.LoopError, a *toolguard.BudgetError or an ErrInvalidCall
// error), or nil. A loop that gets an error should stop the turn.
func (r *Round) Err() error { return round.Err(r.Decisions) }

// Skipped returns the number of calls that must not run (Hint or Abort).
func (r *Round) Skipped() int { return round.Skipped(r.Decisions) }

// SkipParts returns a function response part for every skipped call, in
// order. Use it when running the allowed calls yourself; then Record their
// outcomes with the Tracker.
func (r *Round) SkipParts() []*genai.Part {
	return round.Skips(r.Calls, r.Decisions, functionResponse)
}

// Run runs the round's allowed calls with exec, one after another, records
// each outcome with Tracker.RecordContext under ctx, and returns one
// function response part per call, in order. Call Run once per round.
func (r *Round) Run(ctx context.Context, exec func(context.Context, toolguard.Call) (string, error)) []*genai.Part {
	return round.Run(ctx, r.tracker, exec, errNoExecutor, r.Calls, r.Decisions, functionResponse)
}

// functionResponse is the function response part that answers c.
func functionResponse(c toolguard.Call, text string, isError bool) *genai.Part {
	key := "output"
	if isError {
		key = "error"
	}
	p := genai.NewPartFromFunctionResponse(c.Tool, map[string]any{key: text})
	p.FunctionResponse.ID = c.ID
	return p
}

// GuidancePart returns the text for the guidance's phase as a text part
// for the user content that carries the function responses, after them:
// the nudge in PhaseNudge, the request to summarize from PhaseWindDown on.
// ok is false when there is nothing to say. Send it once per phase.
func GuidancePart(g toolguard.Guidance) (part *genai.Part, ok bool) {
	if g.Message == "" {
		return nil, false
	}
	return genai.NewPartFromText(g.Message), true
}

// StripTools sets the request's function calling mode to NONE, so the
// model can no longer call functions; apply it when Guidance().StripTools
// is true. The function declarations stay, so the conversation's function
// calls and responses keep their declarations. A nil config is ignored.
func StripTools(config *genai.GenerateContentConfig) {
	if config == nil {
		return
	}
	if config.ToolConfig == nil {
		config.ToolConfig = &genai.ToolConfig{}
	}
	config.ToolConfig.FunctionCallingConfig = &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeNone}
}
