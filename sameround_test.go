package toolguard

import (
	"errors"
	"testing"
)

// A change in the same round (issue #30, item 1, built from its
// description; the traces hold no example the zero Policy would refuse).
// A call's result is observed at Record, so "since the key last ran" means
// since its Record: a change recorded before it — by a call of its own
// round — is not in between; one recorded after it is (it may have
// happened after the call: a toggle, then a check of the round, then the
// toggle again is new work).
func TestSameRoundChangeIsNotInBetween(t *testing.T) {
	user := call("get_user_details", `{"user_id":"u1"}`)
	book := call("book_reservation", `{"flight":"a"}`)
	const full = "Error: flight a is full"
	round := func(first, second step) []step {
		first.round, second.round = 1, 1
		return []step{first, second}
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"the change recorded first", append(round(allow(user, "u1: gold member"), fail(book, full)),
			fail(book, full),
			hint(book, ReasonDuplicate),
		)},
		{"the change recorded second: after the call, in between", append(round(fail(book, full), allow(user, "u1: gold member")),
			fail(book, full),
			fail(book, full),
			hint(book, ReasonDuplicate),
		)},
		{"one call at a time, as before", []step{
			allow(user, "u1: gold member"),
			fail(book, full),
			fail(book, full),
			hint(book, ReasonDuplicate),
		}},
		{"a change in a later round still counts", append(round(allow(user, "u1: gold member"), fail(book, full)),
			allow(call("update_user", `{"user_id":"u1","seat":"any"}`), "ok"),
			fail(book, full),
			fail(book, full),
			hint(book, ReasonDuplicate),
		)},
		{"two changes of the round, recorded around the call: the later counts", append([]step{
			{call: call("set_a", `{}`), result: "a set", want: Allow, round: 1},
			{call: book, err: errors.New(full), want: Allow, round: 1},
			{call: call("set_b", `{}`), result: "b set", want: Allow, round: 1},
		}, fail(book, full), fail(book, full), hint(book, ReasonDuplicate))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run(t, NewTracker(Policy{}), tt.steps)
		})
	}
}
