package toolguard

import (
	"errors"
	"fmt"
)

var (
	// ErrLoop is matched (with errors.Is) by every *LoopError: a call that
	// was refused because it repeats, cycles, retries a failure, or passes
	// a tool's limit.
	ErrLoop = errors.New("toolguard: loop detected")
	// ErrBudgetExhausted is matched by the error of a call refused because
	// the turn has used all its tool calls.
	ErrBudgetExhausted = errors.New("toolguard: all available tool calls for this turn were used")
	// ErrInvalidCall is matched by the error of a call that cannot be
	// checked, such as one without a tool name.
	ErrInvalidCall = errors.New("toolguard: invalid call")
)

// LoopError is the error of an Abort decision for a loop. It carries what
// the Tracker saw; errors.Is(err, ErrLoop) is true.
type LoopError struct {
	Tool   string // the tool of the refused call
	Reason Reason // the rule that fired
	Count  int    // the count that reached the limit (repeats, failures, calls)
	Limit  int    // the limit that was reached
	Key    Hash   // the hash of the call's canonical arguments
}

// Error describes the loop without the call's arguments.
func (e *LoopError) Error() string {
	return fmt.Sprintf("toolguard: loop detected: tool %q stopped by %s (count %d, limit %d)",
		e.Tool, e.Reason, e.Count, e.Limit)
}

// Is reports whether target is ErrLoop.
func (e *LoopError) Is(target error) bool { return target == ErrLoop }

// BudgetError is the error of a call refused because the turn budget is
// used up; errors.Is(err, ErrBudgetExhausted) is true.
type BudgetError struct {
	Used  int    // units used or reserved when the call was refused
	Limit int    // the turn budget
	Unit  string // what the budget counts: "calls" or "rounds"
}

// Error tells the model plainly that the call was not executed and why.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("toolguard: all %d available %s for this turn were used; this call was not executed: summarize your work and answer the user's question",
		e.Limit, nouns(e.Limit, toolUnit(e.Unit)))
}

// Is reports whether target is ErrBudgetExhausted.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExhausted }

// invalidCallError is the error of a call that cannot be checked; it
// matches ErrInvalidCall.
func invalidCallError(problem string) error {
	return fmt.Errorf("%w: %s", ErrInvalidCall, problem)
}
