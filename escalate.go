package toolguard

// rule names a rule as a scope of hints: a hint given by one rule in one
// scope makes that rule's next firing in the scope an Abort.
type rule uint8

const (
	ruleLimit   rule = iota // the per-turn limit of a tool
	ruleQuota               // a session quota, local or shared, of a tool
	ruleRepeat              // identical calls
	ruleSimilar             // similar search queries of a tool
	ruleFailure             // a tool's failure chain
	ruleAcross              // a call failing the same way turn after turn
	ruleCycle               // the turn's cycle
	ruleChurn               // a tool's window of similar searches or fetches
	ruleStreak              // the turn's run of failures across tools
	ruleReword              // a tool's calls reworded (chain: the form's digest)
	ruleRevisit             // the turn's run of calls that brought nothing new (chain: the run)
)

// hintScope is where a hint counts (docs/concepts.md, "Hint, then abort"):
// a rule and, as the rule has it, a tool, a call, a chain; zero for the rest.
type hintScope struct {
	rule  rule
	tool  *toolEntry
	key   callKey
	chain uint32 // a tool's failure chain (failState.chain), a run (runLength.run), a form's digest
}

// firing is what a rule reports when it would refuse a call. Rules never
// see the Action: the escalation decides Hint or Abort.
type firing struct {
	reason       Reason
	scope        hintScope
	count, limit int    // for LoopError
	msg          string // the hint's text
	abort        bool   // abort whatever was hinted (the attempt after a failure hint failed the same way)
	once         bool   // one hint per scope and turn, never an Abort: then the call runs
}

// callHint is the hint a call got, whichever rule gave it.
type callHint struct {
	round   uint64
	changes uint32 // turnState.changes when it was given
	reason  Reason
}

// escalation remembers the hints of the turn: the round of the hint in each
// scope, and the hint each call got (forgotten when the call makes
// progress). Both maps are made at the turn's first hint.
type escalation struct {
	scopes map[hintScope]uint64
	calls  map[callKey]callHint
}

// insisted reports whether the call was hinted in an earlier round, by any
// rule but the failure chain's, and nothing changed since (a key that made
// progress is forgotten): one escalation per call, whichever rule gave the
// hint. After a failure hint one attempt runs (see failState).
func (e *escalation) insisted(p *probe) (firing, bool) {
	h, ok := e.calls[p.key]
	if !ok || h.round == p.round || h.changes != p.changes || h.reason == ReasonRepeatedFailure {
		return firing{}, false
	}
	return firing{reason: h.reason, scope: hintScope{rule: ruleRepeat, key: p.key}, msg: insistMessage(p.rule.name), abort: true}, true
}

// decide returns the verdict for a firing (docs/concepts.md, "Hint, then
// abort"): a Hint the first time in its scope (with ActionHint), an Abort
// when the scope or this very call was hinted in an earlier round, or with
// ActionAbort. A firing once in its scope and turn is remembered whatever its
// verdict and never marks the call; ok is false when it fired already (the
// call goes on to the next rule).
func (e *escalation) decide(p *probe, f firing, action Action) (v Verdict, ok bool) {
	r, scoped := e.scopes[f.scope]
	h, called := e.calls[p.key]
	insists := scoped && r != p.round && f.scope.key == (callKey{}) ||
		called && h.changes == p.changes && h.round != p.round
	switch {
	case f.once && scoped:
		return Allow, false
	case !f.once && (f.abort || action != ActionHint || insists):
		return Abort, true
	}
	e.remember(p, f)
	if f.once && action != ActionHint {
		return Abort, true
	}
	return Hint, true
}

// remember books a firing in its scope and, but for a firing once, as the
// call's hint (a call's scope is that hint: in scopes only once).
func (e *escalation) remember(p *probe, f firing) {
	if e.scopes == nil {
		e.scopes = make(map[hintScope]uint64)
		e.calls = make(map[callKey]callHint)
	}
	if f.once || f.scope.key == (callKey{}) {
		e.scopes[f.scope] = p.round
	}
	if !f.once {
		e.calls[p.key] = callHint{round: p.round, changes: p.changes, reason: f.reason}
	}
}

// forget drops the hint of a call that made progress.
func (e *escalation) forget(key callKey) { delete(e.calls, key) }
