package toolguard

import (
	"encoding/json"
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
	// bytes" past 64 KiB. Secrets are redacted from both: provider key
	// prefixes (sk-…, ghp_…, AKIA…), the word after bearer, basic or token,
	// the value of password=, token:, api_key= and similar names, a URL's
	// user and password, and long random-looking strings (24 or more
	// letters and digits with high entropy) read "[REDACTED]" ("redacted"
	// in a normalized query).
	Purpose   string        `json:"purpose"`
	Verdict   Verdict       `json:"verdict"`
	Reason    Reason        `json:"reason"`
	Phase     Phase         `json:"phase"` // the phase when the call was checked
	Status    Status        `json:"status"`
	NewResult bool          `json:"new_result"` // the result differed from the last one for these arguments
	At        time.Time     `json:"at"`         // when the call was checked (Policy.Now)
	Duration  time.Duration `json:"duration"`   // from the check to the Record

	// Args and Result are kept only with Policy.KeepRaw.
	Args   json.RawMessage `json:"args,omitempty"`
	Result string          `json:"result,omitempty"`
}

// ledger is the append-only record of a session, bounded to the most
// recent size entries (0: unbounded). It is not synchronized.
type ledger struct {
	entries []Entry
	first   uint64 // Seq of entries[0]
	size    int
	dropped uint64 // entries no longer held
}

// add appends e, whose Seq must follow the last one, and returns it.
func (l *ledger) add(e Entry) *Entry {
	if len(l.entries) == 0 {
		l.first = e.Seq
		if cap(l.entries) == 0 {
			l.entries = make([]Entry, 0, 8) // most turns fit without regrowing
		}
	}
	// len-size ≥ size, not len ≥ 2*size: a size near math.MaxInt must not
	// overflow.
	if l.size > 0 && len(l.entries)-l.size >= l.size {
		// Keep the newest size entries; amortized O(1) per add.
		n := copy(l.entries, l.entries[len(l.entries)-l.size:])
		clear(l.entries[n:])
		l.entries = l.entries[:n]
		l.dropped += uint64(l.size)
		l.first += uint64(l.size)
	}
	l.entries = append(l.entries, e)
	return &l.entries[len(l.entries)-1]
}

// get returns the entry with the given Seq, or nil if it was dropped.
func (l *ledger) get(seq uint64) *Entry {
	if seq < l.first || seq-l.first >= uint64(len(l.entries)) {
		return nil
	}
	return &l.entries[seq-l.first]
}

// snapshot copies the entries the ledger reports: at most size of them.
func (l *ledger) snapshot() []Entry {
	es := l.entries
	if l.size > 0 && len(es) > l.size {
		es = es[len(es)-l.size:]
	}
	return append([]Entry(nil), es...)
}
