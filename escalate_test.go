package toolguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEscalation(t *testing.T) {
	tool := &toolEntry{}
	keyA, keyB := testKey("t", Hash{1}), testKey("t", Hash{2})
	limit := firing{reason: ReasonToolLimit, scope: hintScope{rule: ruleLimit, tool: tool}}
	repeat := func(k callKey) firing {
		return firing{reason: ReasonDuplicate, scope: hintScope{rule: ruleRepeat, key: k}}
	}
	across := firing{reason: ReasonRepeatedFailure, scope: hintScope{rule: ruleAcross, key: keyA}, once: true}
	type step struct {
		key     callKey
		round   uint64
		changes uint32
		f       firing
		action  Action
		want    Verdict
		fired   bool
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"hint, then abort in the scope", []step{
			{keyA, 1, 0, limit, ActionHint, Hint, true},
			{keyB, 2, 0, limit, ActionHint, Abort, true},
		}},
		{"calls of the hinted round get the hint", []step{
			{keyA, 1, 0, limit, ActionHint, Hint, true},
			{keyB, 1, 0, limit, ActionHint, Hint, true},
		}},
		{"ActionAbort aborts at once", []step{
			{keyA, 1, 0, limit, ActionAbort, Abort, true},
		}},
		{"one escalation per call, whichever rule", []step{
			{keyA, 1, 0, repeat(keyA), ActionHint, Hint, true},
			{keyA, 2, 0, limit, ActionHint, Abort, true},
		}},
		{"a call's hint lapses when the world changed", []step{
			{keyA, 1, 0, repeat(keyA), ActionHint, Hint, true},
			{keyA, 2, 1, repeat(keyA), ActionHint, Hint, true},
		}},
		{"another call's hint does not count", []step{
			{keyA, 1, 0, repeat(keyA), ActionHint, Hint, true},
			{keyB, 2, 0, repeat(keyB), ActionHint, Hint, true},
		}},
		{"once: one hint per turn, then passed over", []step{
			{keyA, 1, 0, across, ActionHint, Hint, true},
			{keyA, 2, 0, across, ActionHint, Allow, false},
		}},
		{"once with ActionAbort: one abort, then passed over", []step{
			{keyA, 1, 0, across, ActionAbort, Abort, true},
			{keyA, 2, 0, across, ActionAbort, Allow, false},
		}},
		{"abort firings abort", []step{
			{keyA, 1, 0, firing{reason: ReasonRepeatedFailure, abort: true}, ActionHint, Abort, true},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var e escalation
			for i, s := range tt.steps {
				v, ok := e.decide(&probe{key: s.key, round: s.round, changes: s.changes}, s.f, s.action)
				assert.Equal(t, s.want, v, "step %d", i)
				assert.Equal(t, s.fired, ok, "step %d", i)
			}
		})
	}
}

func TestEscalationInsisted(t *testing.T) {
	var e escalation
	p := &probe{key: testKey("x", Hash{1}), round: 1, rule: &toolRule{name: "x"}}
	_, ok := e.insisted(p)
	assert.False(t, ok, "never hinted")
	e.decide(p, firing{reason: ReasonDuplicate, scope: hintScope{rule: ruleRepeat, key: p.key}}, ActionHint)
	_, ok = e.insisted(p)
	assert.False(t, ok, "the hinted round itself")
	p2 := &probe{key: p.key, round: 2, rule: p.rule}
	f, ok := e.insisted(p2)
	assert.True(t, ok)
	assert.Equal(t, ReasonDuplicate, f.reason)
	p2.changes = 1
	_, ok = e.insisted(p2)
	assert.False(t, ok, "the world changed since")
	p2.changes = 0
	e.forget(p.key)
	_, ok = e.insisted(p2)
	assert.False(t, ok, "the call made progress")
	e.decide(p, firing{reason: ReasonRepeatedFailure, scope: hintScope{rule: ruleFailure}}, ActionHint)
	_, ok = e.insisted(p2)
	assert.False(t, ok, "after a failure hint one attempt runs")
}
