package toolguard

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestWindowGrows checks that the window, grown as it fills, holds
// the most recent calls in order at every size and after a clear.
func TestWindowGrows(t *testing.T) {
	for _, size := range []int{1, 2, 3, 5, 10, 17} {
		d := newDetTest(Policy{Window: size})
		c := churn{cfg: d.cfg} // allowed adds to its window, endTurn empties it
		w := &c.window
		p := d.probe("fetch", `{"url":"https://docs.example.com/a"}`, 1, 0)
		for round := range 2 {
			for i := range 3 * size {
				p.seq = uint64(i + 1)
				c.allowed(p)
				n := min(i+1, size)
				assert.Equal(t, n, len(*w), "size %d after %d", size, i+1)
				assert.LessOrEqual(t, cap(*w), size)
				for k := range n {
					assert.Equal(t, uint64(i+2-n+k), (*w)[k].seq, "size %d after %d, item %d", size, i+1, k)
				}
			}
			c.endTurn(round + 1)
			assert.Empty(t, *w, "round %d", round)
		}
	}
	d := newDetTest(Policy{WindowLimit: -1}) // the window is off
	off := churn{cfg: d.cfg}
	off.allowed(d.probe("fetch", `{"url":"https://docs.example.com/a"}`, 1, 0))
	assert.Nil(t, off.window)
}

// TestLedgerCycle checks the cycle rule's reading of the ledger: the
// turn's last calls only, skipped calls included, none of an exempt tool,
// and as many as the ledger keeps.
func TestLedgerCycle(t *testing.T) {
	a := &toolRule{name: "a"}
	b := &toolRule{name: "b"}
	x := &toolRule{name: "x", exempt: true}
	key := func(r *toolRule) callKey { return callKey{r.name, Hash{}} }
	add := func(l *ledger, r *toolRule, turn, keep int) {
		var d *callDesc
		if r != nil {
			d = &callDesc{rule: r}
		}
		l.add(ledgerEntry{desc: d}, turn, 1, time.Time{}, rawEntry{}, keep, false)
	}
	cycle := func(turn, keep int, calls ...*toolRule) *ledger {
		var l ledger
		for _, e := range calls {
			add(&l, e, turn, keep)
		}
		return &l
	}

	l := cycle(1, 0, a, b, a, b, a, b)
	p, ok := l.continues(key(a), 1, 4, 3)
	assert.True(t, ok)
	assert.Equal(t, 2, p)
	_, ok = l.continues(key(b), 1, 4, 3) // b is not the next call
	assert.False(t, ok)
	_, ok = l.continues(key(a), 2, 4, 3) // a new turn has no calls yet
	assert.False(t, ok)

	_, ok = cycle(1, 0, a, b, a, b, a).continues(key(b), 1, 4, 3) // 5 calls: too few
	assert.False(t, ok)
	_, ok = cycle(1, 0, a, x, a, x, a, x).continues(key(a), 1, 4, 3) // x is exempt
	assert.False(t, ok)
	_, ok = cycle(1, 0, a, b, a, nil, a, b).continues(key(a), 1, 4, 3) // a call without a tool
	assert.False(t, ok)

	// The calls of an earlier turn do not count.
	var l2 ledger
	for _, e := range []*toolRule{a, b, a} {
		add(&l2, e, 1, 0)
	}
	for _, e := range []*toolRule{b, a, b} {
		add(&l2, e, 2, 0)
	}
	_, ok = l2.continues(key(a), 2, 4, 3)
	assert.False(t, ok)

	// A result new for its key breaks the cycle.
	l = cycle(1, 0, a, b, a, b, a, b)
	l.entries[len(l.entries)-3].newResult = true // the third most recent
	_, ok = l.continues(key(a), 1, 4, 3)
	assert.False(t, ok)

	// Trimmed to keep 6 entries, the ledger still sees the cycle.
	l = cycle(1, 6, b, b, b, b, b, b, b, a, b, a, b, a, b)
	assert.Less(t, len(l.entries), 13)
	_, ok = l.continues(key(a), 1, 4, 3)
	assert.True(t, ok)
}

// testKey returns the key of the calls of tool with arguments hashing to
// args.
func testKey(tool string, args Hash) callKey { return callKey{tool, args} }

// TestLedgerRounds checks that the ledger gives back each entry's round
// (it keeps the round's difference from the entry's Seq): calls of one
// round, rounds without calls, and calls on their own.
func TestLedgerRounds(t *testing.T) {
	tr := NewTracker(Policy{})
	tr.ShouldSkip(call("read", `{"path":"a"}`)) // round 1
	for range 1000 {
		tr.WithRound(context.Background()) // rounds without calls
	}
	tr.ShouldSkipRound([]Call{call("read", `{"path":"b"}`), call("read", `{"path":"c"}`), call("grep", `{"q":"x"}`)})
	ctx := tr.WithRound(context.Background())
	tr.ShouldSkipContext(ctx, call("read", `{"path":"d"}`))
	tr.ShouldSkipContext(ctx, call("read", `{"path":"e"}`))
	tr.ShouldSkip(call("read", `{"path":"f"}`))
	var rounds []uint64
	for _, e := range tr.Ledger() {
		rounds = append(rounds, e.Round)
	}
	assert.Equal(t, []uint64{1, 1002, 1002, 1002, 1003, 1003, 1004}, rounds)
}
