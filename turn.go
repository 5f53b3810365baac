package toolguard

import (
	"maps"
	"slices"

	"github.com/toolguard/toolguard/internal/canon"
)

// callKey identifies identical calls: the same tool with arguments of the
// same canonical hash.
type callKey struct {
	tool string
	args Hash
}

// keyState is the repeat counter of one callKey in the turn.
type keyState struct {
	last    uint64 // digest of the last result or error output (noise masked; see Hash.short)
	count   int32  // identical calls since the key last made progress, pending included
	pending int32  // allowed, not yet recorded (at most maxPending)
	changes uint32 // turnState.changes when the key last ran
	seen    bool   // a result was recorded
	failed  bool   // the last result was a failure
	used    bool   // checked again since the turn was last full (see addKey)
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
	keys       table[callKey, *keyState] // at most maxKeys (see addKey)
	rounds     *roundBook                // unitRounds only
	pending    []pendingCall
	stop       stop // the first Abort of the turn, or the wind-down
	esc        escalation
}

// stop is what stopped a turn: the rule and the tool of its first Abort.
type stop struct {
	reason Reason    // ReasonNone: the turn was not stopped
	tool   *toolRule // nil for a call without a tool name
}

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
	ts.keys.clear()
	if ts.rounds != nil {
		clear(ts.rounds.open)
		ts.rounds.finished = ts.rounds.finished[:0]
	}
	clear(ts.pending) // Reset copied them to the stale calls
	ts.pending = ts.pending[:0]
}

// addKey adds the state of a key new to the turn. Past maxKeys keys, the
// turn first forgets its settled keys not checked again since it was last
// full (when every one was, all of them): a repeat keeps its count a while
// longer, and a key with a pending call is never forgotten.
func (ts *turnState) addKey(k callKey) *keyState {
	for ts.keys.len() >= maxKeys {
		ts.keys.deleteFunc(func(ks *keyState) bool {
			forget := ks.pending == 0 && !ks.used
			ks.used = false
			return forget
		})
	}
	ks := new(keyState)
	ts.keys.put(k, ks)
	return ks
}

// table maps keys to values: a slice scanned while it holds at most
// tableScan entries, a map past that (a Go map costs a few hundred bytes
// even for one entry; most sessions call a few tools with a few arguments).
type table[K comparable, V any] struct {
	small []tableEntry[K, V]
	big   map[K]V // all the entries once there are more than tableScan; nil before
}

type tableEntry[K comparable, V any] struct {
	k K
	v V
}

const tableScan = 16

// get returns the value of k, or the zero V.
func (t *table[K, V]) get(k K) V {
	if t.big != nil {
		return t.big[k]
	}
	for _, e := range t.small {
		if e.k == k {
			return e.v
		}
	}
	var zero V
	return zero
}

// put adds k, which t does not hold, with the value v.
func (t *table[K, V]) put(k K, v V) {
	switch {
	case t.big != nil:
		t.big[k] = v
	case len(t.small) < tableScan:
		t.small = append(t.small, tableEntry[K, V]{k, v})
	default:
		t.big = map[K]V{k: v}
		for _, e := range t.small {
			t.big[e.k] = e.v
		}
		t.small = nil
	}
}

func (t *table[K, V]) len() int { return len(t.small) + len(t.big) }

// each calls f with each value, in no particular order.
func (t *table[K, V]) each(f func(V)) {
	for _, e := range t.small {
		f(e.v)
	}
	for _, v := range t.big {
		f(v)
	}
}

// deleteFunc deletes the entries whose value del returns true for.
func (t *table[K, V]) deleteFunc(del func(V) bool) {
	t.small = slices.DeleteFunc(t.small, func(e tableEntry[K, V]) bool { return del(e.v) })
	maps.DeleteFunc(t.big, func(_ K, v V) bool { return del(v) })
}

// clear empties t, keeping its slice for the next entries.
func (t *table[K, V]) clear() {
	clear(t.small)
	t.small, t.big = t.small[:0], nil
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
