// Package sessions keeps one toolguard.Tracker per session key in a
// bounded map that drops the least recently used session first. The MCP
// adapters build their Sessions types on it; it knows nothing of any SDK.
package sessions

import (
	"container/list"
	"sync"
	"time"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/store"
)

// DefaultMax is the number of trackers a Map keeps when New is given a
// max of 0.
const DefaultMax = 1024

// Map keeps one Tracker per key, each made from the same Policy. It is
// safe for concurrent use. Create it with New.
type Map[K comparable] struct {
	policy toolguard.Policy
	max    int
	idle   time.Duration
	now    func() time.Time

	mu    sync.Mutex
	byKey map[K]*list.Element // of *entry[K]
	order list.List           // most recently used first
}

type entry[K comparable] struct {
	key  K
	t    *toolguard.Tracker
	last time.Time
}

// New returns an empty Map whose trackers are made with
// toolguard.NewTracker(p). max is the number of trackers kept: 0 means
// DefaultMax, negative means no limit. idle, when positive, resets
// (Tracker.Reset) the tracker of a key whose previous use was at least
// that long ago. The clock is p.Now (time.Now when nil). With a Store and
// no Policy.Breaker, its trackers share one Breaker, so that an outage
// costs the process one timeout, not one per conversation (a Store that
// breaks per server itself, such as redisstore, needs none).
func New[K comparable](p toolguard.Policy, max int, idle time.Duration) *Map[K] {
	p = ShareBreaker(p)
	m := &Map[K]{
		policy: p,
		max:    max,
		idle:   idle,
		now:    p.Now,
		byKey:  make(map[K]*list.Element),
	}
	if m.max == 0 {
		m.max = DefaultMax
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Get returns the Tracker of k, creating it on first use (created is then
// true). Making a new tracker when the map is full drops the trackers of
// the least recently used keys.
func (m *Map[K]) Get(k K) (t *toolguard.Tracker, created bool) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[k]; ok {
		e := el.Value.(*entry[K])
		m.order.MoveToFront(el)
		if m.idle > 0 && now.Sub(e.last) >= m.idle {
			e.t.Reset()
		}
		e.last = now
		return e.t, false
	}
	if m.max > 0 {
		for m.order.Len() >= m.max {
			old := m.order.Back()
			m.order.Remove(old)
			delete(m.byKey, old.Value.(*entry[K]).key)
		}
	}
	e := &entry[K]{key: k, t: toolguard.NewTracker(m.policy), last: now}
	m.byKey[k] = m.order.PushFront(e)
	return e.t, true
}

// Forget drops the Tracker of k.
func (m *Map[K]) Forget(k K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[k]; ok {
		m.order.Remove(el)
		delete(m.byKey, k)
	}
}

// Len returns the number of trackers kept.
func (m *Map[K]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}

// ShareBreaker returns p with one Breaker for the Trackers made from it,
// when it has a Store without a breaker of its own and names none.
func ShareBreaker(p toolguard.Policy) toolguard.Policy {
	if _, own := p.Store.(store.ServerBreaker); p.Store != nil && p.Breaker == nil && !own {
		p.Breaker = &store.Breaker{}
	}
	return p
}

// ShareStore returns p with one store.Memory for the Trackers made from it
// when it declares SharedQuotas and no Store: its shared quotas are then
// shared by every conversation of the server (and every call guarded by a
// Tracker of its own), as their name says, rather than counted per Tracker.
func ShareStore(p toolguard.Policy) toolguard.Policy {
	if p.Store == nil && len(p.SharedQuotas) > 0 {
		p.Store = store.NewMemory(p.Now)
	}
	return p
}
