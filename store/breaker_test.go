package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestBreakerSteps drives a Breaker as a Tracker does, step by step: Begin
// before an operation, End after one that ran.
func TestBreakerSteps(t *testing.T) {
	t0 := time.Unix(0, 0)
	type end struct{ failed, ok bool }
	for _, tc := range []struct {
		name     string
		cooldown time.Duration
		at       []time.Duration // when each operation begins
		ends     []end           // how each operation that ran ended
		want     []BreakerStep   // Begin's step, then End's, per operation
	}{
		{
			name: "a failure opens; the cooldown passes; the probe closes",
			at:   []time.Duration{0, 500 * time.Millisecond, time.Second},
			ends: []end{{failed: true}, {ok: true}},
			want: []BreakerStep{
				{Run: true}, {From: BreakerClosed, To: BreakerOpen},
				{From: BreakerOpen, To: BreakerOpen},
				{Run: true, Probe: true, From: BreakerOpen, To: BreakerHalfOpen}, {From: BreakerHalfOpen, To: BreakerClosed},
			},
		},
		{
			name: "a probe that fails opens again",
			at:   []time.Duration{0, time.Second},
			ends: []end{{failed: true}, {failed: true}},
			want: []BreakerStep{
				{Run: true}, {From: BreakerClosed, To: BreakerOpen},
				{Run: true, Probe: true, From: BreakerOpen, To: BreakerHalfOpen}, {From: BreakerHalfOpen, To: BreakerOpen},
			},
		},
		{
			name: "a cancelled probe says nothing: the next operation probes again",
			at:   []time.Duration{0, time.Second, time.Second},
			ends: []end{{failed: true}, {}, {ok: true}},
			want: []BreakerStep{
				{Run: true}, {From: BreakerClosed, To: BreakerOpen},
				{Run: true, Probe: true, From: BreakerOpen, To: BreakerHalfOpen}, {From: BreakerHalfOpen, To: BreakerOpen},
				{Run: true, Probe: true, From: BreakerOpen, To: BreakerHalfOpen}, {From: BreakerHalfOpen, To: BreakerClosed},
			},
		},
		{
			name:     "a negative cooldown never opens",
			cooldown: -1,
			at:       []time.Duration{0, 0},
			ends:     []end{{failed: true}, {failed: true}},
			want:     []BreakerStep{{Run: true}, {}, {Run: true}, {}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Breaker{Cooldown: tc.cooldown}
			var got []BreakerStep
			ends := tc.ends
			for _, at := range tc.at {
				step := b.Begin(t0.Add(at))
				got = append(got, step)
				if step.Run {
					e := ends[0]
					ends = ends[1:]
					got = append(got, b.End(t0.Add(at), step.Probe, e.failed, e.ok))
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
	assert.Equal(t, "closed open half-open BreakerState(7)", fmt.Sprint(BreakerClosed, BreakerOpen, BreakerHalfOpen, BreakerState(7)))
	assert.True(t, BreakerStep{From: BreakerOpen, To: BreakerHalfOpen}.Changed())
}
