// Package store is what a quota store implements: the Store interface the
// Trackers of a fleet share their quota counters through, its request and
// answer types, and Memory, the store inside one process.
//
// A store implementer needs the Store interface and its types; a harness
// that shares quotas sets toolguard.Policy's Store to a Memory from
// NewMemory or to a store from the redisstore module, declares its
// SharedQuotas, may share one Breaker among its Trackers (Policy.Breaker),
// and tells a refusal because the store did not answer by ErrUnavailable
// (ErrBreakerOpen when the Breaker held the operation back).
package store

import (
	"context"
	"time"
)

// Store keeps quota counters that several Trackers share: the replicas of
// an agent service, or the sessions of one tenant. Every method takes a
// batch: the Tracker sends the reservations of one round of calls (the
// calls of one model response) in one Reserve.
//
// Reserve takes, for each reservation in order, one unit of every one of
// its counters, or none of them; a later reservation of the batch sees the
// units an earlier one took. The grants are in the order of rs. An error
// means that no reservation of rs holds: a store that took some units
// before it failed gives them back (or their TTL does).
//
// Commit books reservations whose calls ran; Release returns those whose
// calls did not. The Tracker passes the reservations as Reserve was given
// them. A store may apply Commit and Release after they return (the
// redisstore module sends them in the background, batched): until then
// the units stay counted as reserved, so every total is the same either
// way. A reservation neither committed nor released (a crashed replica, a
// lost commit) is released by the store after its TTL, so quota is not
// leaked; a commit lost so gives its unit back.
//
// Memory shares counters inside one process; the redisstore module shares
// them across processes and Redis Cluster shards.
type Store interface {
	Reserve(ctx context.Context, rs []Reservation) ([]Grant, error)
	Commit(ctx context.Context, rs []Reservation) error
	Release(ctx context.Context, rs []Reservation) error
}

// ServerBreaker is implemented by a Store that keeps a breaker per server
// of its own: after a server failed to answer, the operations that need
// it fail at once for a cooldown, and those that need only the other
// servers go on (redisstore: one per node, so per shard on a Redis
// Cluster; the Store is shared by every Tracker of the process, and so is
// its breaker). A Tracker puts no breaker of its own in front of such a
// Store, unless its Policy names one: one breaker over every shard would
// refuse the calls of the healthy shards during one shard's outage.
type ServerBreaker interface {
	Store
	// BreaksPerServer marks the Store; it does nothing.
	BreaksPerServer()
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
