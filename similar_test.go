package toolguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSimilarDetector(t *testing.T) {
	type step struct {
		args   string
		round  uint64
		result string // "" : the call is only checked
		fired  bool
	}
	q := func(s string) string { return `{"query":"` + s + `"}` }
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"a reworded query after one that found nothing new", []step{
			{q("kubernetes pod restart loop"), 1, "r1", false},
			{q("kubernetes pod restart loop fix"), 2, "r1", false}, // the result is not new: now stale
			{q("kubernetes pod restarting loop fix"), 3, "", true},
		}},
		{"a query that found something is refined, not repeated", []step{
			{q("kubernetes pod restart loop"), 1, "r1", false},
			{q("kubernetes pod restart loop fix"), 2, "", false},
		}},
		{"queries of one round are distinct questions", []step{
			{q("kubernetes pod restart loop"), 1, "r1", false},
			{q("kubernetes pod restart loop fix"), 1, "r1", false},
			{q("kubernetes pods restart loop fix"), 1, "", false},
		}},
		{"another scope is another question", []step{
			{`{"query":"kubernetes pod restart loop","page":1}`, 1, "r1", false},
			{`{"query":"kubernetes pod restart loop","page":1}`, 2, "r1", false},
			{`{"query":"kubernetes pod restart loops","page":2}`, 3, "", false},
		}},
		{"dissimilar queries", []step{
			{q("kubernetes pod restart loop"), 1, "r1", false},
			{q("kubernetes pod restart loop"), 2, "r1", false},
			{q("postgres vacuum settings"), 3, "", false},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDetTest(Policy{})
			s := similar{cfg: d.cfg}
			var r repeats
			for i, st := range tt.steps {
				p := d.probe("web_search", st.args, st.round, 0)
				_, fired := s.check(p)
				assert.Equal(t, st.fired, fired, "step %d", i)
				if fired || st.result == "" {
					continue
				}
				p.seq = uint64(i + 1)
				r.allowed(p)
				s.allowed(p)
				o := okOut(p.seq, st.result, 0)
				o.progress = r.progress(p, o)
				r.recorded(p, o)
				s.recorded(p, o)
			}
		})
	}
}
