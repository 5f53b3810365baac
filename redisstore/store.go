// Package redisstore is a store.Store kept in Redis, so the Trackers
// of several processes (the replicas of an agent service) share their
// quotas: a tenant's hourly budget, an operator's daily limit, the
// per-tool quota of a session that moves between replicas. It runs on
// one server, on a Sentinel-managed primary (a failover client) and on
// Redis Cluster, where the counters spread over the shards.
//
// Connect with go-redis and hand the client to New:
//
//	opts, err := redis.ParseURL("redis://127.0.0.1:6379/0")
//	if err != nil { ... }
//	opts.ContextTimeoutEnabled = true // let Policy.StoreTimeout bound every call
//	opts.DialTimeout = time.Second
//	opts.ReadTimeout, opts.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond
//	client := redis.NewClient(opts) // or redis.NewClusterClient, redis.NewFailoverClient
//	defer client.Close()
//	st := redisstore.New(client)
//	defer st.Flush(context.Background()) // send the last commits before the client closes
//	tracker := toolguard.NewTracker(toolguard.Policy{//		Store:        st,
//		SharedQuotas: []store.SharedQuota{{Name: "tenant:acme:hourly", Limit: 500, Window: time.Hour}},})
//
// The store behaves as store.Memory does, across processes: a
// reservation takes one unit of every counter or none; a counter's total
// is its committed units plus its live reservations; a windowed total
// expires Window after its first unit; a reservation neither committed nor
// released within its TTL (a crashed replica) gives its units back. The
// scripts read the server's clock (TIME), so replicas whose clocks
// disagree still agree on when windows and reservations end.
//
// # Protocol
//
// Reserve is one round trip: the reservations of a batch (one call, or
// the calls of one round) are grouped by the hash slot of their counters,
// and each group is one Lua script, atomic on its server; the scripts of
// all groups go in one pipeline (a ClusterClient sends them to their
// nodes in parallel and follows MOVED and ASK). On a single server there
// is one group. A reservation whose counters live in several slots is
// granted only when every part is; the parts granted for a reservation
// refused elsewhere are released in the background, so they hold their
// units for about one round trip (a concurrent call may then be refused
// where it would have fitted: never the other way round).
//
// Commit and Release do not wait for the server: they queue the operation
// and return. One goroutine sends the queue in batches (one script per
// slot per batch, one pipeline), while the next batch accumulates, and
// ends when the queue is empty. Until a commit is applied its unit counts
// as reserved, so every total is the same either way; a commit that is
// never applied (the process dies, the server does not answer) gives its
// unit back when the reservation's TTL ends, as a lost commit always did.
// The queue holds at most WithQueueLimit operations (65 536 by default):
// when it is full, Commit and Release wait for room, bounded by their
// context, and then fail (the reservation's TTL covers the operation).
// Flush waits until everything queued was sent: call it before closing
// the client. Failed background sends are reported to the
// OnBackgroundError callback and by the next Flush.
//
// # Keys
//
// With the default prefix "toolguard:", a counter with key K uses
//
//	toolguard:{K}:c  a string: the committed total (PEXPIRE: the window)
//	toolguard:{K}:z  a sorted set: the live reservations, scored by expiry (ms)
//
// K is escaped, once: bytes other than letters, digits and "-_.:/@" are
// written %XX (and the empty key "%"), so the counter of the SharedQuota
// named "tenant:acme" is toolguard:{quota:tenant:acme}:c. The braces are
// a Redis Cluster hash tag: both keys of a counter live in one slot, and
// different counters spread over the slots, so over the shards. A key
// holding braces, spaces, newlines or "%" can neither leave the
// namespace, nor change the hash tag, nor collide with another key. A key
// of the namespace holding anything else than the store wrote (a wrong
// type, a string that is not a count) makes the operation fail with an
// error matching ErrMalformed; a script checks every key before it
// writes, so such an operation changes nothing.
//
// A prefix that holds a hash tag itself, such as "{toolguard}:", puts
// every key of the Store in that tag's slot: one shard holds every
// counter (what the earlier versions of this package told Cluster users
// to do). It works, and each operation is then one script.
//
// # Eviction
//
// The servers must run with maxmemory-policy noeviction. Under any other
// policy a server at its maxmemory may evict the counter keys, and an
// evicted total starts again from zero: quotas stop holding. The reserve
// script reads the policy and the memory (INFO memory) in the atomic step
// that takes the units, and refuses the reservation on such a server with
// an error matching ErrEvictionPolicy (unless the Store was made with
// AllowEviction), and on a noeviction server at its maxmemory with one
// matching ErrMemoryFull. What the server holds now is what a Reserve
// sees: a policy changed or set right on a live server, a failover to a
// server configured otherwise.
//
// # Faults
//
// Every Reserve is bounded by its context; the Tracker passes one bounded
// by Policy.StoreTimeout. The round trip itself runs on its own: when the
// context ends first, Reserve returns its error at once and lets the late
// reply arrive (for up to four times the caller's time left), releasing
// what it granted, so that the connection goes back to the pool rather
// than being closed half-read and the next call does not pay a new
// connection's handshake. When a server does not answer, Reserve returns
// an error (after releasing, in the background, the parts that other
// shards granted) and the Tracker fails closed (the call is refused with
// store.ErrUnavailable) or, with Policy.FailOpen, counts the call
// locally and reports an EventStore. The Store then leaves that server
// alone for a second (ErrServerDown; see BreaksPerServer): one breaker
// per server, shared by every Tracker that uses the Store, so an outage
// costs the process one timeout rather than one per call, and on a
// cluster a call whose counters live on the shards that answer is not
// affected by a shard that does not (with cluster-require-full-coverage
// no).
//
// A restarted server resumes from what it persisted: without persistence
// (no AOF, no RDB) every total starts again from zero. Whether quotas
// must survive a restart is the operator's choice: appendonly yes with
// appendfsync always loses nothing, everysec at most a second. A replica
// promoted after its master died holds what was replicated to it:
// replication is asynchronous, so the last operations of the master may
// be lost (docs/distributed.md gives the measured figures).
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/store"
)

// DefaultPrefix is the key prefix of a Store made without WithPrefix.
const DefaultPrefix = "toolguard:"

// ErrMalformed is matched by the error of an operation that found a key of
// the store's namespace holding data the store did not write: a wrong
// type, or a string that is not a count. The operation changed nothing.
var ErrMalformed = errors.New("redisstore: malformed key")

// maxMillis bounds the TTLs and windows sent to the server (about 31
// years), so they stay exact in Lua numbers and valid for PEXPIRE.
const maxMillis = 1_000_000_000_000

// Store is a store.Store kept in Redis. It is safe for concurrent use. It
// holds no connection of its own, only the client it was given, and a
// goroutine only while it has commits or releases to send.
type Store struct {
	client  redis.UniversalClient
	cluster bool // hash slots matter: one script per slot
	prefix  string
	batch   *redis.Script
	count   *redis.Script

	allowEviction bool
	warn          func(error) // AllowEviction's callback; may be nil
	ev            eviction
	brk           breakers // per server: see BreaksPerServer

	q queue
}

var _ store.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the prefix of every key the Store uses (default
// "toolguard:"). Stores with the same prefix on the same database share
// their counters; give a different prefix to a different fleet. A prefix
// holding a hash tag ("{toolguard}:") puts every counter in one slot of a
// cluster, so on one shard.
func WithPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
}

// New returns a Store that keeps its counters through client: a
// *redis.Client, a failover (Sentinel) client or a *redis.ClusterClient.
// The Store does not close the client; Flush it before closing the
// client.
func New(client redis.UniversalClient, opts ...Option) *Store {
	s := &Store{
		client: client,
		prefix: DefaultPrefix,
		batch:  redis.NewScript(luaBatch),
		count:  redis.NewScript(luaCount),
		q:      queue{limit: defaultQueueLimit},
	}
	_, s.cluster = client.(*redis.ClusterClient)
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	return s
}

// Reserve implements store.Store: for each reservation in order, one unit
// of every counter or none; a later reservation sees the units an earlier
// one took. It is one round trip: one script per hash slot, all in one
// pipeline. A Reserve with the id of a reservation that is still held (a
// retry after a lost reply) takes nothing more and reports the
// reservation as granted. On an error no reservation of rs holds: the
// parts that answered are released in the background.
func (s *Store) Reserve(ctx context.Context, rs []store.Reservation) ([]store.Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redisstore: reserve: %w", err)
	}
	gs := make([]store.Grant, len(rs))
	some := false
	for i, r := range rs {
		gs[i] = store.Grant{OK: true, Blocked: -1, Counts: make([]int, len(r.Counters))}
		some = some || len(r.Counters) > 0
	}
	if !some {
		return gs, nil
	}

	// The round trip runs on its own, bounded by sendTimeout: a caller
	// whose context ends first gets its error at once, and the late reply
	// still arrives, so the connection goes back to the pool instead of
	// being closed half-read. A new connection costs three or four round
	// trips (TCP, HELLO, CLIENT SETINFO) before the script's: a Redis
	// 80 ms away could then never answer within a 250 ms StoreTimeout
	// again after one slow reply. What a late reply granted is released.
	// The reply has four times the caller's time left, at most
	// sendTimeout: long enough for a new connection's handshake.
	wait := sendTimeout
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, 4*time.Until(d))
	}
	var (
		mu                  sync.Mutex
		finished, abandoned bool
		res                 []store.Grant
		resErr              error
		asked               []string // the servers asked
	)
	done := make(chan struct{})
	go func() {
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
		gs, err := s.reserve(bctx, rs, gs, func(servers []string) {
			mu.Lock()
			asked = servers
			mu.Unlock()
		})
		cancel()
		mu.Lock()
		if abandoned {
			mu.Unlock()
			if err == nil {
				s.q.push(s, releases(rs))
			}
			return
		}
		finished, res, resErr = true, gs, err
		mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
		return res, resErr
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	if finished {
		return res, resErr
	}
	abandoned = true
	// A server that does not answer in the caller's time is down for its
	// cooldown, unless its late reply comes first (see breakers).
	s.brk.report(time.Now(), nil, asked)
	return nil, fmt.Errorf("redisstore: reserve: %w (the reply, when it comes, is released)", ctx.Err())
}

// releases returns a release of every reservation of rs: releasing one
// that holds nothing does nothing.
func releases(rs []store.Reservation) []settle {
	var out []settle
	for _, r := range rs {
		if len(r.Counters) == 0 {
			continue
		}
		m := make([]int, len(r.Counters))
		for j := range m {
			m[j] = j + 1
		}
		out = append(out, settle{id: r.ID, counters: r.Counters, m: m})
	}
	return out
}

// reserve is Reserve's round trip, gs its grants before the reply; it
// tells asking which servers it sends to. A server whose breaker is open
// is not asked: its groups fail with ErrServerDown.
func (s *Store) reserve(ctx context.Context, rs []store.Reservation, gs []store.Grant, asking func([]string)) ([]store.Grant, error) {
	b := s.newBatch()
	for i, r := range rs {
		b.reserve(i, r)
	}
	replies := make([]any, len(b.groups))
	errs := make([]error, len(b.groups))
	servers := make([]string, len(b.groups))
	var send []*group
	var sent []int
	now := time.Now()
	for gi, g := range b.groups {
		servers[gi] = s.server(ctx, g)
		if !s.brk.allow(servers[gi], now) {
			errs[gi] = serverDown(servers[gi])
			continue
		}
		send, sent = append(send, g), append(sent, gi)
	}
	if len(send) > 0 {
		var asked []string
		for _, gi := range sent {
			asked = append(asked, servers[gi])
		}
		asking(asked)
		vals, sendErrs := s.run(ctx, send)
		var up, failed []string
		for k, gi := range sent {
			replies[gi], errs[gi] = vals[k], sendErrs[k]
			if failedServer(errs[gi]) {
				failed = append(failed, servers[gi])
			} else {
				up = append(up, servers[gi])
			}
		}
		s.brk.report(time.Now(), up, failed)
	}

	// Parts that were granted but must not hold: every part when a group
	// failed, the other parts of a reservation refused somewhere.
	var undo []settle
	var failed error
	for gi, g := range b.groups {
		if errs[gi] != nil {
			failed = cmp(failed, guardErr(g, errs[gi]))
			continue
		}
		if err := g.parse(replies[gi], gs); err != nil {
			failed = cmp(failed, err)
			continue
		}
		s.seen(g.keys[0], g.policy)
	}
	if failed != nil {
		for gi, g := range b.groups {
			if errs[gi] == nil {
				undo = append(undo, g.allParts()...)
			}
		}
		s.q.push(s, undo)
		return nil, s.wrap("reserve", failed)
	}
	for _, g := range b.groups {
		for _, p := range g.refusedElsewhere(gs) {
			undo = append(undo, p.release())
			for _, j := range p.m {
				gs[p.ri].Counts[j-1]-- // as found: without this reservation's unit
			}
		}
	}
	s.q.push(s, undo)
	return gs, nil
}

// cmp keeps the first error, but prefers one that reports a malformed key.
func cmp(old, err error) error {
	var m *malformedError
	if old == nil || !errors.As(old, &m) && errors.As(err, &m) {
		return err
	}
	return old
}

// Commit implements store.Store: the reservations' units become
// committed. It queues the commit and returns; the Store sends it in the
// background (see the package doc). Committing a reservation that is
// unknown, settled already or expired does nothing.
func (s *Store) Commit(ctx context.Context, rs []store.Reservation) error {
	return s.enqueue(ctx, "commit", rs, true)
}

// Release implements store.Store: the reservations' units return to
// their counters. It queues the release and returns, as Commit does.
// Releasing a reservation that is unknown, settled already or expired
// does nothing.
func (s *Store) Release(ctx context.Context, rs []store.Reservation) error {
	return s.enqueue(ctx, "release", rs, false)
}

func (s *Store) enqueue(ctx context.Context, op string, rs []store.Reservation, commit bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	ops := releases(rs)
	for i := range ops {
		ops[i].commit = commit
	}
	if err := s.q.add(ctx, s, ops); err != nil {
		return fmt.Errorf("redisstore: %s: the queue is full (%d operations): %w", op, s.q.limit, err)
	}
	return nil
}

// Count returns a counter's total, live reservations included, as
// store.Memory.Count does. key is a Counter.Key as
// store.SharedQuota.Key returns it: "quota:tenant:acme" for the
// SharedQuota named "tenant:acme". Count first waits until the commits
// and releases this Store queued were sent. It does not check the
// eviction policy, and it is not held back by the Store's breaker: an
// answer closes the breaker of its server.
func (s *Store) Count(ctx context.Context, key string) (int, error) {
	if err := s.q.drain(ctx); err != nil {
		return 0, fmt.Errorf("redisstore: count: %w", err)
	}
	ck, zk := s.counterKeys(key)
	n, err := s.count.Run(ctx, s.client, []string{ck, zk}).Int64()
	if err != nil {
		return 0, s.wrap("count", err)
	}
	// The server answered: its breaker, if open, closes.
	s.brk.report(time.Now(), []string{s.server(ctx, &group{keys: []string{ck}})}, nil)
	return int(n), nil
}

// counterKeys returns the keys of a counter: its committed total and its
// live reservations, in one hash slot.
func (s *Store) counterKeys(key string) (committed, reserved string) {
	k := escape(key)
	if k == "" {
		k = "%" // escape never writes a lone %
	}
	base := s.prefix + "{" + k + "}:"
	return base + "c", base + "z"
}

// wrap names the operation in err and turns a script's report of a
// malformed key into an error matching ErrMalformed.
func (s *Store) wrap(op string, err error) error {
	var m *malformedError
	if errors.As(err, &m) {
		return &malformedError{op: op, detail: m.detail}
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		if detail, ok := strings.CutPrefix(rerr.Error(), "TOOLGUARD "); ok {
			return &malformedError{op: op, detail: detail}
		}
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

type malformedError struct{ op, detail string }

func (e *malformedError) Error() string {
	return "redisstore: " + e.op + ": malformed key: " + e.detail
}

func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

// millis rounds d up to whole milliseconds, at least 1 and at most
// maxMillis.
func millis(d time.Duration) int64 {
	if d >= maxMillis*time.Millisecond {
		return maxMillis
	}
	return max(int64((d+time.Millisecond-1)/time.Millisecond), 1)
}

// escape writes the bytes of s other than letters, digits and "-_.:/@" as
// %XX. It is injective, and its result holds no braces, spaces or control
// bytes.
func escape(s string) string {
	safe := func(b byte) bool {
		return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
			b == '-' || b == '_' || b == '.' || b == ':' || b == '/' || b == '@'
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !safe(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if safe(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
