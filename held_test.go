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

func (s *heldStore) Reserve(ctx context.Context, r store.Reservation) (store.Grant, error) {
	g, err := s.Memory.Reserve(ctx, r)
	if err == nil && g.OK {
		s.mu.Lock()
		s.open[r.ID] = true
		s.mu.Unlock()
	}
	return g, err
}

func (s *heldStore) Commit(ctx context.Context, id string) error {
	s.settled(id)
	return s.Memory.Commit(ctx, id)
}

func (s *heldStore) Release(ctx context.Context, id string) error {
	s.settled(id)
	return s.Memory.Release(ctx, id)
}

func (s *heldStore) settled(id string) {
	s.mu.Lock()
	delete(s.open, id)
	s.mu.Unlock()
}

// held returns the number of reservations held.
func (s *heldStore) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}
