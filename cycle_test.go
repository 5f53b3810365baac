package toolguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCyclesDetector(t *testing.T) {
	for _, tt := range []struct {
		name  string
		calls []string // booked in the ledger, each with nothing new
		next  string
		fired bool
	}{
		{"A B A B A B, then A", []string{"a", "b", "a", "b", "a", "b"}, "a", true},
		{"A B C three times, then A", []string{"a", "b", "c", "a", "b", "c", "a", "b", "c"}, "a", true},
		{"A B twice only", []string{"a", "b", "a", "b"}, "a", false},
		{"the cycle broken", []string{"a", "b", "a", "c", "a", "b"}, "a", false},
		{"a call that does not continue it", []string{"a", "b", "a", "b", "a", "b"}, "c", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDetTest(Policy{})
			c := cycles{ledger: &ledger{}}
			for i, name := range tt.calls {
				p := d.probe("read_file", `{"path":"`+name+`"}`, uint64(i+1), 0)
				seq := c.ledger.add(ledgerEntry{desc: &callDesc{rule: p.rule}, argsHash: p.args},
					1, p.round, detTestNow, rawEntry{}, d.cfg.ledgerKeep, false)
				c.ledger.finish(seq, false, false, 0, "", false)
			}
			p := d.probe("read_file", `{"path":"`+tt.next+`"}`, uint64(len(tt.calls)+1), 0)
			f, fired := c.check(p)
			assert.Equal(t, tt.fired, fired)
			if fired {
				assert.Equal(t, ReasonCycle, f.reason)
				assert.Equal(t, hintScope{rule: ruleCycle}, f.scope)
			}
		})
	}
}
