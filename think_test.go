package toolguard

import "testing"

// Think-style tools (Policy.ThinkTools) only record the model's reasoning:
// read-only, never progress. Before them, a think call between two retries
// was a new key that succeeded, so it counted as a change of the world and
// every retry started its count over (tau-bench airline task8-trial1 retries
// book_reservation three times with a think between each).
func TestThinkTools(t *testing.T) {
	book := call("book_reservation", `{"flight":"HAT136"}`)
	get := call("get_reservation_details", `{"id":"4WQ150"}`)
	think := func(thought string) Call { return call("think", `{"thought":"`+thought+`"}`) }
	const full = "Error: not enough seats on flight HAT136"
	for _, tt := range []struct {
		name  string
		p     Policy
		steps []step
	}{
		{"a think between failing retries is not a change", Policy{}, []step{
			fail(book, full),
			allow(think("try again"), ""),
			fail(book, full),
			allow(think("maybe once more"), ""),
			hint(book, ReasonDuplicate), // the third identical call, the same failure
		}},
		{"a think between identical reads is not a change", Policy{}, []step{
			allow(get, "reservation 4WQ150: 2 passengers"),
			allow(think("check the passengers"), ""),
			allow(get, "reservation 4WQ150: 2 passengers"),
			allow(think("check them again"), ""),
			hint(get, ReasonDuplicate),
		}},
		{"any tool named like a think tool: *_think, plan, reflect", Policy{}, []step{
			allow(get, "reservation 4WQ150: 2 passengers"),
			allow(call("agent_think", `{"t":"a"}`), ""),
			allow(get, "reservation 4WQ150: 2 passengers"),
			allow(call("plan", `{"steps":["x"]}`), "plan recorded"),
			allow(call("reflect", `{"on":"x"}`), "noted"),
			hint(get, ReasonDuplicate),
		}},
		{"a real change between reads still counts", Policy{}, []step{
			allow(get, "reservation 4WQ150: 2 passengers"),
			allow(think("add a bag"), ""),
			allow(call("update_reservation_baggages", `{"id":"4WQ150","bags":1}`), "ok"),
			allow(get, "reservation 4WQ150: 2 passengers"),
			allow(think("check"), ""),
			allow(get, "reservation 4WQ150: 2 passengers"),
		}},
		{"ThinkTools empty: no think tool, the think counts as progress again", Policy{ThinkTools: []string{}}, []step{
			fail(book, full),
			allow(think("try again"), ""),
			fail(book, full),
			allow(think("maybe once more"), ""),
			fail(book, full),
			allow(think("one last time"), ""),
			fail(book, full),
		}},
		{"ThinkTools named: only those", Policy{ThinkTools: []string{"ponder"}}, []step{
			allow(get, "reservation 4WQ150: 2 passengers"),
			allow(call("ponder", `{"t":"a"}`), ""),
			allow(get, "reservation 4WQ150: 2 passengers"),
			allow(think("b"), ""), // not a think tool under this policy: may have changed the world
			allow(get, "reservation 4WQ150: 2 passengers"),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run(t, NewTracker(tt.p), tt.steps)
		})
	}
}

func TestThinkToolsValidate(t *testing.T) {
	if err := (Policy{ThinkTools: []string{"[think"}}).Validate(); err == nil {
		t.Errorf("a malformed ThinkTools pattern is not reported")
	}
}
