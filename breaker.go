package toolguard

import (
	"errors"
	"sync"
	"time"
)

// Breaker stops a Tracker from asking a Store that has just failed, so that
// an outage costs one StoreTimeout, not one per call. Its zero value is
// ready to use. Every Tracker has one of its own unless Policy.Breaker
// names one (a Sessions shares one among its Trackers): give the Trackers
// of a process one Breaker and they learn of an outage together. A Store
// that breaks per server itself (store.ServerBreaker, such as redisstore)
// gets none unless Policy.Breaker names one.
//
// The rules:
//   - Closed (the start): every Store operation runs. One that fails — an
//     error or StoreTimeout, not a context the caller cancelled — opens
//     the breaker.
//   - Open: for Cooldown no operation reaches the Store. Each fails at
//     once with an error matching ErrBreakerOpen and ErrStoreUnavailable,
//     so the call is refused or, with Policy.FailOpen, counted locally; a
//     Commit or Release not sent leaves its reservation to expire after
//     ReservationTTL, as a failed one does.
//   - Half-open: after Cooldown the next operation is a probe and runs;
//     the others fail at once as while open. A probe that succeeds closes
//     the breaker; one that fails opens it for another Cooldown.
//
// Each change of state is an EventBreaker for Policy.OnEvent and
// Policy.Logger, delivered by the Tracker whose operation caused it.
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

// BreakerState is the state of a Breaker.
type BreakerState int

const (
	BreakerClosed   BreakerState = iota // operations reach the store
	BreakerOpen                         // no operation reaches the store
	BreakerHalfOpen                     // one probe reaches the store
)

var breakerNames = [...]string{"closed", "open", "half-open"}

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string { return enumString(breakerNames[:], int(s), "BreakerState") }

// State returns the breaker's state.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// breakerTurn is what one operation learned from the breaker: whether it
// may run, whether it is the probe, and the change of state it caused.
type breakerTurn struct {
	run, probe bool
	from, to   BreakerState
}

func (bt breakerTurn) changed() bool { return bt.from != bt.to }

// begin asks whether an operation may reach the store now.
func (b *Breaker) begin(now time.Time) breakerTurn {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt := breakerTurn{from: b.state, to: b.state}
	switch {
	case b.Cooldown < 0 || b.state == BreakerClosed:
		bt.run = true
	case b.state == BreakerOpen && !now.Before(b.until):
		b.state, b.probing = BreakerHalfOpen, true
		bt.run, bt.probe, bt.to = true, true, BreakerHalfOpen
	}
	return bt
}

// end reports how an operation that ran ended: failed is a store failure;
// neither failed nor ok is an operation the caller cancelled, which says
// nothing of the store.
func (b *Breaker) end(now time.Time, probe, failed, ok bool) breakerTurn {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt := breakerTurn{from: b.state, to: b.state}
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
	bt.to = b.state
	return bt
}
