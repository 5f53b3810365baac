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
				assert.Equal(t, n, w.n, "size %d after %d", size, i+1)
				assert.LessOrEqual(t, len(w.items), size)
				for k := range n {
					assert.Equal(t, uint64(i+2-n+k), w.at(k).seq, "size %d after %d, item %d", size, i+1, k)
				}
			}
			w.clear()
			assert.Zero(t, w.n, "round %d", round)
		}
	}
	var off window
	off.push(windowItem{seq: 1}) // size 0: the window is off
	assert.Zero(t, off.n)
	assert.Nil(t, off.items)
}
