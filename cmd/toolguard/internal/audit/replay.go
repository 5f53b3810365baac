package audit

import (
	"errors"

	"github.com/toolguard/toolguard"
)

// Decision is what the Tracker decided for one recorded call during the
// replay. It holds no arguments or results.
type Decision struct {
	Index   int // the call's position in the episode, 1-based
	Round   int // the model response that asked for it, 1-based
	Turn    int // the user turn, 1-based
	Tool    string
	CallID  string
	Failed  bool // the recorded result was a failure (allowed calls only)
	Verdict toolguard.Verdict
	Reason  toolguard.Reason
	// Phase is the turn's phase after the call: what Record returned for an
	// allowed call, the decision's phase for a skipped one.
	Phase   toolguard.Phase
	Message string // for Hint and Abort: the text the model would have seen
	Line    int    // the line of the input that holds the call; 0 when not known

	// For a refused call (Hint or Abort) only: previews of its arguments
	// and of the result the agent got when it ran the call, secrets
	// redacted (see docs/audit.md); the policy setting that governs the
	// rule; and whether that result was new.
	Args, Result string
	Setting      string
	New          Newness
}

// Newness says whether a refused call, which the agent did run, got a
// result that no earlier call of its tool in the episode had got: the
// lossy measure of whether refusing it would have lost anything.
type Newness int

const (
	// NewUnknown: the transcript records no result for the call.
	NewUnknown Newness = iota
	// NothingNew: an earlier call of the tool got the same result (or the
	// same failure).
	NothingNew
	// NewResult: the result was new.
	NewResult
)

// String returns "unknown", "nothing new" or "new".
func (n Newness) String() string {
	switch n {
	case NothingNew:
		return "nothing new"
	case NewResult:
		return "new"
	}
	return "unknown"
}

// MarshalText makes Newness its String in JSON.
func (n Newness) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

// newnessLookBack bounds how many earlier calls newness compares with.
const newnessLookBack = 1000

// newness compares the recorded result of call i with those of the
// earlier calls of its tool.
func newness(calls []Call, i int) Newness {
	c := &calls[i]
	if c.Result == "" && !c.Failed {
		return NewUnknown
	}
	for j := i - 1; j >= max(0, i-newnessLookBack); j-- {
		e := &calls[j]
		if e.Tool == c.Tool && e.Failed == c.Failed && e.Result == c.Result {
			return NothingNew
		}
	}
	return NewResult
}

// Fired reports whether a rule fired for the call (Hint or Abort).
func (d Decision) Fired() bool { return d.Verdict != toolguard.Allow }

// Replay runs the recorded calls of ep through a new Tracker under p and
// returns one Decision per call, in order. The calls of one round are
// checked together with ShouldSkipRound; an allowed call is recorded with
// its recorded result (a failure becomes Outcome.Err); a new user turn
// calls Reset. A skipped call is not recorded, but the replay goes on with
// the next recorded call: it shows every rule that would have fired,
// although after the first Abort the real agent would have stopped. The
// decision of a refused call describes it (see describe).
func Replay(p toolguard.Policy, ep *Episode) []Decision {
	ds := decide(p, ep)
	for i := range ds {
		if ds[i].Fired() {
			describe(&p, ep, &ds[i])
		}
	}
	return ds
}

// describe fills in what a report shows of the refused call of d:
// previews of its arguments and of its recorded result, and the policy
// setting that governs the rule.
func describe(p *toolguard.Policy, ep *Episode, d *Decision) {
	c := &ep.Calls[d.Index-1]
	d.Args, d.Result = preview(string(c.Args), previewRunes), preview(c.Result, previewRunes)
	d.Setting = setting(p, d.Reason, c.Tool)
}

// decide is Replay without describing the refused calls: the text report
// describes the few it prints.
func decide(p toolguard.Policy, ep *Episode) []Decision {
	t := toolguard.NewTracker(p)
	out := make([]Decision, 0, len(ep.Calls))
	turn := 0
	for start := 0; start < len(ep.Calls); {
		end := start + 1
		for end < len(ep.Calls) && ep.Calls[end].Round == ep.Calls[start].Round {
			end++
		}
		round := ep.Calls[start:end]
		if turn != 0 && round[0].Turn != turn {
			t.Reset()
		}
		turn = round[0].Turn

		calls := make([]toolguard.Call, len(round))
		for i, c := range round {
			calls[i] = toolguard.Call{ID: c.ID, Tool: c.Tool, Args: c.Args}
		}
		ds := t.ShouldSkipRound(calls)
		for i, d := range ds {
			c := round[i]
			dec := Decision{
				Index: start + i + 1, Round: c.Round, Turn: c.Turn,
				Tool: c.Tool, CallID: c.ID, Line: c.Line,
				Verdict: d.Verdict, Reason: d.Reason, Phase: d.Phase, Message: d.Message,
			}
			if d.Verdict != toolguard.Allow {
				dec.New = newness(ep.Calls, start+i)
			}
			if d.Verdict == toolguard.Allow {
				dec.Message = ""
				dec.Failed = c.Failed
				dec.Phase = t.Record(calls[i], outcome(c))
			}
			out = append(out, dec)
		}
		start = end
	}
	return out
}

// outcome is the recorded result of a call as an Outcome.
func outcome(c Call) toolguard.Outcome {
	o := toolguard.Outcome{Result: c.Result}
	if c.Failed {
		msg := c.Result
		if msg == "" {
			msg = "the call failed"
		}
		o.Err = errors.New(msg)
	}
	return o
}
