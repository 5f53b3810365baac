package toolguard

import (
	"encoding/json"
	"slices"
	"time"
)

// Entry is one checked call in the ledger, skipped calls included. By
// default it holds no raw arguments or results, which may contain secrets:
// ArgsHash identifies the arguments and Purpose describes the call.
type Entry struct {
	Seq      uint64 `json:"seq"`               // 1, 2, … over the session
	Turn     int    `json:"turn"`              // 1 for the first turn; Reset adds one
	Round    uint64 `json:"round"`             // calls checked together share a round
	CallID   string `json:"call_id,omitempty"` // the provider's call id
	Tool     string `json:"tool"`
	ArgsHash Hash   `json:"args_hash"`
	// Purpose is, for a search tool, its normalized query (lowercase,
	// letters, digits, '_' and single spaces, at most 256 runes); for other
	// tools, the sorted names of its top-level arguments, never their
	// values (at most 8 names of at most 32 bytes), or "arguments of N
	// bytes" past 64 KiB. Secrets (provider keys, passwords, tokens, a URL's
	// user and password: docs/concepts.md, "Redaction") read "[REDACTED]"
	// in both ("redacted" in a normalized query).
	Purpose string  `json:"purpose"`
	Verdict Verdict `json:"verdict"`
	Reason  Reason  `json:"reason"`
	Phase   Phase   `json:"phase"` // the phase when the call was checked
	// Done is true once the call ran and its outcome was recorded; Failed
	// says that it failed. A call allowed but not yet recorded has
	// neither, and so does a skipped call (Verdict Hint or Abort).
	Done      bool          `json:"done"`
	Failed    bool          `json:"failed"`
	NewResult bool          `json:"new_result"` // the result differed from the last one for these arguments
	At        time.Time     `json:"at"`         // when the call was checked (Policy.Now)
	Duration  time.Duration `json:"duration"`   // from the check to the Record

	// Args and Result are kept only with Policy.KeepRaw.
	Args   json.RawMessage `json:"args,omitempty"`
	Result string          `json:"result,omitempty"`
}

// ledger is the record of a session, bounded to the most recent entries
// (see add). The current turn's entries are the history the cycle rule
// reads (see continues).
type ledger struct {
	entries []ledgerEntry
	raw     []rawEntry // KeepRaw: one per entry
	dropped uint64     // entries trimmed: entries[i] has Seq dropped+i+1
}

type ledgerEntry struct {
	callID    string
	desc      *callDesc // nil for a call without a tool name
	argsHash  Hash
	at        time.Time // without its monotonic reading
	duration  time.Duration
	round     uint64
	turn      int
	verdict   uint8
	reason    uint8
	phase     uint8
	done      bool // the outcome was recorded
	failed    bool
	newResult bool
}

// callDesc is what the ledger says of a call beside the hash of its
// arguments, shared by the calls of a tool naming the same arguments: its
// tool (the rule has its name) and its purpose (see Entry.Purpose).
type callDesc struct {
	rule    *toolRule
	purpose string
}

type rawEntry struct {
	args   json.RawMessage
	result string
}

// add appends e, checked at at in round of turn, and returns its Seq, keeping at
// least the newest size entries (0: all). With keepRaw it keeps raw too.
func (l *ledger) add(e ledgerEntry, turn int, round uint64, at time.Time, raw rawEntry, size int, keepRaw bool) uint64 {
	// Amortized O(1) per add (len-size ≥ size: 2*size may overflow).
	if size > 0 && len(l.entries)-size >= size {
		l.entries = slices.Delete(l.entries, 0, len(l.entries)-size)
		l.raw = slices.Delete(l.raw, 0, max(len(l.raw)-size, 0)) // none without KeepRaw
		l.dropped += uint64(size)
	}
	e.at, e.round, e.turn = at.Round(0), round, turn
	l.entries = append(l.entries, e)
	if keepRaw {
		l.raw = append(l.raw, raw)
	}
	return l.dropped + uint64(len(l.entries))
}

// finish books the outcome of the call seq and returns its turn, or 0 if
// its entry was dropped.
func (l *ledger) finish(seq uint64, failed, isNew bool, d time.Duration, result string, keepRaw bool) int {
	if seq <= l.dropped || seq-l.dropped > uint64(len(l.entries)) {
		return 0
	}
	i := seq - l.dropped - 1
	e := &l.entries[i]
	e.done, e.failed, e.duration, e.newResult = true, failed, d, isNew
	if keepRaw && i < uint64(len(l.raw)) {
		l.raw[i].result = result
	}
	return e.turn
}

// snapshot copies the entries the ledger reports: at most size of them
// (0: all).
func (l *ledger) snapshot(size int) []Entry {
	from := 0
	if size > 0 {
		from = max(len(l.entries)-size, 0)
	}
	out := slices.Grow([]Entry(nil), len(l.entries)-from) // nil when there are none
	for i := from; i < len(l.entries); i++ {
		e := &l.entries[i]
		o := Entry{
			Seq:       l.dropped + uint64(i) + 1,
			Turn:      e.turn,
			Round:     e.round,
			CallID:    e.callID,
			ArgsHash:  e.argsHash,
			Verdict:   Verdict(e.verdict),
			Reason:    Reason(e.reason),
			Phase:     Phase(e.phase),
			Done:      e.done,
			Failed:    e.failed,
			NewResult: e.newResult,
			At:        e.at,
			Duration:  e.duration,
		}
		if e.desc != nil {
			o.Tool, o.Purpose = e.desc.rule.name, e.desc.purpose
		}
		if i < len(l.raw) {
			o.Args, o.Result = l.raw[i].args, l.raw[i].result
		}
		out = append(out, o)
	}
	return out
}

// key returns the entry's call key (zero for a call without a tool name).
func (e *ledgerEntry) key() callKey {
	if e.desc == nil {
		return callKey{}
	}
	return callKey{e.desc.rule.name, e.argsHash}
}

// continues reports whether a call of key would continue a cycle in the
// calls of turn, skipped calls included: the last period·repeats calls are
// repeats repetitions of period distinct calls, none of a tool exempt from
// the loop rules, with no new result after the first repetition, and key is
// the next call of the cycle. It returns the shortest such period.
func (l *ledger) continues(key callKey, turn, maxPeriod, repeats int) (int, bool) {
	for p := 2; p <= maxPeriod; p++ {
		n := p * repeats
		if n > len(l.entries) || l.entries[len(l.entries)-n].turn != turn {
			return 0, false // fewer than n calls of turn
		}
		// The call that continues the cycle equals the one p back.
		if l.entries[len(l.entries)-p].key() == key && l.isCycle(p, n) {
			return p, true
		}
	}
	return 0, false
}

func (l *ledger) isCycle(p, n int) bool {
	calls := l.entries[len(l.entries)-n:] // oldest first
	for i := range calls {
		e := &calls[i]
		if e.desc == nil || e.desc.rule.exempt {
			return false
		}
		same := func(o ledgerEntry) bool { return o.key() == e.key() }
		if i < p && slices.ContainsFunc(calls[:i], same) {
			return false // the calls of one period are distinct
		}
		if i >= p && (e.key() != calls[i-p].key() || e.newResult) {
			return false
		}
	}
	return true
}
