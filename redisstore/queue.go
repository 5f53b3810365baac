package redisstore

import (
	"context"
	"fmt"
	"sync"
	"time"
)

const (
	// defaultQueueLimit is how many commits and releases may wait to be
	// sent (WithQueueLimit); each takes about 100 bytes.
	defaultQueueLimit = 1 << 16
	// maxSendBatch bounds the operations of one background send.
	maxSendBatch = 1024
	// sendTimeout bounds one background send.
	sendTimeout = 5 * time.Second
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
// on its way, the next one accumulates.
func (q *queue) send(s *Store) {
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

		err := s.sendSettles(batch)

		q.mu.Lock()
		q.done += uint64(n)
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
// pipeline.
func (s *Store) sendSettles(ops []settle) error {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	commits := 0
	for _, o := range ops {
		if o.commit {
			commits++
		}
	}
	what := fmt.Sprintf("background send of %d commits and %d releases", commits, len(ops)-commits)
	if err := s.ready(ctx, what); err != nil {
		return err
	}
	b := s.newBatch()
	for _, o := range ops {
		b.settle(o)
	}
	_, errs := s.run(ctx, b.groups)
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp(first, err)
		}
	}
	if failed == 0 {
		return nil
	}
	return s.wrap(fmt.Sprintf("%s: %d of %d scripts failed", what, failed, len(errs)), first)
}
