package toolguard

// detector is one loop rule: a plain type with its own state, run by the
// Tracker under its lock, in the order of Tracker.rules.
type detector interface {
	// check reports whether the rule would refuse the call; it never
	// changes state. The escalation decides the verdict.
	check(p *probe) (firing, bool)
	// allowed books that the call will run (every rule passed it).
	allowed(p *probe)
	// recorded books the outcome of an allowed call.
	recorded(p *probe, r *outcome)
	// endTurn keeps what survives the end of turn, and nothing else.
	endTurn(turn int)
}

// outcome is what the Tracker derives from a Record, for the detectors.
type outcome struct {
	seq      uint64 // the call's ledger entry
	failed   bool
	digest   Hash   // of the result (noise masked), or of a failure's error text (masked)
	shape    string // of a failure's arguments (canon.Args.Shape)
	progress bool   // the key made progress (repeats.progress)
	changes  uint32 // turnState.changes after the call
}

// stateless gives a rule that keeps no state of its own the methods it
// does nothing in.
type stateless struct{}

func (stateless) allowed(*probe)            {}
func (stateless) recorded(*probe, *outcome) {}
func (stateless) endTurn(int)               {}

// runLength is the state of a rule that counts a run of the turn's calls
// (streak, revisits): its length and a number per run, the scope of a hint.
type runLength struct {
	stateless
	n   int32  // calls in the run
	run uint32 // counts the runs
}

// step lengthens the run (grow) or ends it with the call p; a call of an
// exempt tool does neither.
func (r *runLength) step(p *probe, grow bool) {
	switch {
	case p.rule.exempt:
	case grow:
		r.n++
	case r.n > 0:
		r.endTurn(0)
	}
}

func (r *runLength) endTurn(int) {
	r.n = 0
	r.run++
}
