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
}

// Fired reports whether a rule fired for the call (Hint or Abort).
func (d Decision) Fired() bool { return d.Verdict != toolguard.Allow }

// Replay runs the recorded calls of ep through a new Tracker under p and
// returns one Decision per call, in order. The calls of one round are
// checked together with ShouldSkipRound; an allowed call is recorded with
// its recorded result (a failure becomes Outcome.Err); a new user turn
// calls Reset. A skipped call is not recorded, but the replay goes on with
// the next recorded call: it shows every rule that would have fired,
// although after the first Abort the real agent would have stopped.
func Replay(p toolguard.Policy, ep *Episode) []Decision {
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
				Tool: c.Tool, CallID: c.ID,
				Verdict: d.Verdict, Reason: d.Reason, Phase: d.Phase, Message: d.Message,
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
