// Package redisstore is a store.Store kept in Redis, so the Trackers
// of several processes (the replicas of an agent service) share their
// quotas: a tenant's hourly budget, an operator's daily limit, the
// per-tool quota of a session that moves between replicas.
//
// Connect with go-redis and hand the client to New:
//
//	opts, err := redis.ParseURL("redis://127.0.0.1:6379/0")
//	if err != nil { ... }
//	opts.ContextTimeoutEnabled = true // let Policy.StoreTimeout bound every call
//	opts.DialTimeout = time.Second
//	opts.ReadTimeout, opts.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond
//	client := redis.NewClient(opts)
//	defer client.Close()
//	tracker := toolguard.NewTracker(toolguard.Policy{
//		Store:        redisstore.New(client),
//		SharedQuotas: []toolguard.SharedQuota{{Name: "tenant:acme:hourly", Limit: 500, Window: time.Hour}},
//	})
//
// The store behaves as store.Memory does, across processes: a
// reservation takes one unit of every counter or none; a counter's total
// is its committed units plus its live reservations; a windowed total
// expires Window after its first unit; a reservation neither committed nor
// released within its TTL (a crashed replica) gives its units back. Each
// operation is one Lua script, so it is atomic on the server, and the
// scripts read the server's clock (TIME), so replicas whose clocks
// disagree still agree on when windows and reservations end.
//
// # Keys
//
// With the default prefix "toolguard:", a counter with key K uses
//
//	toolguard:c:K  a string: the committed total (PEXPIRE: the window)
//	toolguard:z:K  a sorted set: the live reservations, scored by expiry (ms)
//
// and a reservation with id I uses
//
//	toolguard:r:I  a list: the counter keys it holds (PEXPIRE: its TTL)
//
// K and I are escaped, once: bytes other than letters, digits and
// "-_.:/@" are written %XX, so the counter of the SharedQuota named
// "tenant:acme" is toolguard:c:quota:tenant:acme, while a key holding
// braces, spaces, newlines or "%" can neither leave the namespace, nor
// form a Redis Cluster hash tag, nor collide with another key. A key of
// the namespace holding anything else than the store wrote (a wrong type,
// a string that is not a count) makes the operation fail with an error
// matching ErrMalformed; the scripts check every key before they write,
// so such an operation changes nothing.
//
// On Redis Cluster every key of one operation must live in one slot: use
// a prefix with a hash tag, such as WithPrefix("{toolguard}:").
//
// # Eviction
//
// The server must run with maxmemory-policy noeviction. Under any other
// policy a server at its maxmemory may evict the counter keys, and an
// evicted total starts again from zero: quotas stop holding. The Store
// reads the policy (INFO memory) before its first operation and again
// after the client dials a new connection, and refuses every operation on
// such a server with an error matching ErrEvictionPolicy, unless it was
// made with AllowEviction.
//
// # Faults
//
// Every operation is bounded by its context; the Tracker passes one
// bounded by Policy.StoreTimeout. go-redis honours a context's deadline
// while it waits for the server only with Options.ContextTimeoutEnabled;
// without it a hung server holds a call for ReadTimeout. When the server
// does not answer, Reserve returns an error and the Tracker fails closed
// (the call is refused with toolguard.ErrStoreUnavailable) or, with
// Policy.FailOpen, allows the call and reports an EventStore; the
// Tracker's toolguard.Breaker then leaves the server alone for a cooldown,
// so an outage costs one timeout rather than one per call. A Commit or
// Release that fails leaves the reservation to expire after its TTL.
//
// A restarted server resumes from what it persisted: without persistence
// (no AOF, no RDB) every total starts again from zero. Whether quotas
// must survive a restart is the operator's choice: appendonly yes with
// appendfsync always loses nothing, everysec at most a second.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
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

// Store is a store.Store kept in Redis. It is safe for concurrent
// use; it holds no connection of its own, only the client it was given.
type Store struct {
	client  redis.UniversalClient
	prefix  string
	reserve *redis.Script
	settle  *redis.Script
	count   *redis.Script

	// The eviction check (see ErrEvictionPolicy).
	allowEviction bool
	warn          func(error)                 // AllowEviction's callback; may be nil
	recheck       atomic.Bool                 // a connection was dialled since the last check
	checking      chan struct{}               // one check at a time
	evicting      atomic.Pointer[policyError] // the last check's finding; nil: safe
}

// ErrEvictionPolicy is matched by the error of an operation refused
// because the server's maxmemory-policy is not noeviction: such a server
// may evict the counter keys under memory pressure, and every evicted
// total starts again from zero, so quotas stop holding. The Store reads
// the policy (INFO memory) before its first operation and again after
// the client dials a new connection (a reconnect, a failover). Configure
// the server with maxmemory-policy noeviction, or accept the risk with
// AllowEviction.
var ErrEvictionPolicy = errors.New("redisstore: the server may evict quota keys")

type policyError struct{ addr, policy string }

func (e *policyError) Error() string {
	return fmt.Sprintf("redisstore: the server %s has maxmemory-policy %s: it may evict quota keys, and an evicted total starts again from zero; set maxmemory-policy noeviction", e.addr, e.policy)
}

func (e *policyError) Is(target error) bool { return target == ErrEvictionPolicy }

var _ store.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the prefix of every key the Store uses (default
// "toolguard:"). Stores with the same prefix on the same database share
// their counters; give a different prefix to a different fleet.
func WithPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
}

// New returns a Store that keeps its counters through client: a
// *redis.Client, a *redis.ClusterClient (see the package doc on hash
// tags) or a failover client. The Store does not close the client.
func New(client redis.UniversalClient, opts ...Option) *Store {
	s := &Store{
		client:  client,
		prefix:  DefaultPrefix,
		reserve: redis.NewScript(luaReserve),
		settle:  redis.NewScript(luaSettle),
		count:   redis.NewScript(luaCount),
	}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	s.checking = make(chan struct{}, 1)
	s.recheck.Store(true)
	client.AddHook(dialHook{s})
	return s
}

// AllowEviction lets the Store work on a server whose maxmemory-policy may
// evict keys, where quotas hold only while the server has memory to
// spare. warn, when not nil, receives an error matching ErrEvictionPolicy
// when the Store finds such a policy (it checks before its first operation
// and after each new connection), and again when the policy it finds
// changes. Without this option such a server refuses every operation.
func AllowEviction(warn func(error)) Option {
	return func(s *Store) { s.allowEviction, s.warn = true, warn }
}

// dialHook marks the policy for a new check whenever the client dials.
type dialHook struct{ s *Store }

func (h dialHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			h.s.recheck.Store(true)
		}
		return conn, err
	}
}

func (dialHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// ready checks the server's maxmemory-policy when a connection was dialled
// since the last check, and returns an error matching ErrEvictionPolicy
// while it may evict (unless AllowEviction).
func (s *Store) ready(ctx context.Context, op string) error {
	if s.recheck.Load() {
		select {
		case s.checking <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("redisstore: %s: %w", op, ctx.Err())
		}
		err := s.checkPolicy(ctx)
		<-s.checking
		if err != nil {
			return fmt.Errorf("redisstore: %s: reading maxmemory-policy: %w", op, err)
		}
	}
	if e := s.evicting.Load(); e != nil && !s.allowEviction {
		return fmt.Errorf("redisstore: %s: %w", op, e)
	}
	return nil
}

// checkPolicy reads the maxmemory-policy of every server the client uses.
func (s *Store) checkPolicy(ctx context.Context) error {
	if !s.recheck.Swap(false) {
		return nil // another operation checked meanwhile
	}
	var found atomic.Pointer[policyError]
	check := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			return err
		}
		policy := "unknown"
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:"); ok {
				policy = v
			}
		}
		if policy != "noeviction" {
			found.Store(&policyError{addr: c.Options().Addr, policy: policy})
		}
		return nil
	}
	var err error
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachShard(ctx, check)
	case *redis.Client:
		err = check(ctx, c)
	default:
		// A Ring spreads keys over servers this Store does not support.
		err = fmt.Errorf("unsupported client %T", s.client)
	}
	if err != nil {
		s.recheck.Store(true)
		return err
	}
	e := found.Load()
	if old := s.evicting.Swap(e); e != nil && s.warn != nil && (old == nil || *old != *e) {
		s.warn(fmt.Errorf("%w (allowed by AllowEviction)", e))
	}
	return nil
}

// Reserve implements store.Store: one unit of every counter, or none,
// in one atomic step. A Reserve with the id of a reservation that is still
// held (a retry after a lost reply) takes nothing more and reports the
// reservation as granted.
func (s *Store) Reserve(ctx context.Context, rs []store.Reservation) ([]store.Grant, error) {
	gs := make([]store.Grant, len(rs))
	for i, r := range rs {
		g, err := s.reserveOne(ctx, r)
		if err != nil {
			_ = s.Release(context.WithoutCancel(ctx), rs[:i])
			return nil, err
		}
		gs[i] = g
	}
	return gs, nil
}

func (s *Store) reserveOne(ctx context.Context, r store.Reservation) (store.Grant, error) {
	if err := ctx.Err(); err != nil {
		return store.Grant{}, fmt.Errorf("redisstore: reserve: %w", err)
	}
	n := len(r.Counters)
	if n == 0 {
		return store.Grant{OK: true, Blocked: -1, Counts: []int{}}, nil
	}
	if err := s.ready(ctx, "reserve"); err != nil {
		return store.Grant{}, err
	}
	ttl := r.TTL
	if ttl <= 0 {
		ttl = store.DefaultTTL
	}
	keys := make([]string, 1, 1+2*n)
	keys[0] = s.reservationKey(r.ID)
	args := make([]any, 2, 2+2*n)
	args[0], args[1] = r.ID, millis(ttl)
	for _, c := range r.Counters {
		ck, zk := s.counterKeys(c.Key)
		keys = append(keys, ck, zk)
		var w int64
		if c.Window > 0 {
			w = millis(c.Window)
		}
		args = append(args, c.Limit, w)
	}
	v, err := s.reserve.Run(ctx, s.client, keys, args...).Slice()
	if err != nil {
		return store.Grant{}, s.wrap("reserve", err)
	}
	ints, ok := int64s(v)
	if !ok || len(ints) != 2+n || ints[0] < 0 || ints[0] > 1 || ints[1] < -1 || ints[1] >= int64(n) {
		return store.Grant{}, fmt.Errorf("redisstore: reserve: unexpected reply %v", v)
	}
	g := store.Grant{OK: ints[0] == 1, Blocked: int(ints[1]), Counts: make([]int, n)}
	for i := range g.Counts {
		g.Counts[i] = int(ints[2+i])
	}
	return g, nil
}

// Commit implements store.Store: the reservation's units become
// committed. Committing a reservation that is unknown, settled already or
// expired does nothing.
func (s *Store) Commit(ctx context.Context, rs []store.Reservation) error {
	return s.settleAll(ctx, "commit", rs, "1")
}

// Release implements store.Store: the reservation's units return to
// their counters. Releasing a reservation that is unknown, settled already
// or expired does nothing.
func (s *Store) Release(ctx context.Context, rs []store.Reservation) error {
	return s.settleAll(ctx, "release", rs, "0")
}

func (s *Store) settleAll(ctx context.Context, op string, rs []store.Reservation, commit string) error {
	for _, r := range rs {
		if err := s.settleOp(ctx, op, r.ID, commit); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) settleOp(ctx context.Context, op, id, commit string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	if err := s.ready(ctx, op); err != nil {
		return err
	}
	err := s.settle.Run(ctx, s.client, []string{s.reservationKey(id)}, id, commit, s.prefix).Err()
	if err != nil {
		return s.wrap(op, err)
	}
	return nil
}

// Count returns a counter's total, live reservations included, as
// store.Memory.Count does. key is a Counter.Key as
// toolguard.SharedQuota.Key returns it: "quota:tenant:acme" for the
// SharedQuota named "tenant:acme". Count does not check the eviction
// policy.
func (s *Store) Count(ctx context.Context, key string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("redisstore: count: %w", err)
	}
	ck, zk := s.counterKeys(key)
	n, err := s.count.Run(ctx, s.client, []string{ck, zk}).Int64()
	if err != nil {
		return 0, s.wrap("count", err)
	}
	return int(n), nil
}

func (s *Store) counterKeys(key string) (committed, reserved string) {
	k := escape(key)
	return s.prefix + "c:" + k, s.prefix + "z:" + k
}

func (s *Store) reservationKey(id string) string { return s.prefix + "r:" + escape(id) }

// wrap names the operation in err and turns a script's report of a
// malformed key into an error matching ErrMalformed.
func (s *Store) wrap(op string, err error) error {
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

func int64s(v []any) ([]int64, bool) {
	out := make([]int64, len(v))
	for i, x := range v {
		n, ok := x.(int64)
		if !ok {
			return nil, false
		}
		out[i] = n
	}
	return out, true
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
