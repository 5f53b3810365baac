package store

import (
	"context"
	"sync"
	"time"
)

// Memory is a Store inside one process, safe for concurrent use.
// Trackers that share one Memory share its quotas.
type Memory struct {
	now func() time.Time

	mu        sync.Mutex
	counters  map[string]*memCounter
	held      map[string]memHold // reservation id → what it holds
	lastSweep time.Time
}

type memCounter struct {
	count   int       // committed units
	held    int       // reserved units
	expires time.Time // end of the window; zero: never
}

type memHold struct {
	keys    []string
	expires time.Time
}

// NewMemory returns an empty Memory. now is its clock; nil
// means time.Now.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, counters: make(map[string]*memCounter), held: make(map[string]memHold)}
}

// Reserve implements Store.
func (s *Memory) Reserve(ctx context.Context, rs []Reservation) ([]Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expireLocked(now)
	gs := make([]Grant, len(rs))
	for i, r := range rs {
		gs[i] = s.reserveLocked(r, now)
	}
	return gs, nil
}

func (s *Memory) reserveLocked(r Reservation, now time.Time) Grant {
	g := Grant{OK: true, Blocked: -1, Counts: make([]int, len(r.Counters))}
	if _, retry := s.held[r.ID]; retry {
		// The same reservation again (a retried request): it holds already.
		for i, c := range r.Counters {
			if mc := s.counterLocked(c.Key, now); mc != nil {
				g.Counts[i] = mc.count + mc.held
			}
		}
		return g
	}
	for i, c := range r.Counters {
		mc := s.counterLocked(c.Key, now)
		n := 0
		if mc != nil {
			n = mc.count + mc.held
		}
		g.Counts[i] = n
		if g.OK && n >= c.Limit {
			g.OK, g.Blocked = false, i
		}
	}
	if !g.OK {
		return g
	}
	keys := make([]string, len(r.Counters))
	for i, c := range r.Counters {
		mc := s.counters[c.Key]
		if mc == nil {
			mc = &memCounter{}
			s.counters[c.Key] = mc
		}
		if c.Window > 0 && mc.expires.IsZero() {
			mc.expires = now.Add(c.Window)
		}
		mc.held++
		g.Counts[i]++
		keys[i] = c.Key
	}
	ttl := r.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	s.held[r.ID] = memHold{keys: keys, expires: now.Add(ttl)}
	return g
}

// Commit implements Store.
func (s *Memory) Commit(ctx context.Context, rs []Reservation) error { return s.settle(rs, true) }

// Release implements Store.
func (s *Memory) Release(ctx context.Context, rs []Reservation) error { return s.settle(rs, false) }

// settle books or returns the units of rs. A reservation that expired or
// was settled already is skipped.
func (s *Memory) settle(rs []Reservation, commit bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		h, ok := s.held[r.ID]
		if !ok {
			continue
		}
		delete(s.held, r.ID)
		for _, k := range h.keys {
			if mc := s.counters[k]; mc != nil {
				mc.held--
				if commit {
					mc.count++
				}
			}
		}
	}
	return nil
}

// Count returns a counter's total, reservations included.
func (s *Memory) Count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expireLocked(now)
	if mc := s.counterLocked(key, now); mc != nil {
		return mc.count + mc.held
	}
	return 0
}

// counterLocked returns the counter of key, starting it over when its
// window has ended.
func (s *Memory) counterLocked(key string, now time.Time) *memCounter {
	mc := s.counters[key]
	if mc == nil || mc.expires.IsZero() || now.Before(mc.expires) {
		return mc
	}
	if mc.held == 0 {
		delete(s.counters, key)
		return nil
	}
	// Units still held belong to calls of the old window: keep them until
	// they settle, count nothing else.
	mc.count, mc.expires = 0, time.Time{}
	return mc
}

// expireLocked releases reservations past their TTL. It sweeps at most
// once a second, so Reserve stays O(counters of the call) on average.
func (s *Memory) expireLocked(now time.Time) {
	if now.Sub(s.lastSweep) < time.Second {
		return
	}
	s.lastSweep = now
	for id, h := range s.held {
		if now.After(h.expires) {
			delete(s.held, id)
			for _, k := range h.keys {
				if mc := s.counters[k]; mc != nil {
					mc.held--
				}
			}
		}
	}
}
