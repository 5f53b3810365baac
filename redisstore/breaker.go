package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrServerDown is matched by the error of a Reserve that needed a server
// which failed to answer a moment ago: the Store does not ask it again
// until its cooldown (one second) ends; then one Reserve probes it. The
// other servers of a cluster are asked as usual.
var ErrServerDown = errors.New("redisstore: the server did not answer a moment ago")

// serverCooldown is how long a server that did not answer is not asked.
const serverCooldown = time.Second

// BreaksPerServer marks the Store as a store.ServerBreaker: it keeps a
// breaker per server (per node of a cluster), so a Tracker puts no
// breaker of its own in front of it, and one shard's outage does not hold
// back the calls of the others. The Store's breakers are shared by every
// Tracker that uses the Store: give the Trackers of a process one Store.
func (s *Store) BreaksPerServer() {}

// breakers holds, per server that failed, until when it is not asked.
type breakers struct {
	mu   sync.Mutex
	down map[string]time.Time // server → end of its cooldown
}

// allow reports whether server may be asked now; past the cooldown the
// first caller probes it and the others wait for another cooldown.
func (b *breakers) allow(server string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, down := b.down[server]
	if !down {
		return true
	}
	if now.Before(until) {
		return false
	}
	b.down[server] = now.Add(serverCooldown) // the probe
	return true
}

// report records how the servers answered: failed ones are down for a
// cooldown, the others are up.
func (b *breakers) report(now time.Time, up, failed []string) {
	if len(failed) == 0 && len(up) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range up {
		delete(b.down, n)
	}
	for _, n := range failed {
		if b.down == nil {
			b.down = map[string]time.Time{}
		}
		b.down[n] = now.Add(serverCooldown)
	}
}

// server returns the name of the server a group is sent to: the address
// of its slot's master on a cluster, "" for a single server or a
// failover client (one server at a time).
func (s *Store) server(ctx context.Context, g *group) string {
	c, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return ""
	}
	n, err := c.MasterForKey(ctx, g.keys[0])
	if err != nil {
		return "" // no slot map yet: the operation finds out
	}
	return n.Options().Addr
}

// failedServer reports whether err says the server did not answer (a
// network error, a timeout), not that it refused the script.
func failedServer(err error) bool {
	var rerr redis.Error
	return err != nil && !errors.As(err, &rerr)
}

func serverDown(server string) error {
	if server == "" {
		return ErrServerDown
	}
	return fmt.Errorf("%w (%s)", ErrServerDown, server)
}
