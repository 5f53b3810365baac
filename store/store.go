// Package store is what a quota store implements: the Store interface the
// Trackers of a fleet share their quota counters through, its request and
// answer types, and Memory, the store inside one process.
//
// Only store implementers and tests need this package: a harness sets
// toolguard.Policy's Quotas.Store to a Memory from NewMemory or to a store
// from the redisstore module, and reads refusals through toolguard's
// errors (toolguard.ErrStoreUnavailable).
package store

import (
	"context"
	"time"
)

// Store keeps quota counters that several Trackers share: the replicas of
// an agent service, or the sessions of one tenant. Reserve takes one unit
// of every counter atomically, or none; Commit books a reservation whose
// call ran; Release returns one whose call did not. A reservation neither
// committed nor released (a crashed replica) is released by the store
// after its TTL, so quota is not leaked.
//
// Memory shares counters inside one process; the redisstore module shares
// them across processes.
type Store interface {
	Reserve(ctx context.Context, r Reservation) (Grant, error)
	Commit(ctx context.Context, id string) error
	Release(ctx context.Context, id string) error
}

// Reservation asks a Store for one unit of each counter.
type Reservation struct {
	ID       string        // unique; chosen by the Tracker
	Counters []Counter     // all or nothing
	TTL      time.Duration // how long the units are held without a Commit; ≤ 0: DefaultTTL
}

// Counter is one shared total.
type Counter struct {
	// Key names the total; the store namespaces it. The Tracker uses
	// "quota:{Name}" for shared quotas ("quota:{Name}:{tool}" with PerTool),
	// with the name and the tool as written, and "session:{SessionID}:{tool}"
	// for session quotas, with '%' and ':' in the session id escaped as %25
	// and %3A (the tool's name is the last part, so it needs no escaping).
	Key    string
	Limit  int           // units allowed; the reservation fails at the limit
	Window time.Duration // the total expires this long after its first unit; 0: never
}

// Grant is a Store's answer to a Reservation.
type Grant struct {
	OK bool
	// Counts are the counters' totals, reservations included: after the
	// reservation when OK, as found when not.
	Counts []int
	// Blocked is the index of the first counter at its limit, or -1.
	Blocked int
}

// DefaultTTL is how long a reservation holds its units without a Commit
// when it names no TTL.
const DefaultTTL = 5 * time.Minute
