package toolguard

import "github.com/toolguard/toolguard/internal/canon"

// callKey identifies identical calls: the same tool with arguments of the
// same canonical hash.
type callKey struct {
	tool string
	args Hash
}

// keyState is the repeat counter of one callKey in the turn.
type keyState struct {
	key     callKey
	last    uint64 // digest of the last result or error output (noise masked; see Hash.short)
	count   int32  // identical calls since the key last made progress, pending included
	pending int32  // allowed, not yet recorded (at most maxPending)
	changes uint32 // turnState.changes when the key last ran
	seen    bool   // a result was recorded
	failed  bool   // the last result was a failure
	used    bool   // stored again since the eviction hand last passed it
}

// toolState is what the turn knows of one tool.
type toolState struct {
	turn    int32       // the turn it is of (wraps past 2³¹ turns)
	stats   toolStats   // stats.reserved: the calls allowed this turn
	fail    *failState  // allocated at the tool's first failure in the turn; nil before
	queries *queryIndex // search tools only
}

// failStage walks a tool through MaxFailures: count equivalent failures,
// hint, let one evidence-backed attempt run, abort if it fails the same way.
type failStage uint8

const (
	failCounting  failStage = iota
	failHinted              // the hint was given; the next call runs
	failAttempt             // the evidence-backed attempt is running
	failAbortNext           // the attempt failed the same way
)

type failState struct {
	chain   uint32  // counts the chains of the turn: the scope of a hint
	count   int     // equivalent failures in a row
	sig     Hash    // masked error text of the last failure
	shape   string  // argsShape of the last failure
	key     callKey // the call of the last failure
	changes uint32  // turnState.changes at the last failure
	stage   failStage
	// diagnosed: the attempt runs after the model's own diagnosis, not
	// after a hint (diagnosis.go): if it fails the same way, the next
	// retry gets the hint rather than an abort.
	diagnosed bool
}

// check tells whether the rule fires for the tool's next call, and whether
// it must abort at once (the attempt failed the same way). Only a retry
// (retries reports it) fires: other arguments are another approach.
func (f *failState) check(max int, retries func() bool) (fire, insisted bool) {
	switch {
	case f == nil:
		return false, false // no failure yet
	case f.stage == failCounting:
		return f.count >= max && retries(), false
	case f.stage == failAbortNext:
		return retries(), !f.diagnosed
	}
	return false, false
}

// allowed books that a call of the tool will run: after the hint, the
// attempt.
func (f *failState) allowed() {
	if f != nil && f.stage == failHinted {
		f.stage = failAttempt
	}
}

// restart starts a new chain (or none).
func (f *failState) restart(count int) { *f = failState{chain: f.chain + 1, count: count} }

// refresh starts over when another call may have changed the world since
// the last failure.
func (f *failState) refresh(changes uint32) {
	if f != nil && f.count > 0 && f.changes != changes {
		f.restart(0)
	}
}

// record books an outcome of the tool. Failures are equivalent, with
// nothing changed in between, when they repeat the same call, or when
// tweaked arguments (canon.Tweaked) or the attempt after the hint fail
// with the same masked error text.
func (f *failState) record(failed bool, sig Hash, shape string, key callKey, changes uint32) {
	if !failed {
		f.restart(0)
		return
	}
	if f.count > 0 && f.changes == changes && (key == f.key || sig == f.sig && (f.stage == failAttempt || canon.Tweaked(shape, f.shape))) {
		f.count++
		if f.stage == failAttempt {
			f.stage = failAbortNext
			return // the retries it watches stay those before the attempt
		}
	} else {
		f.restart(1)
	}
	f.sig, f.shape, f.key, f.changes = sig, shape, key, changes
}

// recordFailure books an outcome of the tool in its failState, which the
// first failure allocates.
func (s *toolState) recordFailure(failed bool, sig Hash, shape string, key callKey, changes uint32) {
	if s.fail == nil {
		if !failed {
			return
		}
		s.fail = &failState{}
	}
	s.fail.record(failed, sig, shape, key, changes)
}

// toolStats are the counters behind the escalation summary.
type toolStats struct {
	reserved   int32 // calls allowed (session quotas count these)
	ok         int32
	failed     int32
	newResults int32
	skipped    int32
}

// toolSkips counts the skips of a tool by reason, over the session and in
// the turn of its toolState.
type toolSkips struct {
	session, turn [numReasons]int32
}

func (s *toolStats) finish(failed, progress bool) {
	if failed {
		s.failed++
		return
	}
	s.ok++
	if progress {
		s.newResults++
	}
}

// turnState is everything Reset clears.
type turnState struct {
	phase Phase
	// changes counts the calls of the turn that succeeded with progress of
	// their own and whose tool is not read-only: each may have changed the
	// world. Only equality with what keys and failures remember of it
	// matters: it may wrap.
	changes    uint32
	reserved   int // budget units held by allowed calls
	used       int // budget units used by recorded calls
	skipped    int
	failed     int
	newResults int
	hand       int32 // the slot the eviction looks at next (see evict)
	// slab holds the state of the turn's keys; keys finds a key's slot once
	// there are more than maxKeyScan of them (nil before: slab is scanned).
	keys    map[callKey]int32
	slab    []keyState
	rounds  *roundBook // unitRounds only
	pending []pendingCall
	stop    stop // the first Abort of the turn, or the wind-down
	esc     escalation
}

// stop is what stopped a turn: the rule and the tool of its first Abort.
type stop struct {
	reason Reason    // ReasonNone: the turn was not stopped
	tool   *toolRule // nil for a call without a tool name
}

const maxKeyScan = 16

func (ts *turnState) init(c *config) {
	if c.unit == unitRounds {
		ts.rounds = &roundBook{open: make(map[uint64]*roundState)}
	}
}

func (ts *turnState) reset() {
	ts.phase, ts.changes = PhaseNormal, 0
	ts.esc.reset()
	ts.stop = stop{}
	ts.reserved, ts.used, ts.skipped, ts.failed, ts.newResults = 0, 0, 0, 0, 0
	clear(ts.keys) // kept, like the slab, for the next turn
	clear(ts.slab)
	ts.slab, ts.hand = ts.slab[:0], 0
	if ts.rounds != nil {
		clear(ts.rounds.open)
		ts.rounds.finished = ts.rounds.finished[:0]
	}
	clear(ts.pending) // Reset copied them to the stale calls
	ts.pending = ts.pending[:0]
}

// keyState returns the state of the key k and its slot in ts.slab, or a
// zero state and -1 if the turn has none.
func (ts *turnState) keyState(k callKey) (keyState, int32) {
	if ts.keys == nil {
		for i := range ts.slab {
			if ts.slab[i].key == k {
				return ts.slab[i], int32(i)
			}
		}
	} else if i, ok := ts.keys[k]; ok {
		return ts.slab[i], i
	}
	return keyState{}, -1
}

// storeKey stores the state of k in its slot, or in a new slot if slot is
// -1, and returns the slot. Past maxKeys keys in one turn a new key takes
// the slot of a settled key that evict forgets (it starts its count over).
// A key with a pending call is never forgotten: its slot stays valid.
func (ts *turnState) storeKey(k callKey, slot int32, s keyState) int32 {
	s.key = k
	if slot >= 0 {
		s.used = true
		ts.slab[slot] = s
		return slot
	}
	if len(ts.slab) >= maxKeys {
		slot = ts.evict()
		ts.slab[slot] = s
	} else {
		if cap(ts.slab) == 0 {
			ts.slab = make([]keyState, 0, 4) // grown as the turn goes on
		}
		slot = int32(len(ts.slab))
		ts.slab = append(ts.slab, s)
	}
	switch {
	case ts.keys != nil:
		ts.keys[k] = slot
	case len(ts.slab) > maxKeyScan:
		ts.keys = make(map[callKey]int32, len(ts.slab))
		for i := range ts.slab {
			ts.keys[ts.slab[i].key] = int32(i)
		}
	}
	return slot
}

// evict forgets a settled key and returns its slot, by the clock
// algorithm: a hand goes round the slots, passes a pending key, passes a
// key stored again since it last passed (a repeat) once, clearing its
// mark, and forgets the first other key. Each step clears a mark a store
// set or passes one of at most maxPending calls: O(1) amortized.
func (ts *turnState) evict() int32 {
	for {
		i := ts.hand
		ts.hand = (ts.hand + 1) % int32(len(ts.slab))
		st := &ts.slab[i]
		switch {
		case st.pending > 0:
		case st.used:
			st.used = false
		default:
			delete(ts.keys, st.key)
			*st = keyState{}
			return i
		}
	}
}

// appendBounded appends it to s, growing s to at most size elements.
func appendBounded[T any](s []T, it T, size int) []T {
	if len(s) == cap(s) {
		grown := make([]T, len(s), min(max(2*len(s), 2), size))
		copy(grown, s)
		s = grown
	}
	return append(s, it)
}

// acrossTurns remembers, over the session, the calls whose last runs
// failed the same way (the same masked error text) in consecutive turns
// (see failures); a success of the call forgets it.
type acrossTurns struct {
	calls map[callKey]acrossCall
}

type acrossCall struct {
	sig   uint64 // Hash.short of the masked error text
	turns int    // consecutive turns, ending with turn, in which it failed with sig
	turn  int
}

// maxAcross bounds the calls remembered; past it the map starts over.
const maxAcross = 256

// record books that the last run of a call in turn failed with the error
// text sig, when the turn ends.
func (a *acrossTurns) record(key callKey, sig uint64, turn int) {
	c, ok := a.calls[key]
	if a.calls == nil || !ok && len(a.calls) >= maxAcross {
		a.calls = make(map[callKey]acrossCall)
	}
	if c.turn == turn-1 && c.sig == sig {
		c.turns++
	} else {
		c.turns = 1
	}
	c.sig, c.turn = sig, turn
	a.calls[key] = c
}

// forget forgets a call that succeeded.
func (a *acrossTurns) forget(key callKey) { delete(a.calls, key) }

// check returns the number of consecutive earlier turns in which the call
// failed the same way when it reaches min, and 0 otherwise. (The
// escalation gives its hint once per turn.)
func (a *acrossTurns) check(key callKey, turn, min int) int {
	c, ok := a.calls[key]
	if !ok || c.turn != turn-1 || c.turns < min {
		return 0
	}
	return c.turns
}
