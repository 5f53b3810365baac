package toolguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWindowGrows checks that the window's ring, grown as it fills, holds
// the most recent calls in order at every size and after a clear.
func TestWindowGrows(t *testing.T) {
	for _, size := range []int{1, 2, 3, 5, 10, 17} {
		var w window
		w.init(size)
		for round := range 2 {
			for i := range 3 * size {
				w.push(windowItem{seq: uint64(i + 1)})
				n := min(i+1, size)
				assert.Equal(t, n, len(w.items), "size %d after %d", size, i+1)
				assert.LessOrEqual(t, cap(w.items), size)
				for k := range n {
					assert.Equal(t, uint64(i+2-n+k), w.at(k).seq, "size %d after %d, item %d", size, i+1, k)
				}
			}
			w.clear()
			assert.Empty(t, w.items, "round %d", round)
		}
	}
	var off window
	off.push(windowItem{seq: 1}) // size 0: the window is off
	assert.Nil(t, off.items)
}

// TestHistoryGrows checks the same of the history ring, and that the slot
// push returns holds its item until newer calls push it out.
func TestHistoryGrows(t *testing.T) {
	for _, size := range []int{1, 2, 3, 5, 12, 17} {
		var h history
		h.init(size)
		for round := range 2 {
			for i := range 3 * size {
				slot := h.push(histItem{seq: uint64(i + 1)})
				assert.Equal(t, uint64(i+1), h.items[slot].seq)
				n := min(i+1, size)
				assert.Equal(t, n, len(h.items), "size %d after %d", size, i+1)
				assert.LessOrEqual(t, cap(h.items), size)
				for k := range n {
					assert.Equal(t, uint64(i+1-k), h.at(k).seq, "size %d after %d, item %d", size, i+1, k)
				}
			}
			h.clear()
			assert.Empty(t, h.items, "round %d", round)
		}
	}
	var off history
	assert.Equal(t, int32(-1), off.push(histItem{seq: 1}))
	assert.Nil(t, off.items)
}
