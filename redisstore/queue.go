package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// defaultQueueLimit is how many commits and releases may wait to be
	// sent (WithQueueLimit); each takes about 100 bytes.
	defaultQueueLimit = 1 << 16
	// maxSendBatch bounds the operations of one background send.
	maxSendBatch = 1024
	// sendTimeout bounds one background send.
	sendTimeout = 5 * time.Second
	// retryFor bounds how long an operation whose send failed (the
	// server did not answer, a failover, a shard restarting) is sent
	// again, from its first failure. A commit that arrives after its
	// reservation's TTL does nothing (the unit went back to the quota).
	retryFor = time.Minute
	// The pause before sending again after a failed send: minBackoff,
	// doubling up to maxBackoff.
	minBackoff, maxBackoff = 50 * time.Millisecond, 2 * time.Second
)

// WithQueueLimit sets how many commits and releases may wait to be sent
// (default 65 536). When the queue is full, Commit and Release wait for
// room, bounded by their context, and then fail; the reservations they
// could not queue expire after their TTL. n < 1 means 1.
func WithQueueLimit(n int) Option {
	return func(s *Store) { s.q.limit = max(n, 1) }
}

// OnBackgroundError sets a function that receives the error of each
// background send that failed: a commit so lost gives its units back
// when the reservation's TTL ends, a release so lost holds them until
// then. The error names the operation, how many reservations it carried
// and what the server or the network answered; it holds no arguments or
// results of tool calls. fn runs on the Store's sending goroutine: it
// must not block for long.
func OnBackgroundError(fn func(error)) Option {
	return func(s *Store) { s.q.onError = fn }
}

// queue holds the commits and releases waiting to be sent.
type queue struct {
	limit   int
	onError func(error)

	mu      sync.Mutex
	ops     []settle
	running bool          // a goroutine is sending
	added   uint64        // operations queued so far
	done    uint64        // operations sent (or failed) so far
	changed chan struct{} // closed when done grows or room frees; nil: none made
	failed  int           // background sends failed since the last Flush
	first   error         // the first of them
}

// signal wakes those waiting for the queue. Call with q.mu held.
func (q *queue) signal() {
	if q.changed != nil {
		close(q.changed)
		q.changed = nil
	}
}

// waitCh returns the channel closed at the next signal. Call with q.mu
// held.
func (q *queue) waitCh() chan struct{} {
	if q.changed == nil {
		q.changed = make(chan struct{})
	}
	return q.changed
}

// add queues ops, waiting for room while the queue is full, bounded by
// ctx, and starts the sending goroutine if none runs.
func (q *queue) add(ctx context.Context, s *Store, ops []settle) error {
	if len(ops) == 0 {
		return nil
	}
	q.mu.Lock()
	for len(q.ops) > 0 && len(q.ops)+len(ops) > q.limit {
		ch := q.waitCh()
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		q.mu.Lock()
	}
	q.appendLocked(s, ops)
	q.mu.Unlock()
	return nil
}

// push queues ops without waiting: when the queue is full they are
// dropped and reported (they are releases of units that their TTL
// returns anyway).
func (q *queue) push(s *Store, ops []settle) {
	if len(ops) == 0 {
		return
	}
	q.mu.Lock()
	if len(q.ops) > 0 && len(q.ops)+len(ops) > q.limit {
		q.failed++
		err := fmt.Errorf("redisstore: release: the queue is full (%d operations): %d releases dropped; their reservations expire after their TTL", q.limit, len(ops))
		if q.first == nil {
			q.first = err
		}
		q.mu.Unlock()
		if q.onError != nil {
			q.onError(err)
		}
		return
	}
	q.appendLocked(s, ops)
	q.mu.Unlock()
}

func (q *queue) appendLocked(s *Store, ops []settle) {
	q.ops = append(q.ops, ops...)
	q.added += uint64(len(ops))
	if !q.running {
		q.running = true
		go q.send(s)
	}
}

// send sends the queue in batches until it is empty: while one batch is
// on its way, the next one accumulates. The operations of a failed send
// go back to the queue (see retryFor), and the next send waits a pause
// that grows while sends keep failing.
func (q *queue) send(s *Store) {
	backoff := time.Duration(0)
	for {
		q.mu.Lock()
		if len(q.ops) == 0 {
			q.running = false
			q.ops = nil
			q.signal()
			q.mu.Unlock()
			return
		}
		n := min(len(q.ops), maxSendBatch)
		batch := q.ops[:n:n]
		q.ops = q.ops[n:]
		q.signal() // room
		q.mu.Unlock()

		retry, err := s.sendSettles(batch)

		q.mu.Lock()
		q.ops = append(q.ops, retry...)
		q.done += uint64(n - len(retry))
		if err != nil {
			q.failed++
			if q.first == nil {
				q.first = err
			}
		}
		q.signal()
		q.mu.Unlock()
		if err != nil && q.onError != nil {
			q.onError(err)
		}
		if len(retry) == 0 {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, minBackoff), maxBackoff)
		time.Sleep(backoff)
	}
}

// drain waits until the operations queued before the call were sent.
func (q *queue) drain(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	target := q.added
	for q.done < target {
		ch := q.waitCh()
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			q.mu.Lock()
			return ctx.Err()
		}
		q.mu.Lock()
	}
	return nil
}

// Flush waits until every commit and release queued before the call was
// sent to the server, bounded by ctx, and returns an error if a
// background send failed since the last Flush (the first such error, with
// how many there were). Call it before closing the client, at shutdown.
func (s *Store) Flush(ctx context.Context) error {
	if err := s.q.drain(ctx); err != nil {
		return fmt.Errorf("redisstore: flush: %w", err)
	}
	q := &s.q
	q.mu.Lock()
	failed, first := q.failed, q.first
	q.failed, q.first = 0, nil
	q.mu.Unlock()
	if failed > 0 {
		return fmt.Errorf("redisstore: flush: %d background sends failed, the first: %w", failed, first)
	}
	return nil
}

// sendSettles sends commits and releases: one script per slot, in one
// pipeline. It returns the operations to send again: those that went to
// a script that failed for a transient reason, until their retry time is
// over.
func (s *Store) sendSettles(ops []settle) ([]settle, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	commits := 0
	for _, o := range ops {
		if o.commit {
			commits++
		}
	}
	what := fmt.Sprintf("background send of %d commits and %d releases", commits, len(ops)-commits)
	var failed map[*group]bool
	var first error
	b := s.newBatch()
	touched := make([][]*group, len(ops))
	for i, o := range ops {
		touched[i] = b.settle(o)
	}
	_, errs := s.run(ctx, b.groups)
	for gi, err := range errs {
		if err != nil {
			if failed == nil {
				failed = map[*group]bool{}
			}
			failed[b.groups[gi]] = true
			first = cmp(first, err)
		}
	}
	if first == nil {
		return nil, nil
	}
	var kept []settle
	for i, o := range ops {
		for _, g := range touched[i] {
			if failed[g] {
				kept = append(kept, o)
				break
			}
		}
	}
	ops = kept
	err := s.wrap(what, first)
	if !transient(first) {
		return nil, err
	}
	now := time.Now()
	var retry []settle
	for _, o := range ops {
		if o.until.IsZero() {
			o.until = now.Add(retryFor)
		}
		if now.Before(o.until) {
			retry = append(retry, o)
		}
	}
	if dropped := len(ops) - len(retry); dropped > 0 {
		return retry, fmt.Errorf("%w; %d operations dropped after %v of retries (their reservations expire after their TTL)", err, dropped, retryFor)
	}
	return retry, fmt.Errorf("%w; %d operations will be sent again", err, len(retry))
}

// transient reports whether a failed send may succeed later: the network
// or the server did not answer, or the cluster was moving (a failover, a
// migration, a node loading its data), or a full server refused it (OOM:
// memory may be freed, and a commit dropped would give its unit back after
// the reservation's TTL, an over-admission). A malformed key, an evicting
// server, a closed client or any other refusal by the server is not.
func transient(err error) bool {
	if errors.Is(err, ErrMalformed) || errors.Is(err, ErrEvictionPolicy) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return true
	}
	for _, p := range []string{"TRYAGAIN", "CLUSTERDOWN", "LOADING", "READONLY", "MASTERDOWN", "MOVED", "ASK", "NOREPLICAS", "OOM"} {
		if strings.HasPrefix(rerr.Error(), p) {
			return true
		}
	}
	return false
}
