package toolguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLimitsDetector(t *testing.T) {
	for _, tt := range []struct {
		name          string
		limit, quota  int
		turn, session int32
		fired         bool
		rule          rule
	}{
		{"no limits", 0, 0, 100, 100, false, 0},
		{"under the per-turn limit", 3, 0, 2, 2, false, 0},
		{"at the per-turn limit", 3, 0, 3, 3, true, ruleLimit},
		{"at the quota", 0, 5, 1, 5, true, ruleQuota},
		{"the per-turn limit first", 3, 5, 3, 5, true, ruleLimit},
		{"under both", 3, 5, 2, 4, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDetTest(Policy{})
			p := d.probe("bash", `{"cmd":"ls"}`, 1, 0)
			p.rule.limit, p.rule.quota = tt.limit, tt.quota // the test's own rule
			p.turn.stats.reserved, p.tool.session.reserved = tt.turn, tt.session
			l := limits{cfg: d.cfg}
			f, fired := l.check(p)
			assert.Equal(t, tt.fired, fired)
			if fired {
				assert.Equal(t, tt.rule, f.scope.rule)
				assert.Equal(t, ReasonToolLimit, f.reason)
				assert.Same(t, p.tool, f.scope.tool)
			}
		})
	}
}
