package toolguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRepeatsDetector(t *testing.T) {
	type step struct {
		args    string
		changes uint32
		result  string // "" : the call is only checked
		fired   bool
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"the same call with the same result fires at MaxRepeats", []step{
			{`{"a":1}`, 0, "x", false},
			{`{"a":1}`, 0, "x", false},
			{`{"a":1}`, 0, "", true},
		}},
		{"key order does not make a new call", []step{
			{`{"a":1,"b":2}`, 0, "x", false},
			{`{"b":2,"a":1}`, 0, "x", false},
			{`{"a":1,"b":2}`, 0, "", true},
		}},
		{"a changed result is progress", []step{
			{`{"a":1}`, 0, "x", false},
			{`{"a":1}`, 0, "y", false},
			{`{"a":1}`, 0, "", false},
		}},
		{"a change of the world starts the count over", []step{
			{`{"a":1}`, 0, "x", false},
			{`{"a":1}`, 0, "x", false},
			{`{"a":1}`, 1, "", false},
		}},
		{"other arguments are another call", []step{
			{`{"a":1}`, 0, "x", false},
			{`{"a":1}`, 0, "x", false},
			{`{"a":2}`, 0, "", false},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDetTest(Policy{})
			var r repeats
			for i, s := range tt.steps {
				p := d.probe("read_file", s.args, uint64(i+1), s.changes)
				_, fired := r.check(p)
				assert.Equal(t, s.fired, fired, "step %d", i)
				if fired || s.result == "" {
					continue
				}
				r.allowed(p)
				o := okOut(uint64(i+1), s.result, s.changes)
				o.progress = r.progress(p, o)
				r.recorded(p, o)
			}
		})
	}
}
