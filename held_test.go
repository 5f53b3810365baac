package toolguard

import (
	"context"
	"sync"
	"time"

	"github.com/toolguard/toolguard/store"
)

// heldStore is a store.Memory that knows which reservations are held:
// granted, and neither committed nor released yet.
type heldStore struct {
	*store.Memory
	mu   sync.Mutex
	open map[string]bool
}

func newHeldStore(now func() time.Time) *heldStore {
	return &heldStore{Memory: store.NewMemory(now), open: map[string]bool{}}
}

func (s *heldStore) Reserve(ctx context.Context, rs []store.Reservation) ([]store.Grant, error) {
	gs, err := s.Memory.Reserve(ctx, rs)
	s.mu.Lock()
	for i, g := range gs {
		if g.OK {
			s.open[rs[i].ID] = true
		}
	}
	s.mu.Unlock()
	return gs, err
}

func (s *heldStore) Commit(ctx context.Context, rs []store.Reservation) error {
	s.settled(rs)
	return s.Memory.Commit(ctx, rs)
}

func (s *heldStore) Release(ctx context.Context, rs []store.Reservation) error {
	s.settled(rs)
	return s.Memory.Release(ctx, rs)
}

func (s *heldStore) settled(rs []store.Reservation) {
	s.mu.Lock()
	for _, r := range rs {
		delete(s.open, r.ID)
	}
	s.mu.Unlock()
}

// held returns the number of reservations held.
func (s *heldStore) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}
