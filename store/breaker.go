package store

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Breaker stops a toolguard.Tracker from asking a Store that has just
// failed, so that an outage costs one Policy.StoreTimeout, not one per
// call. Its zero value is ready to use. Every Tracker has one of its own
// unless toolguard.Policy.Breaker names one (a toolguard.Sessions shares
// one among its Trackers): give the Trackers of a process one Breaker and
// they learn of an outage together. A Store that breaks per server itself
// (ServerBreaker, such as redisstore) gets none unless Policy.Breaker
// names one.
//
// The rules:
//   - Closed (the start): every Store operation runs. One that fails — an
//     error or StoreTimeout, not a context the caller cancelled — opens
//     the breaker.
//   - Open: for Cooldown no operation reaches the Store. Each fails at
//     once with an error matching ErrBreakerOpen and ErrUnavailable,
//     so the call is refused or, with Policy.FailOpen, counted locally; a
//     Commit or Release not sent leaves its reservation to expire after
//     ReservationTTL, as a failed one does.
//   - Half-open: after Cooldown the next operation is a probe and runs;
//     the others fail at once as while open. A probe that succeeds closes
//     the breaker; one that fails opens it for another Cooldown.
//
// Each change of state is a toolguard.EventBreaker for Policy.OnEvent and
// Policy.Logger, delivered by the Tracker whose operation caused it. The
// Tracker drives the breaker with Begin and End; a harness only creates
// it, shares it and reads State.
type Breaker struct {
	// Cooldown is how long the breaker stays open. 0 means 1s; negative
	// means the breaker never opens.
	Cooldown time.Duration

	mu      sync.Mutex
	state   BreakerState
	until   time.Time // open: when the next probe may run
	probing bool      // half-open: the probe is under way
}

// defaultBreakerCooldown is the Cooldown of a Breaker whose Cooldown is 0.
const defaultBreakerCooldown = time.Second

// ErrBreakerOpen is matched by the error of a Store operation that the
// Breaker did not send: the store failed a moment ago.
var ErrBreakerOpen = errors.New("toolguard: quota store breaker open")

// ErrUnavailable is matched by the error of a call that toolguard refused
// because the quota store did not answer and Policy.FailOpen is false.
var ErrUnavailable = errors.New("toolguard: quota store unavailable")

// BreakerState is the state of a Breaker.
type BreakerState int

const (
	BreakerClosed   BreakerState = iota // operations reach the store
	BreakerOpen                         // no operation reaches the store
	BreakerHalfOpen                     // one probe reaches the store
)

var breakerNames = [...]string{"closed", "open", "half-open"}

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	if s >= 0 && int(s) < len(breakerNames) {
		return breakerNames[s]
	}
	return fmt.Sprintf("BreakerState(%d)", int(s))
}

// State returns the breaker's state.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// BreakerStep is what one operation learned from a Breaker: whether it
// may run, whether it is the probe, and the change of state it caused.
type BreakerStep struct {
	Run, Probe bool
	From, To   BreakerState
}

// Changed reports whether the step changed the breaker's state.
func (bt BreakerStep) Changed() bool { return bt.From != bt.To }

// Begin asks whether an operation may reach the store now. When the
// step's Run is set, the operation runs and its end is reported with End.
func (b *Breaker) Begin(now time.Time) BreakerStep {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt := BreakerStep{From: b.state, To: b.state}
	switch {
	case b.Cooldown < 0 || b.state == BreakerClosed:
		bt.Run = true
	case b.state == BreakerOpen && !now.Before(b.until):
		b.state, b.probing = BreakerHalfOpen, true
		bt.Run, bt.Probe, bt.To = true, true, BreakerHalfOpen
	}
	return bt
}

// End reports how an operation that Begin let run ended: probe is the
// step's Probe; failed is a store failure; neither failed nor ok is an
// operation the caller cancelled, which says nothing of the store.
func (b *Breaker) End(now time.Time, probe, failed, ok bool) BreakerStep {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt := BreakerStep{From: b.state, To: b.state}
	switch {
	case b.Cooldown < 0:
	case probe && !failed && !ok:
		// Inconclusive: the next operation probes again.
		b.state, b.until, b.probing = BreakerOpen, now, false
	case failed && (probe || b.state == BreakerClosed):
		cooldown := b.Cooldown
		if cooldown == 0 {
			cooldown = defaultBreakerCooldown
		}
		b.state, b.until, b.probing = BreakerOpen, now.Add(cooldown), false
	case ok && probe:
		b.state, b.probing = BreakerClosed, false
	}
	bt.To = b.state
	return bt
}
