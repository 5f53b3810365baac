package toolguard

import (
	"maps"
	"slices"
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
	// changes is the turn's change counter (docs/concepts.md, "How the core
	// decides"); only equality with what keys and failures remember of it
	// matters: it may wrap.
	changes  uint32
	reserved int                       // budget units held by allowed calls
	used     int                       // budget units used by recorded calls
	stats    toolStats                 // of all calls (invalid ones too); reserved unused
	keys     table[callKey, *keyState] // at most maxKeys (see addKey)
	rounds   *roundBook                // unitRounds only
	pending  []pendingCall
	stopBy   Reason    // the rule of the turn's first Abort; ReasonNone: none
	stopTool *toolRule // its tool; nil for a call without a tool name
	esc      escalation
}

// reset starts a turn with nothing booked.
func (ts *turnState) reset(c *config) {
	*ts = turnState{}
	if c.unit == unitRounds {
		ts.rounds = &roundBook{open: make(map[uint64]*roundState)}
	}
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

// table maps keys to values: its first tableScan entries in a slice
// scanned, the rest in a map (a Go map costs a few hundred bytes even for
// one entry; most sessions call a few tools with a few arguments).
type table[K comparable, V any] struct {
	small []tableEntry[K, V]
	big   map[K]V // nil until small is full
}

type tableEntry[K comparable, V any] struct {
	k K
	v V
}

const tableScan = 16

// get returns the value of k, or the zero V.
func (t *table[K, V]) get(k K) V {
	for _, e := range t.small {
		if e.k == k {
			return e.v
		}
	}
	return t.big[k]
}

// put adds k, which t does not hold, with the value v.
func (t *table[K, V]) put(k K, v V) {
	if len(t.small) < tableScan {
		t.small = append(t.small, tableEntry[K, V]{k, v})
		return
	}
	if t.big == nil {
		t.big = make(map[K]V)
	}
	t.big[k] = v
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
