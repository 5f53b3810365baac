package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/store"
)

// batch is the scripts of one operation: one group per hash slot (one
// group on a server that is not a cluster).
type batch struct {
	s      *Store
	groups []*group
	bySlot map[int]*group
}

// group is the script for the counters of one slot.
type group struct {
	keys  []string       // counter k (1-based): keys[2k-2] and keys[2k-1]
	index map[string]int // committed-total key → k
	args  []any          // the operations, as luaBatch reads them
	parts []part         // its reserve operations, in order
	ok    []bool         // after parse: whether each part was granted

	policy string // after parse: the maxmemory-policy the script found
}

// part is the counters of one reservation that live in one slot.
type part struct {
	ri       int    // the reservation's position in the Reserve
	id       string // the reservation's id
	counters []store.Counter
	m        []int // each counter's 1-based position in the reservation
}

// settle is a queued commit or release of a reservation's counters (m as
// in part).
type settle struct {
	commit   bool
	id       string
	counters []store.Counter
	m        []int
	until    time.Time // zero until its first send fails: then, until when it is sent again
}

func (s *Store) newBatch() *batch { return &batch{s: s, bySlot: map[int]*group{}} }

// group returns the group of the counter whose committed total is ck.
func (b *batch) group(ck string) *group {
	slot := 0
	if b.s.cluster {
		slot = slotOf(ck)
	}
	g := b.bySlot[slot]
	if g == nil {
		g = &group{index: map[string]int{}}
		b.bySlot[slot] = g
		b.groups = append(b.groups, g)
	}
	return g
}

// key returns the index k of a counter in g, adding it.
func (g *group) key(ck, zk string) int {
	k, ok := g.index[ck]
	if !ok {
		g.keys = append(g.keys, ck, zk)
		k = len(g.keys) / 2
		g.index[ck] = k
	}
	return k
}

// split returns the parts of a reservation's counters (m as in part), one
// per group, in the order the groups first appear.
func (b *batch) split(counters []store.Counter, m []int) ([]*group, []part) {
	var gs []*group
	var ps []part
	for j, c := range counters {
		ck, _ := b.s.counterKeys(c.Key)
		g := b.group(ck)
		i := 0
		for i < len(gs) && gs[i] != g {
			i++
		}
		if i == len(gs) {
			gs = append(gs, g)
			ps = append(ps, part{})
		}
		ps[i].counters = append(ps[i].counters, c)
		ps[i].m = append(ps[i].m, m[j])
	}
	return gs, ps
}

// reserve adds the reservation rs[ri] = r.
func (b *batch) reserve(ri int, r store.Reservation) {
	if len(r.Counters) == 0 {
		return
	}
	ttl := r.TTL
	if ttl <= 0 {
		ttl = store.DefaultTTL
	}
	m := make([]int, len(r.Counters))
	for j := range m {
		m[j] = j + 1
	}
	gs, ps := b.split(r.Counters, m)
	for i, g := range gs {
		p := ps[i]
		p.ri, p.id = ri, r.ID
		g.args = append(g.args, "R", r.ID, millis(ttl), len(p.counters))
		for j, c := range p.counters {
			var w int64
			if c.Window > 0 {
				w = millis(c.Window)
			}
			g.args = append(g.args, g.key(b.s.counterKeys(c.Key)), p.m[j], c.Limit, w)
		}
		g.parts = append(g.parts, p)
	}
}

// settle adds a commit or release and returns the groups it went to.
func (b *batch) settle(o settle) []*group {
	op := "X"
	if o.commit {
		op = "C"
	}
	gs, ps := b.split(o.counters, o.m)
	for i, g := range gs {
		p := ps[i]
		g.args = append(g.args, op, o.id, len(p.counters))
		for j, c := range p.counters {
			g.args = append(g.args, g.key(b.s.counterKeys(c.Key)), p.m[j])
		}
	}
	return gs
}

// parse reads the group's reply into the grants of the Reserve.
func (g *group) parse(v any, gs []store.Grant) error {
	vs, ok := v.([]any)
	bad := func() error { return fmt.Errorf("unexpected reply %v", v) }
	if !ok {
		return bad()
	}
	i := 0
	if len(g.parts) > 0 { // the policy the script found
		if len(vs) == 0 {
			return bad()
		}
		if g.policy, ok = vs[0].(string); !ok {
			return bad()
		}
		i = 1
	}
	for _, p := range g.parts {
		n := len(p.m)
		if i+2+n > len(vs) {
			return bad()
		}
		ints := make([]int64, 2+n)
		for j := range ints {
			x, ok := vs[i+j].(int64)
			if !ok {
				return bad()
			}
			ints[j] = x
		}
		i += 2 + n
		if ints[0] != 0 && ints[0] != 1 || ints[1] < -1 || ints[1] >= int64(n) || (ints[0] == 1) != (ints[1] == -1) {
			return bad()
		}
		g.ok = append(g.ok, ints[0] == 1)
		gr := &gs[p.ri]
		for j, mj := range p.m {
			gr.Counts[mj-1] = int(ints[2+j])
		}
		if ints[0] == 0 {
			blocked := p.m[ints[1]] - 1
			if gr.OK || blocked < gr.Blocked {
				gr.Blocked = blocked
			}
			gr.OK = false
		}
	}
	if i != len(vs) {
		return bad()
	}
	return nil
}

// refusedElsewhere returns the parts of g that were granted for a
// reservation that another part refused.
func (g *group) refusedElsewhere(gs []store.Grant) []part {
	var out []part
	for i, p := range g.parts {
		if g.ok[i] && !gs[p.ri].OK {
			out = append(out, p)
		}
	}
	return out
}

func (p part) release() settle { return settle{id: p.id, counters: p.counters, m: p.m} }

// allParts returns every reserve part of g as a release: releasing a part
// that holds nothing does nothing.
func (g *group) allParts() []settle {
	out := make([]settle, len(g.parts))
	for i, p := range g.parts {
		out[i] = p.release()
	}
	return out
}

// maxAttempts bounds how often one operation is sent again after a
// NOSCRIPT (the node does not have the script yet: it is sent whole), a
// TRYAGAIN (the slot is migrating and its keys are split between two
// nodes for a moment), or a MOVED or ASK that go-redis did not follow
// within its MaxRedirects.
const maxAttempts = 8

// run sends the groups' scripts in one pipeline and returns each one's
// reply or error. A ClusterClient sends each script to the node of its
// slot (in parallel) and follows MOVED and ASK redirections.
func (s *Store) run(ctx context.Context, groups []*group) ([]any, []error) {
	vals := make([]any, len(groups))
	errs := make([]error, len(groups))
	todo := make([]int, len(groups))
	for i := range todo {
		todo[i] = i
	}
	whole := false // send the script itself (EVAL), not its digest
	for attempt := 1; ; attempt++ {
		pipe := s.client.Pipeline()
		cmds := make([]*redis.Cmd, len(todo))
		for i, gi := range todo {
			g := groups[gi]
			args := append([]any{s.guard(g)}, g.args...)
			if whole {
				cmds[i] = s.batch.Eval(ctx, pipe, g.keys, args...)
			} else {
				cmds[i] = s.batch.EvalSha(ctx, pipe, g.keys, args...)
			}
		}
		_, _ = pipe.Exec(ctx) // each command holds its own error
		var again []int
		tryAgain, unreachable := false, false
		for i, gi := range todo {
			vals[gi], errs[gi] = cmds[i].Result()
			var rerr redis.Error
			unreachable = unreachable || errs[gi] != nil && !errors.As(errs[gi], &rerr)
			switch err := errs[gi]; {
			case err == nil:
			case redis.HasErrorPrefix(err, "NOSCRIPT"):
				again, whole = append(again, gi), true
			case redis.IsTryAgainError(err), redis.HasErrorPrefix(err, "MOVED"), redis.HasErrorPrefix(err, "ASK"):
				// Not run: a slot migrating (its keys split between two
				// nodes, or the client's map of slots behind).
				again, tryAgain = append(again, gi), true
			}
		}
		if c, ok := s.client.(*redis.ClusterClient); ok && unreachable {
			// A node did not answer: it may have failed over to a
			// replica, which the client learns only from a new map of
			// the slots (go-redis follows MOVED, but a dead node sends
			// none).
			c.ReloadState(ctx)
		}
		if len(again) == 0 || attempt == maxAttempts || ctx.Err() != nil {
			return vals, errs
		}
		if tryAgain {
			select {
			case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
			case <-ctx.Done():
				return vals, errs
			}
		}
		todo = again
	}
}
