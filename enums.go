package toolguard

import "fmt"

// Action says what happens the first time a rule fires for a call.
type Action int

const (
	// ActionHint (the default) answers the first firing with a Hint; if the
	// model sends the hinted call again anyway, that call is an Abort.
	ActionHint Action = iota
	// ActionAbort answers the first firing with an Abort and a *LoopError.
	ActionAbort
)

// String returns "hint" or "abort".
func (a Action) String() string { return enumString([]string{"hint", "abort"}, int(a), "Action") }

// budgetUnit is what the turn budget counts (Policy.CountRounds).
type budgetUnit int

const (
	unitCalls  budgetUnit = iota // every executed call
	unitRounds                   // model responses: a batch is one unit
)

// String returns "calls" or "rounds".
func (u budgetUnit) String() string {
	return enumString([]string{"calls", "rounds"}, int(u), "budgetUnit")
}

// Verdict is what the harness does with a call.
type Verdict int

const (
	// Allow: run the call, then Record its outcome.
	Allow Verdict = iota
	// Hint: do not run the call; give the model Decision.Message as the
	// call's result.
	Hint
	// Abort: do not run the call; stop the turn with Decision.Err.
	Abort
)

var verdictNames = [...]string{"allow", "hint", "abort"}

// String returns "allow", "hint" or "abort".
func (v Verdict) String() string { return enumString(verdictNames[:], int(v), "Verdict") }

// MarshalText encodes the verdict as its String.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText decodes a verdict from its String.
func (v *Verdict) UnmarshalText(b []byte) error {
	return enumParse(verdictNames[:], b, "verdict", (*int)(v))
}

// Phase is where the turn stands against its budget.
type Phase int

const (
	// PhaseNormal: under the nudge threshold.
	PhaseNormal Phase = iota
	// PhaseNudge: past NudgeRatio of the budget; tell the model to wrap up.
	PhaseNudge
	// PhaseWindDown: the budget is used; strip the tools and ask the model
	// to summarize and answer.
	PhaseWindDown
	// PhaseExhausted: a call was asked for after the wind-down; it was
	// refused with ErrBudgetExhausted.
	PhaseExhausted
)

var phaseNames = [...]string{"normal", "nudge", "wind_down", "exhausted"}

// String returns "normal", "nudge", "wind_down" or "exhausted".
func (p Phase) String() string { return enumString(phaseNames[:], int(p), "Phase") }

// MarshalText encodes the phase as its String.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText decodes a phase from its String.
func (p *Phase) UnmarshalText(b []byte) error {
	return enumParse(phaseNames[:], b, "phase", (*int)(p))
}

// Reason is the rule behind a Hint or an Abort.
type Reason int

const (
	// ReasonNone: nothing fired.
	ReasonNone Reason = iota
	// ReasonToolLimit: the tool reached its per-turn limit or its session quota.
	ReasonToolLimit
	// ReasonDuplicate: the same call (tool and canonical arguments) ran
	// MaxRepeats times without progress.
	ReasonDuplicate
	// ReasonSimilarQuery: a search tool was asked a query similar to one it
	// answered in an earlier round of the turn.
	ReasonSimilarQuery
	// ReasonRepeatedFailure: the tool failed MaxFailures times the same way.
	ReasonRepeatedFailure
	// ReasonCycle: the call would continue a cycle of distinct calls that
	// repeated without new results.
	ReasonCycle
	// ReasonBudget: the turn budget is used up.
	ReasonBudget
	// ReasonChurn: the rolling window holds too many similar searches, or
	// fetches of one address, without new results.
	ReasonChurn
	// ReasonInvalidCall: the call could not be checked (no tool name).
	ReasonInvalidCall
)

var reasonNames = [...]string{
	"none", "tool_limit", "duplicate", "similar_query", "repeated_failure",
	"cycle", "budget", "churn", "invalid_call",
}

// numReasons sizes per-reason counters.
const numReasons = len(reasonNames)

// String returns the reason in snake case, such as "similar_query".
func (r Reason) String() string { return enumString(reasonNames[:], int(r), "Reason") }

// MarshalText encodes the reason as its String.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText decodes a reason from its String.
func (r *Reason) UnmarshalText(b []byte) error {
	return enumParse(reasonNames[:], b, "reason", (*int)(r))
}

// Status returns what became of the call in one word: "pending" (allowed,
// not yet recorded), "ok", "failed" or "skipped" (Hint or Abort).
func (e Entry) Status() string {
	switch {
	case e.Verdict != Allow:
		return "skipped"
	case e.Failed:
		return "failed"
	case e.Done:
		return "ok"
	}
	return "pending"
}

func enumString(names []string, i int, typ string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", typ, i)
}

func enumParse(names []string, b []byte, what string, dst *int) error {
	for i, n := range names {
		if n == string(b) {
			*dst = i
			return nil
		}
	}
	return fmt.Errorf("toolguard: unknown %s %q", what, b)
}
