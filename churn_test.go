package toolguard

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestChurnDetector(t *testing.T) {
	fetch := func(v int) string { return fmt.Sprintf(`{"url":"https://docs.example.com/a?v=%d"}`, v) }
	search := func(q string) string { return `{"query":"` + q + `"}` }
	for _, tt := range []struct {
		name  string
		tool  string
		args  func(i int) string // the i-th call, allowed and recorded, one round each
		res   func(i int) string
		next  string
		fired bool
	}{
		{"one page fetched over and over", "fetch", fetch,
			func(int) string { return "same page" }, fetch(99), true},
		{"pages that each bring something new", "fetch", fetch,
			func(i int) string { return fmt.Sprint("page ", i) }, fetch(99), false},
		{"searches reworded, nothing new", "web_search",
			func(i int) string { return search(fmt.Sprintf("kubernetes pod restar%c loop", rune('a'+i))) },
			func(int) string { return "same hits" }, search("kubernetes pod restarz loop"), true},
		{"another page", "fetch", fetch,
			func(int) string { return "same page" }, `{"url":"https://docs.example.com/b"}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDetTest(Policy{})
			c := churn{cfg: d.cfg}
			n := d.cfg.windowLimit
			for i := range n {
				p := d.probe(tt.tool, tt.args(i), uint64(i+1), 0)
				p.seq = uint64(i + 1)
				c.allowed(p)
				c.recorded(p, okOut(p.seq, tt.res(i), 0))
			}
			f, fired := c.check(d.probe(tt.tool, tt.next, uint64(n+1), 0))
			assert.Equal(t, tt.fired, fired)
			if fired {
				assert.Equal(t, ReasonChurn, f.reason)
				assert.Equal(t, n, f.count)
			}
			c.endTurn(1)
			_, fired = c.check(d.probe(tt.tool, tt.next, uint64(n+2), 0))
			assert.False(t, fired, "the window is the turn's")
		})
	}
}
