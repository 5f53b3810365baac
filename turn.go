package toolguard

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
