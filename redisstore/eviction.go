package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrEvictionPolicy is matched by the error of a Reserve refused because
// a server's maxmemory-policy is not noeviction: such a server may evict
// the counter keys under memory pressure, and every evicted total starts
// again from zero, so quotas stop holding. The reserve script itself
// reads the policy (INFO memory) on the server, in the same atomic step
// as the reservation: a policy changed on a live server, a failover to a
// server configured otherwise and a policy set right again are all seen
// by the next Reserve. Configure the servers with maxmemory-policy
// noeviction, or accept the risk with AllowEviction.
var ErrEvictionPolicy = errors.New("redisstore: the server may evict quota keys")

// ErrMemoryFull is matched by the error of a Reserve refused because the
// server (under noeviction) is at its maxmemory: the reservation would
// grow the memory past it, and the commit that follows could not be
// written. The reserve script reads the memory (INFO memory) as Redis
// does before a write that needs memory: used_memory less
// mem_not_counted_for_evict, against maxmemory.
var ErrMemoryFull = errors.New("redisstore: the server is at its maxmemory")

type policyError struct{ key, policy string }

func (e *policyError) Error() string {
	return fmt.Sprintf("redisstore: the server holding %s has maxmemory-policy %s: it may evict quota keys, and an evicted total starts again from zero; set maxmemory-policy noeviction", e.key, e.policy)
}

func (e *policyError) Is(target error) bool { return target == ErrEvictionPolicy }

type memoryError struct {
	key         string
	used, limit int64
}

func (e *memoryError) Error() string {
	return fmt.Sprintf("redisstore: the server holding %s is at its maxmemory (%d of %d bytes used): no reservation until memory is freed or maxmemory raised", e.key, e.used, e.limit)
}

func (e *memoryError) Is(target error) bool { return target == ErrMemoryFull }

// AllowEviction lets the Store work on a server whose maxmemory-policy may
// evict keys, where quotas hold only while the server has memory to
// spare. warn, when not nil, receives an error matching ErrEvictionPolicy
// the first time a Reserve finds such a policy, and again each time the
// policy it finds changes. Without this option a Reserve on such a server
// fails.
func AllowEviction(warn func(error)) Option {
	return func(s *Store) { s.allowEviction, s.warn = true, warn }
}

// eviction remembers the last policy reported to AllowEviction's warn.
type eviction struct {
	mu     sync.Mutex
	warned string
}

// guard is the first argument of a batch's script: "-" when it holds no
// reservation (commits and releases settle what a reservation took and
// run whatever the policy), else whether an evicting policy is allowed.
func (s *Store) guard(g *group) string {
	switch {
	case len(g.parts) == 0:
		return "-"
	case s.allowEviction:
		return "allow"
	}
	return "check"
}

// seen reports the policy a reserve script found, to AllowEviction's warn.
func (s *Store) seen(key, policy string) {
	if policy == "noeviction" || s.warn == nil {
		return
	}
	s.ev.mu.Lock()
	changed := s.ev.warned != policy
	s.ev.warned = policy
	s.ev.mu.Unlock()
	if changed {
		s.warn(fmt.Errorf("%w (allowed by AllowEviction)", &policyError{key: key, policy: policy}))
	}
}

// guardErr turns a reserve script's refusal (a policy that may evict, or
// memory full) into its typed error, naming a key of the group; other
// errors are returned as they are.
func guardErr(g *group, err error) error {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return err
	}
	msg := rerr.Error()
	if p, ok := strings.CutPrefix(msg, "TOOLGUARD-EVICTION "); ok {
		return &policyError{key: g.keys[0], policy: p}
	}
	if f, ok := strings.CutPrefix(msg, "TOOLGUARD-FULL "); ok {
		e := &memoryError{key: g.keys[0]}
		if used, max, ok := strings.Cut(f, " "); ok {
			e.used, _ = strconv.ParseInt(used, 10, 64)
			e.limit, _ = strconv.ParseInt(max, 10, 64)
		}
		return e
	}
	return err
}
