package sessions

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/store"
)

// step is one use of a Map: advance the clock, then forget key or get its
// tracker and make one call with it.
type step struct {
	advance time.Duration
	key     string
	forget  bool
	created bool // want: Get made a new tracker
	turn    int  // want: the call's ledger turn; 0 means not checked
	len     int  // want: Len after the step
}

func TestMap(t *testing.T) {
	cases := []struct {
		name  string
		max   int
		idle  time.Duration
		steps []step
	}{
		{
			name: "one tracker per key",
			steps: []step{
				{key: "a", created: true, len: 1},
				{key: "b", created: true, len: 2},
				{key: "a", len: 2},
				{key: "", created: true, len: 3},
				{key: "", len: 3},
			},
		},
		{
			name: "least recently used dropped first",
			max:  2,
			steps: []step{
				{key: "a", created: true, len: 1},
				{key: "b", created: true, len: 2},
				{key: "a", len: 2},
				{key: "c", created: true, len: 2}, // drops b
				{key: "a", len: 2},
				{key: "b", created: true, len: 2}, // drops c
				{key: "c", created: true, len: 2}, // drops a
				{key: "a", created: true, len: 2},
			},
		},
		{
			name: "forget",
			steps: []step{
				{key: "a", created: true, len: 1},
				{key: "a", forget: true, len: 0},
				{key: "nobody", forget: true, len: 0},
				{key: "a", created: true, len: 1},
			},
		},
		{
			name: "idle reset starts a new turn",
			idle: time.Minute,
			steps: []step{
				{key: "a", created: true, turn: 1, len: 1},
				{advance: 59 * time.Second, key: "a", turn: 1, len: 1},
				{advance: 59 * time.Second, key: "a", turn: 1, len: 1},
				{advance: time.Minute, key: "a", turn: 2, len: 1},
				{key: "b", created: true, turn: 1, len: 2},
			},
		},
		{
			name: "no idle reset",
			steps: []step{
				{key: "a", created: true, turn: 1, len: 1},
				{advance: time.Hour, key: "a", turn: 1, len: 1},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			p := toolguard.Policy{Now: func() time.Time { return now }}
			m := New[string](p, tc.max, tc.idle)
			for i, s := range tc.steps {
				now = now.Add(s.advance)
				if s.forget {
					m.Forget(s.key)
					require.Equal(t, s.len, m.Len(), "step %d", i)
					continue
				}
				tr, created := m.Get(s.key)
				require.NotNil(t, tr, "step %d", i)
				require.Equal(t, s.created, created, "step %d", i)
				c := toolguard.Call{Tool: "read", Args: json.RawMessage(fmt.Sprintf(`{"step":%d}`, i))}
				require.Equal(t, toolguard.Allow, tr.ShouldSkip(c).Verdict, "step %d", i)
				tr.Record(c, toolguard.Outcome{Result: "ok"})
				if s.turn != 0 {
					l := tr.Ledger()
					require.Equal(t, s.turn, l[len(l)-1].Turn, "step %d", i)
				}
				require.Equal(t, s.len, m.Len(), "step %d", i)
			}
		})
	}
}

func TestMapSameTracker(t *testing.T) {
	m := New[int](toolguard.Policy{}, 0, 0)
	a, _ := m.Get(1)
	b, _ := m.Get(1)
	assert.Same(t, a, b)
	c, _ := m.Get(2)
	assert.NotSame(t, a, c)
}

func TestMapBounds(t *testing.T) {
	cases := []struct {
		name string
		max  int
		keys int
		want int
	}{
		{"default", 0, DefaultMax + 10, DefaultMax},
		{"bounded", 3, 100, 3},
		{"unbounded", -1, 3000, 3000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := New[int](toolguard.Policy{}, tc.max, 0)
			for i := range tc.keys {
				m.Get(i)
			}
			assert.Equal(t, tc.want, m.Len())
		})
	}
}

func TestMapConcurrent(t *testing.T) {
	m := New[int](toolguard.Policy{}, 4, time.Nanosecond)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := (w + i) % 6
				if i%7 == 0 {
					m.Forget(k)
					continue
				}
				tr, _ := m.Get(k)
				tr.ShouldSkip(toolguard.Call{Tool: "t"})
				_ = m.Len()
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, m.Len(), 4)
}

// A Policy with shared quotas and no Store gets one store.Memory for all
// its Trackers; one with a Store, or without shared quotas, is kept.
func TestShareStore(t *testing.T) {
	p := ShareStore(toolguard.Policy{SharedQuotas: []store.SharedQuota{{Name: "all", Limit: 1}}})
	require.NotNil(t, p.Store)
	a, b := toolguard.NewTracker(p), toolguard.NewTracker(p)
	c := toolguard.Call{Tool: "t", Args: []byte(`{}`)}
	require.Equal(t, toolguard.Allow, a.ShouldSkip(c).Verdict)
	a.Record(c, toolguard.Outcome{Result: "ok"})
	assert.NotEqual(t, toolguard.Allow, b.ShouldSkip(c).Verdict, "the quota is shared")

	assert.Nil(t, ShareStore(toolguard.Policy{}).Store)
	mem := store.NewMemory(nil)
	kept := ShareStore(toolguard.Policy{Store: mem, SharedQuotas: p.SharedQuotas})
	assert.Same(t, mem, kept.Store.(*store.Memory))
}
