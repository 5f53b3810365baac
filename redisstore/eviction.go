package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ErrEvictionPolicy is matched by the error of an operation refused
// because a server's maxmemory-policy is not noeviction: such a server
// may evict the counter keys under memory pressure, and every evicted
// total starts again from zero, so quotas stop holding. The Store reads
// the policy (INFO memory) of every server it writes to (every master of
// a cluster) before its first operation and again after the client dials
// a new connection (a reconnect, a failover). Configure the servers with
// maxmemory-policy noeviction, or accept the risk with AllowEviction.
var ErrEvictionPolicy = errors.New("redisstore: the server may evict quota keys")

type policyError struct{ addr, policy string }

func (e *policyError) Error() string {
	return fmt.Sprintf("redisstore: the server %s has maxmemory-policy %s: it may evict quota keys, and an evicted total starts again from zero; set maxmemory-policy noeviction", e.addr, e.policy)
}

func (e *policyError) Is(target error) bool { return target == ErrEvictionPolicy }

// AllowEviction lets the Store work on a server whose maxmemory-policy may
// evict keys, where quotas hold only while the server has memory to
// spare. warn, when not nil, receives an error matching ErrEvictionPolicy
// when the Store finds such a policy (it checks before its first operation
// and after each new connection), and again when the policy it finds
// changes. Without this option such a server refuses every operation.
func AllowEviction(warn func(error)) Option {
	return func(s *Store) { s.allowEviction, s.warn = true, warn }
}

// eviction is the state of the maxmemory-policy check.
type eviction struct {
	recheck  atomic.Bool                 // a connection was dialled since the last check
	checking chan struct{}               // one check at a time
	evicting atomic.Pointer[policyError] // the last check's finding; nil: safe
	hooked   sync.Map                    // *redis.Client of a cluster node → struct{}: dialHook added
}

// dialHook marks the policy for a new check whenever the client dials.
type dialHook struct{ s *Store }

func (h dialHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			h.s.ev.recheck.Store(true)
		}
		return conn, err
	}
}

func (dialHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// watchDials adds the dial hook to client, or, for a cluster, to each of
// its nodes: a ClusterClient dials through its nodes' clients only.
func (s *Store) watchDials() {
	s.ev.checking = make(chan struct{}, 1)
	s.ev.recheck.Store(true)
	if c, ok := s.client.(*redis.ClusterClient); ok {
		c.OnNewNode(s.hookNode)
		return
	}
	s.client.AddHook(dialHook{s})
}

func (s *Store) hookNode(c *redis.Client) {
	if _, done := s.ev.hooked.LoadOrStore(c, struct{}{}); !done {
		c.AddHook(dialHook{s})
	}
}

// ready checks the servers' maxmemory-policy when a connection was dialled
// since the last check, and returns an error matching ErrEvictionPolicy
// while one may evict (unless AllowEviction).
func (s *Store) ready(ctx context.Context, op string) error {
	if s.ev.recheck.Load() {
		select {
		case s.ev.checking <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("redisstore: %s: %w", op, ctx.Err())
		}
		err := s.checkPolicy(ctx)
		<-s.ev.checking
		if err != nil {
			return fmt.Errorf("redisstore: %s: reading maxmemory-policy: %w", op, err)
		}
	}
	return s.evictionErr(op)
}

// evictionErr returns the last check's finding as an operation's error.
func (s *Store) evictionErr(op string) error {
	if e := s.ev.evicting.Load(); e != nil && !s.allowEviction {
		return fmt.Errorf("redisstore: %s: %w", op, e)
	}
	return nil
}

// checkPolicy reads the maxmemory-policy of every server the client
// writes to. On a cluster, a master that cannot be reached is skipped:
// the operations on its slots fail on their own, and the client dials it
// (so the Store checks it) when it is back.
func (s *Store) checkPolicy(ctx context.Context) error {
	if !s.ev.recheck.Swap(false) {
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
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			s.hookNode(n)
			var rerr redis.Error
			if err := check(ctx, n); err != nil && (errors.As(err, &rerr) || ctx.Err() != nil) {
				return err // a refusal (an ACL without +info), or out of time
			}
			return nil
		})
	case *redis.Client:
		err = check(ctx, c)
	default:
		// A Ring spreads keys over servers this Store does not support.
		err = fmt.Errorf("unsupported client %T", s.client)
	}
	if err != nil {
		s.ev.recheck.Store(true)
		return err
	}
	e := found.Load()
	if old := s.ev.evicting.Swap(e); e != nil && s.warn != nil && (old == nil || *old != *e) {
		s.warn(fmt.Errorf("%w (allowed by AllowEviction)", e))
	}
	return nil
}
