package toolguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/toolguard/toolguard/store"
)

// FuzzTracker drives a whole Tracker with a random sequence of checks,
// rounds, records (in any order, late ones after a Reset included) and
// resets, and checks after every step what must hold whatever the model
// does:
//   - the turn budget: no turn allows more calls than MaxCallsPerTurn;
//   - escalation: a call hinted for a repeat, a cycle or a quota and sent
//     again at once, with nothing recorded in between, is aborted;
//   - the ledger holds at most LedgerSize entries;
//   - quotas are exact: the shared quota's total in the Store is the
//     number of calls allowed, never above its limit, and no tool runs more
//     than its session quota;
//   - the phase only moves forward within a turn and starts each turn at
//     PhaseNormal;
//   - once every allowed call is recorded, none is pending and the Store
//     holds no reservation.
func FuzzTracker(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 0, 0, 3, 0, 0})
	f.Add([]byte{1, 2, 0, 10, 20, 3, 4, 0, 30, 3, 5, 6, 9, 12})
	f.Add([]byte{3, 1, 7, 0, 6, 12, 18, 24, 4, 3, 3, 3, 0, 6, 0, 6, 0, 6, 5, 11})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		const sharedLimit = 9
		cfg, data := data[:4], data[4:]
		maxCalls := 3 + int(cfg[0]%12)
		ledgerSize := 4 + int(cfg[1]%12)
		sessionLimit := 2 + int(cfg[2]%6)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		mem := newHeldStore(func() time.Time { return now })
		p := Policy{
			MaxCallsPerTurn: maxCalls,
			MaxRepeats:      1 + int(cfg[3]%2),
			LedgerSize:      ledgerSize,
			AgentQuota:      &Quota{Default: sessionLimit},
			Store:           mem,
			SharedQuotas:    []store.SharedQuota{{Name: "fuzz", Limit: sharedLimit}},
			Now:             func() time.Time { return now },
		}
		if cfg[3]&2 != 0 {
			p.Action = ActionAbort
		}
		tr := NewTracker(p)

		type pending struct {
			c    Call
			turn int
		}
		var (
			open      []pending // allowed, not recorded
			turn      = 1
			allowed   = 0 // this turn
			total     = 0 // over the session: the shared quota's count
			perTool   = map[string]int{}
			phase     = PhaseNormal
			lastHint  *Call
			ids       = 0
			recordedB = false // something was recorded since lastHint
		)
		mkCall := func(b byte) Call {
			c := Call{Tool: []string{"read", "web_search", "bash"}[b%3]}
			if b&8 != 0 {
				ids++
				c.ID = fmt.Sprintf("id%d", ids)
			}
			if c.Tool == "web_search" {
				c.Args = json.RawMessage(fmt.Sprintf(`{"query":"topic %d"}`, (b>>4)%3))
			} else {
				c.Args = json.RawMessage(fmt.Sprintf(`{"a":%d}`, (b>>4)%3))
			}
			return c
		}
		checkPhase := func(got Phase, what string) {
			if got < phase {
				t.Fatalf("%s: phase went back from %v to %v in turn %d", what, phase, got, turn)
			}
			phase = got
		}
		decided := func(c Call, d Decision, inRound bool) {
			if !inRound && lastHint != nil && !recordedB && sameCall(*lastHint, c) && d.Verdict == Hint {
				t.Fatalf("%s hinted twice in a row (%v): the second must abort", c.Tool, d.Reason)
			}
			lastHint = nil
			switch d.Verdict {
			case Allow:
				allowed++
				total++
				perTool[c.Tool]++
				open = append(open, pending{c: c, turn: turn})
			case Hint:
				if d.Reason == ReasonDuplicate || d.Reason == ReasonCycle || d.Reason == ReasonToolLimit {
					lastHint, recordedB = &c, false
				}
			case Abort:
				if d.Err == nil {
					t.Fatalf("%s: an Abort without an error", c.Tool)
				}
				if !errors.Is(d.Err, ErrLoop) && !errors.Is(d.Err, ErrBudgetExhausted) {
					t.Fatalf("%s: an Abort whose error is neither a loop nor the budget: %v", c.Tool, d.Err)
				}
			}
			if d.Reason == ReasonBudget {
				// A call that would overrun the budget is refused as
				// exhausted while the turn's phase stays where it is.
				if d.Phase != PhaseExhausted {
					t.Fatalf("a budget refusal in %v", d.Phase)
				}
				return
			}
			checkPhase(d.Phase, "ShouldSkip")
		}

		for i := 0; i < len(data); i++ {
			b := data[i]
			switch b % 7 {
			case 0, 1, 2:
				c := mkCall(b / 7)
				if b%7 == 2 && lastHint != nil {
					c = *lastHint // the model insists
				}
				decided(c, tr.ShouldSkip(c), false)
			case 3, 4:
				if len(open) == 0 {
					continue
				}
				k := int(b/7) % len(open)
				pc := open[k]
				open = append(open[:k], open[k+1:]...)
				o := Outcome{Result: fmt.Sprintf("r%d", b%2)}
				if b&64 != 0 {
					o = Outcome{Err: errors.New("exit status 1")}
				}
				got := tr.Record(pc.c, o)
				recordedB = true
				if pc.turn == turn {
					checkPhase(got, "Record")
				} else if got != tr.Guidance().Phase {
					t.Fatalf("a late Record returned %v, the turn is in %v", got, tr.Guidance().Phase)
				}
			case 5:
				if i+1 < len(data) {
					i++
					calls := []Call{mkCall(b / 7), mkCall(data[i])}
					ds := tr.ShouldSkipRound(calls)
					for k, d := range ds {
						decided(calls[k], d, true)
					}
					lastHint = nil // a round's hints cover the round
				}
			case 6:
				tr.Reset()
				turn++
				allowed, phase, lastHint = 0, PhaseNormal, nil
				if got := tr.Guidance().Phase; got != PhaseNormal {
					t.Fatalf("a new turn starts in %v", got)
				}
			}

			if allowed > maxCalls {
				t.Fatalf("turn %d allowed %d calls, budget %d", turn, allowed, maxCalls)
			}
			if n := len(tr.Ledger()); n > ledgerSize {
				t.Fatalf("the ledger holds %d entries, LedgerSize %d", n, ledgerSize)
			}
			if n := mem.Count("quota:fuzz"); n != total || n > sharedLimit {
				t.Fatalf("the shared quota counts %d, %d calls were allowed, limit %d", n, total, sharedLimit)
			}
			for tool, n := range perTool {
				if n > sessionLimit {
					t.Fatalf("%s ran %d times, session quota %d", tool, n, sessionLimit)
				}
			}
		}
		// Every allowed call recorded, late ones included: no call is left
		// pending and no reservation is left held in the Store.
		for _, pc := range open {
			tr.Record(pc.c, Outcome{Result: "last"})
		}
		tr.mu.Lock()
		left := len(tr.turn.pending) + len(tr.stale)
		tr.mu.Unlock()
		held := mem.held()
		if left != 0 || held != 0 {
			t.Fatalf("after every Record: %d calls still pending, %d reservations held", left, held)
		}
	})
}

func sameCall(a, b Call) bool { return a.Tool == b.Tool && string(a.Args) == string(b.Args) }
