package toolguard

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolguard/toolguard/internal/canon"
)

// Call is one tool call the model asked for.
type Call struct {
	ID   string          // the provider's call id; optional
	Tool string          // required
	Args json.RawMessage // the arguments as JSON; nil or empty means none
}

// Outcome is what running a call produced.
type Outcome struct {
	Result string // what the tool returned (text the model sees)
	Err    error  // non-nil when the call failed
	// Cancelled is set when the caller gave up on the call before it
	// returned: Result and Err are ignored, Record gives back what the call
	// took and books nothing (docs/concepts.md, "The two-step API").
	Cancelled bool
}

// Decision is the answer of ShouldSkip: run the call, or what to do instead.
type Decision struct {
	Verdict Verdict
	Reason  Reason
	// Message is, for Hint or Abort, the tool result to give the model
	// instead of running the call: it starts with a marker (HintMarker for
	// the loop rules) and never pretends to be the tool's output.
	Message string
	Phase   Phase // the turn budget's phase
	// Err is, for Abort, a *LoopError (errors.Is(err, ErrLoop)), a
	// *BudgetError (errors.Is(err, ErrBudgetExhausted)) or, for a call that
	// cannot be checked, an error matching ErrInvalidCall.
	Err error
}

// Skip reports whether the call must not run (Hint or Abort).
func (d Decision) Skip() bool { return d.Verdict != Allow }

// Tracker guards the tool calls of one agent session. Call ShouldSkip
// before each tool call, Record after it ran, and Reset when new user input
// starts a new turn. A Tracker is safe for concurrent use by the parallel
// tool calls of a turn. Create it with NewTracker, or with
// Sessions.NewTracker when a server opens many sessions of one Policy.
type Tracker struct {
	cfg   *config       // shared with the other Trackers of a Sessions
	round atomic.Uint64 // the last round handed out

	// tools (at most maxTools) are looked up before t.mu is taken.
	toolMu   sync.Mutex
	released atomic.Bool // by Sessions.Release: the Tracker must not be used
	tools    table[string, *toolEntry]

	mu           sync.Mutex
	turnNo       int
	stoppedTurns int // earlier turns of the session that were stopped
	invalidCalls int // calls without a tool name, over the session
	turn         turnState
	ledger       ledger
	stale        []pendingCall // calls allowed in earlier turns, not yet recorded
	loopRules
}

// loopRules is the state of the loop rules (Tracker.rules gives their order).
type loopRules struct {
	limits   limits
	repeats  repeats
	similar  similar
	failures failures
	cycles   cycles
	churn    churn
	streak   streak
	reworded reworded
	revisits revisits
}

// Bounds of the state a hostile stream of tool names, argument shapes or
// unfinished calls could otherwise grow without limit.
const (
	maxTools   = 4096 // tools with state kept over the session
	maxPending = 4096
	maxStale   = 256
	maxKeys    = 1 << 16
	// maxTurnQueries bounds the search queries (about 2 KiB each) a turn
	// keeps over all its tools: past it, a query is checked but not kept.
	maxTurnQueries = 4096
)

// NewTracker returns a Tracker for a new session under policy p. The zero
// Policy means the defaults. A server that opens many sessions of one
// Policy uses Sessions instead: the Policy and each tool's policy are then
// resolved once for all of them, not once per session.
func NewTracker(p Policy) *Tracker {
	cfg := newConfig(p)
	return newTracker(&cfg)
}

func newTracker(cfg *config) *Tracker {
	t := &Tracker{cfg: cfg, turnNo: 1}
	t.clearState()
	return t
}

// clearState starts the tools, ledger, turn and loop rules with no state.
func (t *Tracker) clearState() {
	cfg := t.cfg
	t.toolMu.Lock()
	t.tools = table[string, *toolEntry]{}
	t.toolMu.Unlock()
	t.ledger = ledger{}
	t.stale = nil
	t.turn.reset(cfg)
	t.loopRules = loopRules{limits: limits{cfg: cfg}, similar: similar{cfg: cfg}, churn: churn{cfg: cfg},
		failures: failures{cfg: cfg}, streak: streak{cfg: cfg}, cycles: cycles{ledger: &t.ledger}}
}

// rules returns the loop rules in the order they run.
func (t *Tracker) rules() [9]detector {
	return [...]detector{&t.limits, &t.repeats, &t.similar, &t.reworded, &t.failures, &t.cycles, &t.revisits, &t.churn, &t.streak}
}

// toolEntry is what the Tracker knows of one tool name: its resolved policy,
// which never changes and may be shared with other sessions, and its
// counters, guarded by Tracker.mu.
type toolEntry struct {
	rule    *toolRule  // with the tool's name
	skips   *toolSkips // allocated at the tool's first skip
	session toolStats  // over the session
	turn    toolState  // over the turn; Reset clears it (turn.turn: set when called in it)
}

// tool returns the entry of a tool, resolving its policy the first time.
// Past maxTools tools, a new name gets a fresh entry each time, checked
// only by the rules keyed by name (docs/concepts.md, "The ledger and the
// summary").
func (t *Tracker) tool(name string) *toolEntry {
	t.toolMu.Lock()
	defer t.toolMu.Unlock()
	if e := t.tools.get(name); e != nil {
		return e
	}
	e := &toolEntry{rule: t.cfg.rule(name)}
	if t.tools.len() < maxTools {
		t.tools.put(name, e)
	}
	return e
}

// turnTool returns the turn's state of a tool, which Reset cleared, marked
// as the turn's. t.mu must be held.
func (t *Tracker) turnTool(e *toolEntry) *toolState {
	e.turn.turn = int32(t.turnNo)
	return &e.turn
}

// ShouldSkip checks a call before it runs. On Allow the call holds a budget
// slot until Record; on Hint or Abort it must not run and must not be
// recorded. The call is its own round: use ShouldSkipRound for the calls of
// one model response.
func (t *Tracker) ShouldSkip(c Call) Decision {
	return t.ShouldSkipContext(context.Background(), c)
}

// ShouldSkipContext is ShouldSkip with a context: for the Store, when the
// policy has one, and for the round, when ctx comes from WithRound (the
// call is then checked in that round, like a call of ShouldSkipRound).
func (t *Tracker) ShouldSkipContext(ctx context.Context, c Call) Decision {
	var d [1]Decision
	t.checkRound(ctx, []Call{c}, d[:])
	return d[0]
}

// WithRound returns a context that makes the calls checked with it one
// round: the calls that one model response asked for together. Call it
// once per model response and pass the context to each of its calls, run
// through Run or ShouldSkipContext, in parallel or one after the other:
// similar queries among them are distinct questions, and with Policy.CountRounds
// they use one budget unit. A context from another Tracker's WithRound
// counts for nothing here.
func (t *Tracker) WithRound(ctx context.Context) context.Context {
	return context.WithValue(ctx, roundKey{}, roundMark{t: t, round: t.round.Add(1)})
}

type roundKey struct{}

type roundMark struct {
	t     *Tracker
	round uint64
}

// ShouldSkipRound checks the calls that one model response asked for
// together, as one round (see WithRound). The decisions are in the order of
// calls.
func (t *Tracker) ShouldSkipRound(calls []Call) []Decision {
	return t.ShouldSkipRoundContext(context.Background(), calls)
}

// ShouldSkipRoundContext is ShouldSkipRound with a context: for the Store
// (the calls the local rules allow reserve their shared counters in one
// operation, bounded by Policy.StoreTimeout), for the events, and for the
// round: when ctx comes from WithRound, the calls join that round.
func (t *Tracker) ShouldSkipRoundContext(ctx context.Context, calls []Call) []Decision {
	ds := make([]Decision, len(calls))
	t.checkRound(ctx, calls, ds)
	return ds
}

// probe is what the Tracker derives from a call before taking its lock.
type probe struct {
	round   uint64
	tool    *toolEntry
	rule    *toolRule
	key     callKey
	args    Hash   // of the arguments
	query   string // normalized; search tools only
	purpose string // the ledger's, when not query: query with its secrets redacted
	sim     simKey // of query, computed before the lock is taken
	scope   Hash   // of the arguments other than the query
	url     string // host and path; calls whose arguments hold a URL

	// Set under the lock for the rules (see probeLocked).
	turn    *toolState // the tool's state in the turn
	ks      *keyState  // the key's state in the turn
	turnNo  int
	changes uint32   // turnState.changes
	used    int      // budget units used in the turn
	seq     uint64   // the call's ledger entry, once allowed
	held    *simKey  // the query's key the similar rule keeps, once allowed
	s       *scratch // holds the probe and the scan of the arguments until the call is decided
}

// inspect derives the probe of a call of round from one scan of its
// arguments (kept until p.s.release) and, when it has no query, its
// purpose (its argument names: scratch.names).
func (t *Tracker) inspect(c Call, round uint64) *probe {
	sc := getScratch()
	p := &sc.p
	*p = probe{round: round, tool: t.tool(c.Tool), s: sc}
	p.rule = p.tool.rule
	s := &sc.scan
	s.Scan(c.Args)
	p.args = Hash(s.Hash(p.rule.ignore))
	p.key = callKey{p.rule.name, p.args}
	if p.rule.search {
		if k, q, ok := s.StringArg(queryKeys, redactMaxBytes); ok {
			p.query = normalizeQuery(q)
			if r := Redact(q); r != q {
				p.purpose = normalizeQuery(r)
			}
			p.sim = simKeyOf(p.query)
			p.sim.specific = specificBits(q)
			// The other arguments: page 2, another path, is a new question.
			p.scope = Hash(s.Hash(append(slices.Clip(p.rule.ignore), k)))
		}
	}
	switch {
	case p.query != "":
	case len(c.Args) > canon.InspectMax: // hashed, not read for a URL or names
		sc.names = fmt.Appendf(sc.names[:0], "arguments of %d bytes", len(c.Args))
	default: // its URL (for the window rule) and argument names
		if host, path, ok := s.URL(); ok {
			p.url = host + path
		}
		sc.names = s.AppendNames(sc.names[:0])
	}
	return p
}

// queryKeys are the argument keys a search query is taken from, in order.
var queryKeys = []string{"query", "search_query", "q", "text", "question", "prompt"}

// checkRound decides the calls of one round (ctx's from WithRound, or a
// new one) in order into ds; those that ask the Store are decided again
// with its grants, after the others (docs/concepts.md, "The two-step API").
func (t *Tracker) checkRound(ctx context.Context, calls []Call, ds []Decision) {
	m, ok := ctx.Value(roundKey{}).(roundMark)
	if !ok || m.t != t {
		m.round = t.round.Add(1)
	}
	var wait []int      // the calls that ask the Store
	var probes []*probe // theirs
	b := batch{now: t.cfg.now(), evs: events{on: t.cfg.hooked}}
	for i, c := range calls {
		switch {
		case t.released.Load():
			ds[i] = releasedDecision()
		case c.Tool == "":
			ds[i] = t.invalid(ctx, c, m.round)
		default:
			p := t.inspect(c, m.round)
			var ask bool
			if ds[i], ask = t.decide(c, p, nil, &b); ask {
				wait = append(wait, i)
				probes = append(probes, p)
			} else {
				p.s.release()
			}
		}
	}
	if len(wait) > 0 {
		first := calls[wait[0]]
		var refused []held
		for k, g := range t.reserve(ctx, first, probes, &b.evs) {
			i, p := wait[k], probes[k]
			if len(refused) > 0 && g.err == nil && !g.g.OK {
				// An earlier call of the round, refused after all, may hold the
				// units the Store refused this one for: return them, ask again.
				t.settle(ctx, first, refused, false, &b.evs)
				refused = nil
				g = t.reserve(ctx, calls[i], probes[k:k+1], &b.evs)[0]
			}
			ds[i], _ = t.decide(calls[i], p, g, &b)
			if g.r.ID != "" && ds[i].Verdict != Allow {
				refused = append(refused, g.held)
			}
			p.s.release()
		}
		t.settle(ctx, first, refused, false, &b.evs) // nothing when none was refused
	}
	t.flush(ctx, &b)
}

// invalid refuses and books a call without a tool name.
func (t *Tracker) invalid(ctx context.Context, c Call, round uint64) Decision {
	d := Decision{Verdict: Abort, Reason: ReasonInvalidCall, Message: invalidMessage,
		Err: invalidCallError("the call has no tool name")}
	b := batch{now: t.cfg.now(), evs: events{on: t.cfg.hooked}}
	t.mu.Lock()
	d.Phase = t.turn.phase
	seq := t.appendLocked(c, Hash{}, nil, round, b.now, d)
	t.turn.stats.skipped++
	t.invalidCalls++
	if t.turn.stopBy == ReasonNone {
		t.turn.stopBy = ReasonInvalidCall
	}
	b.evs.add(Event{Kind: EventDecision, Seq: seq, Turn: t.turnNo, CallID: c.ID, Decision: d, Phase: d.Phase})
	t.mu.Unlock()
	t.flush(ctx, &b)
	return d
}

// decide decides a call, under the lock, by the budget, the Store's grant g
// and the loop rules, in order, and books the decision. A call that needs the
// Store and has no grant yet is booked only when refused: otherwise ask is
// true (ask the Store, then decide again with its grant). Sessions.Release
// sets released under the lock: a call tested before the lock or waiting
// for the Store may find it set here.
func (t *Tracker) decide(c Call, p *probe, g *grant, b *batch) (d Decision, ask bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released.Load() {
		return releasedDecision(), false
	}
	ts := &t.turn
	t.probeLocked(p)
	from := ts.phase
	d, fired := t.budgetLocked(p.round)
	if !fired {
		d, fired = t.storeLocked(c, p, g)
	}
	if !fired {
		d, fired = t.rulesLocked(p)
	}
	if !fired && g == nil && len(p.rule.counters) > 0 {
		return Decision{}, true
	}
	if d.Reason != ReasonBudget {
		d.Phase = ts.phase // a refusal by the budget is PhaseExhausted
	}
	if d.Verdict == Abort && ts.stopBy == ReasonNone {
		ts.stopBy, ts.stopTool = d.Reason, p.rule
	}
	t.bookLocked(c, p, d, g, b)
	b.evs.add(Event{Kind: EventDecision, Seq: p.seq, Turn: t.turnNo, CallID: c.ID, Tool: c.Tool, Decision: d, Phase: d.Phase})
	t.phaseEvent(&b.evs, c, p.seq, from)
	return d, false
}

// probeLocked sets what the rules read of the turn in p. A key new to the
// turn has a zero state (p.s.ks) until bookLocked adds it.
func (t *Tracker) probeLocked(p *probe) {
	ts := &t.turn
	p.s.ks = keyState{}
	p.turn, p.ks = t.turnTool(p.tool), cmp.Or(ts.keys.get(p.key), &p.s.ks)
	p.turnNo, p.changes, p.used = t.turnNo, ts.changes, ts.used
}

// bookLocked books the decision d of the call p: its ledger entry, and its
// skip or, when allowed, its budget unit, counters, the rules' state and
// its pending call (holding g's reservation, if any).
func (t *Tracker) bookLocked(c Call, p *probe, d Decision, g *grant, b *batch) {
	ts := &t.turn
	p.seq = t.appendLocked(c, p.args, t.descLocked(p), p.round, b.now, d)
	p.ks.used = true
	if d.Verdict != Allow {
		ts.stats.skipped++
		p.turn.stats.skipped++
		p.tool.session.skipped++
		if p.tool.skips == nil {
			p.tool.skips = &toolSkips{}
		}
		p.tool.skips.session[d.Reason]++
		p.tool.skips.turn[d.Reason]++
		return
	}
	ts.hold(p.round)
	p.turn.stats.reserved++
	p.tool.session.reserved++
	if len(ts.pending) >= maxPending {
		// The oldest pending call is given up: its key may be forgotten.
		ts.pending[0].ks.pending--
		b.drop(ts.pending[:1])
		ts.pending = append(ts.pending[:0], ts.pending[1:]...)
	}
	if p.ks == &p.s.ks {
		p.ks = ts.addKey(p.key)
	}
	for _, r := range t.rules() {
		r.allowed(p)
	}
	pc := pendingCall{seq: p.seq, id: c.ID, key: p.key, ks: p.ks, tool: p.tool, round: p.round, at: b.now, args: c.Args}
	if g != nil {
		pc.res = g.held
	}
	ts.pending = append(ts.pending, pc)
}

// descLocked returns the ledger's description of a call: its tool and
// purpose, its query or else the names of its arguments, with secrets
// redacted.
func (t *Tracker) descLocked(p *probe) *callDesc {
	names := p.s.names
	if p.purpose != "" || p.query != "" {
		return &callDesc{rule: p.rule, purpose: cmp.Or(p.purpose, p.query)}
	}
	// Most calls of a tool name the same arguments as its last call: they
	// share its description, in every session.
	if d := p.rule.desc.Load(); d != nil && string(names) == d.purpose {
		return d
	}
	d := &callDesc{rule: p.rule, purpose: Redact(string(names))}
	if d.purpose == string(names) {
		p.rule.desc.Store(d)
	}
	return d
}

// rulesLocked decides a call by the loop rules: the hinted call again, then
// each rule in order (docs/concepts.md, "How the core decides", 3 to 5).
func (t *Tracker) rulesLocked(p *probe) (Decision, bool) {
	if f, ok := t.turn.esc.insisted(p); ok {
		f.count, f.limit = int(p.ks.countAt(p.changes)), p.rule.maxRepeats
		return t.escalate(p, f)
	}
	for _, r := range t.rules() {
		if f, fired := r.check(p); fired {
			if d, ok := t.escalate(p, f); ok {
				return d, true
			}
		}
	}
	return Decision{}, false
}

// escalate turns a firing into a decision (see escalation.decide); ok is
// false when the firing is passed over. After a failure hint, the failure
// chain lets one attempt run.
func (t *Tracker) escalate(p *probe, f firing) (d Decision, ok bool) {
	v, ok := t.turn.esc.decide(p, f, t.cfg.action)
	if !ok {
		return Decision{}, false
	}
	d = Decision{Verdict: v, Reason: f.reason, Message: f.msg}
	if v == Abort {
		d.Err = &LoopError{Tool: p.rule.name, Reason: f.reason, Count: f.count, Limit: f.limit, Key: p.args}
	} else if f.scope.rule == ruleFailure {
		t.failures.hinted(p)
	}
	return d, true
}

// Record books the outcome of a call that ShouldSkip allowed and returns
// the turn's phase after it: PhaseNudge from the call at NudgeRatio of the
// budget, PhaseWindDown from the last call of the budget. A call that was
// never checked is booked as allowed. A Record for a call allowed before
// the last Reset updates that call's ledger entry and nothing of the new
// turn.
func (t *Tracker) Record(c Call, o Outcome) Phase {
	return t.RecordContext(context.Background(), c, o)
}

// RecordContext is Record with the call's context: the Store's commit
// runs under it (bounded by Policy.StoreTimeout) and the events of the
// Record carry it (Event.Context), so hooks and log handlers can join
// them to the call's trace.
func (t *Tracker) RecordContext(ctx context.Context, c Call, o Outcome) Phase {
	if t.released.Load() {
		return PhaseExhausted
	}
	if c.Tool == "" {
		return t.Guidance().Phase
	}
	if o.Cancelled {
		return t.cancel(ctx, c)
	}
	sc := getScratch()
	defer sc.release()
	out := &sc.out
	out.failed = o.Err != nil
	raw := o.Result // kept with KeepRaw
	if out.failed {
		raw = o.Err.Error()
	}
	res := cmp.Or(raw, o.Result)
	search := t.tool(c.Tool).rule.search
	if out.failed || search {
		sc.scan.Scan(c.Args)
	}
	if search { // a search tool's query echoed back is no news (echo.go)
		if _, q, ok := sc.scan.StringArg(queryKeys, maxEchoQuery); ok {
			res = unechoed(res, q)
		}
	}
	if out.failed {
		out.digest, out.shape = Hash(canon.DigestError(res)), sc.scan.Shape()
	} else {
		out.digest = Hash(canon.DigestResult(res))
	}
	b := batch{now: t.cfg.now(), evs: events{on: t.cfg.hooked}}
	t.mu.Lock()
	phase, pc := t.recordLocked(c, raw, t.keyLocked(c, sc), sc, &b)
	t.mu.Unlock()
	t.settle(ctx, c, []held{pc.res}, true, &b.evs)
	t.flush(ctx, &b)
	return phase
}

// recordLocked books the outcome sc.out of the call c, whose key is key
// and whose raw result is raw, as Record says, and returns its pending call.
func (t *Tracker) recordLocked(c Call, raw string, key callKey, sc *scratch, b *batch) (Phase, pendingCall) {
	ts, p, out := &t.turn, &sc.p, &sc.out
	from := ts.phase
	pc, stale, ok := t.takeLocked(c, key)
	if !ok {
		pc = t.allowUncheckedLocked(c, b)
	}
	if !stale {
		*p = probe{tool: pc.tool, rule: pc.tool.rule, key: key, round: pc.round,
			turn: t.turnTool(pc.tool), ks: pc.ks, turnNo: t.turnNo, changes: ts.changes, s: sc}
		out.seq = pc.seq
		// The change counter (docs/concepts.md, "How the core decides").
		out.progress = t.repeats.progress(p, out)
		if out.progress {
			ts.esc.forget(key)
			if !out.failed && !p.rule.readOnly && !blankArgs(c.Args) {
				ts.changes++
			}
		}
		out.changes = ts.changes
		for _, d := range t.rules() {
			d.recorded(p, out)
		}
		p.turn.stats.finish(out.failed, out.progress)
		pc.tool.session.finish(out.failed, out.progress)
		ts.stats.finish(out.failed, out.progress)
		t.spendLocked(pc.round)
	}
	turn := t.ledger.finish(pc.seq, out.failed, out.progress, b.now.Sub(pc.at), raw, t.cfg.policy.KeepRaw)
	if !stale {
		turn = t.turnNo
	}
	b.evs.add(Event{Kind: EventRecord, Seq: pc.seq, Turn: turn, CallID: c.ID, Tool: c.Tool,
		Failed: out.failed, NewResult: out.progress, Duration: b.now.Sub(pc.at), Phase: ts.phase})
	t.phaseEvent(&b.evs, c, pc.seq, from)
	return ts.phase, pc
}

// phaseEvent adds the event of the phase change the call c made, if any.
func (t *Tracker) phaseEvent(evs *events, c Call, seq uint64, from Phase) {
	if t.turn.phase != from {
		evs.add(Event{Kind: EventPhase, Seq: seq, Turn: t.turnNo, CallID: c.ID, Tool: c.Tool, From: from, Phase: t.turn.phase})
	}
}

// appendLocked adds the ledger entry of a checked call and returns its Seq.
func (t *Tracker) appendLocked(c Call, args Hash, desc *callDesc, round uint64, now time.Time, d Decision) uint64 {
	e := ledgerEntry{callID: c.ID, desc: desc, argsHash: args,
		verdict: uint8(d.Verdict), reason: uint8(d.Reason), phase: uint8(d.Phase)}
	var raw rawEntry
	if t.cfg.policy.KeepRaw { // no arguments: nil
		raw.args = append(json.RawMessage(nil), c.Args...)
	}
	return t.ledger.add(e, t.turnNo, round, now, raw, t.cfg.ledgerKeep, t.cfg.policy.KeepRaw)
}

// Reset starts a new turn (new user input): per-turn counters, the budget,
// the phase and the loop state clear; session-wide tool totals and the
// ledger stay. Calls still running belong to the old turn: their Record
// updates their ledger entries and nothing else.
func (t *Tracker) Reset() {
	b := batch{evs: events{on: t.cfg.hooked}}
	t.mu.Lock()
	t.stale = append(t.stale, t.turn.pending...)
	if n := len(t.stale) - maxStale; n > 0 {
		b.drop(t.stale[:n])
		t.stale = append(t.stale[:0], t.stale[n:]...)
	}
	if t.turn.stopBy != ReasonNone || t.turn.phase >= PhaseWindDown {
		t.stoppedTurns++
	}
	for _, r := range t.rules() {
		r.endTurn(t.turnNo)
	}
	// A tool never called again keeps no turn state (its search queries,
	// up to a megabyte and more) over the session.
	t.toolMu.Lock()
	t.tools.each(func(e *toolEntry) {
		e.turn = toolState{}
		if e.skips != nil {
			e.skips.turn = [numReasons]int32{}
		}
	})
	t.toolMu.Unlock()
	t.turnNo++
	t.turn.reset(t.cfg)
	t.mu.Unlock()
	t.flush(context.Background(), &b)
}

// Ledger returns a copy of the entries in order, at most Policy.LedgerSize
// of the most recent ones.
func (t *Tracker) Ledger() []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ledger.snapshot(t.cfg.ledgerSize)
}

// Guidance is what the harness does for the turn's phase. Tracker.Guidance
// is the one place to read the current phase.
type Guidance struct {
	Phase Phase
	// Message is the text to inject into the model's context: the nudge
	// in PhaseNudge, the wind-down request from PhaseWindDown on; empty in
	// PhaseNormal.
	Message string
	// StripTools is true from PhaseWindDown on: send the next request
	// without tools.
	StripTools bool
}

// Guidance returns what to tell the model for the current phase.
func (t *Tracker) Guidance() Guidance {
	t.mu.Lock()
	phase, used := t.turn.phase, t.turn.used
	t.mu.Unlock()
	g := Guidance{Phase: phase, StripTools: phase >= PhaseWindDown}
	switch phase {
	case PhaseNudge:
		g.Message = nudgeMessage(used, t.cfg.maxCalls, t.cfg.unit)
	case PhaseWindDown, PhaseExhausted:
		g.Message = windDownMessage(t.cfg.maxCalls, t.cfg.unit)
	}
	return g
}

// Result is what a call run with Tracker.Run or RunRound produced.
type Result struct {
	// Text is what the model reads: the tool's output when the call ran,
	// Decision.Message when it did not.
	Text string
	// Err is the tool's error when the call ran and failed, or, for an
	// Abort, Decision.Err: stop the turn. It is nil for a Hint.
	Err error
	// Decision is the check: Verdict Allow when the call ran. Tell a hint
	// from a real result with Decision.Skip(), never by the text.
	Decision Decision
	// Phase is the turn's phase after the call (Record's answer, or
	// Decision.Phase): when it changes, act on Tracker.Guidance.
	Phase Phase
}

// Run checks c and, only when it is allowed, runs it with exec (the
// harness's tool executor: it returns the text the model sees) and records
// its outcome: ShouldSkipContext, exec and RecordContext in one call. The
// call is its own round unless ctx comes from WithRound. A nil exec fails
// every allowed call. A call whose ctx was cancelled by the time exec
// returned is recorded as Outcome.Cancelled (no one reads its result; a
// passed deadline is an answer and is recorded as one).
func (t *Tracker) Run(ctx context.Context, c Call, exec func(context.Context, Call) (string, error)) Result {
	return t.run(ctx, c, t.ShouldSkipContext(ctx, c), exec)
}

// RunRound runs the calls that one model response asked for together, as one
// round (see WithRound): it checks them all first, in order, then runs the
// allowed ones with exec one after another and records each. The results are
// in the order of calls. Allowed calls run even when another call of the
// round was aborted, since the Tracker counted them; stop the turn after the
// round if any result's Decision is an Abort. To run a round's calls in
// parallel, pass one context from WithRound to Run from each goroutine.
func (t *Tracker) RunRound(ctx context.Context, calls []Call, exec func(context.Context, Call) (string, error)) []Result {
	ctx = t.WithRound(ctx)
	ds := t.ShouldSkipRoundContext(ctx, calls)
	rs := make([]Result, len(calls))
	for i, c := range calls {
		rs[i] = t.run(ctx, c, ds[i], exec)
	}
	return rs
}

// errNoExecutor fails the allowed calls of Run and RunRound given no executor.
var errNoExecutor = errors.New("toolguard: Run was given a nil executor")

// run runs a call decided d, if allowed, and records its outcome.
func (t *Tracker) run(ctx context.Context, c Call, d Decision, exec func(context.Context, Call) (string, error)) Result {
	if d.Skip() {
		return Result{Text: d.Message, Err: d.Err, Decision: d, Phase: d.Phase}
	}
	text, err := "", errNoExecutor
	if exec != nil {
		text, err = exec(ctx, c)
	}
	out := Outcome{Result: text, Err: err}
	out.Cancelled = errors.Is(context.Cause(ctx), context.Canceled) // the caller gave up on it
	phase := t.RecordContext(context.WithoutCancel(ctx), c, out)
	return Result{Text: text, Err: err, Decision: d, Phase: phase}
}
