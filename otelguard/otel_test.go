package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard"
	tgotel "github.com/toolguard/toolguard/otelguard"
)

// env is an Observer wired to in-memory exporters.
type env struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	obs    *tgotel.Observer
}

func newEnv(t *testing.T, opts ...tgotel.Option) *env {
	t.Helper()
	e := &env{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(e.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	t.Cleanup(func() {
		_ = e.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := tgotel.NewObserver(append([]tgotel.Option{
		tgotel.WithTracerProvider(e.tp), tgotel.WithMeterProvider(mp)}, opts...)...)
	require.NoError(t, err)
	e.obs = obs
	return e
}

// attrs returns a span's attributes as a map of their emitted values.
func attrs(kvs []attribute.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// sums returns the data points of a counter, keyed by "k=v,k=v".
func (e *env) sums(t *testing.T, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, e.reader.Collect(context.Background(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, "%s is a sum", name)
			require.True(t, sum.IsMonotonic)
			for _, dp := range sum.DataPoints {
				var parts []string
				for _, kv := range dp.Attributes.ToSlice() {
					parts = append(parts, fmt.Sprintf("%s=%s", kv.Key, kv.Value.Emit()))
				}
				sort.Strings(parts)
				out[strings.Join(parts, ",")] = dp.Value
			}
		}
	}
	return out
}

func call(id, tool, args string) toolguard.Call {
	return toolguard.Call{ID: id, Tool: tool, Args: json.RawMessage(args)}
}

func TestSpansOfALoop(t *testing.T) {
	e := newEnv(t)
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: e.obs.OnEvent})
	for i := 1; i <= 4; i++ {
		c := call(fmt.Sprintf("call_%d", i), "get_weather", `{"city":"Paris"}`)
		if d := tr.ShouldSkip(c); !d.Skip() {
			tr.Record(c, toolguard.Outcome{Result: "sunny"})
		}
	}

	spans := e.spans.GetSpans()
	require.Len(t, spans, 4)
	for i, s := range spans {
		assert.Equal(t, "execute_tool get_weather", s.Name)
		assert.Equal(t, trace.SpanKindInternal, s.SpanKind)
		assert.False(t, s.Parent.IsValid(), "a span without a context func is a root")
		a := attrs(s.Attributes)
		assert.Equal(t, "execute_tool", a["gen_ai.operation.name"])
		assert.Equal(t, "get_weather", a["gen_ai.tool.name"])
		assert.Equal(t, fmt.Sprintf("call_%d", i+1), a["gen_ai.tool.call.id"])
		assert.Equal(t, "normal", a["toolguard.phase"])
		assert.Equal(t, int64(1), a["toolguard.turn"])
		assert.NotContains(t, a, "toolguard.evicted")
	}
	for _, s := range spans[:2] {
		a := attrs(s.Attributes)
		assert.Equal(t, "allow", a["toolguard.verdict"])
		assert.Equal(t, "none", a["toolguard.reason"])
		assert.Equal(t, "ok", a["toolguard.status"])
		assert.Equal(t, codes.Unset, s.Status.Code)
		assert.False(t, s.EndTime.Before(s.StartTime))
	}
	assert.Equal(t, true, attrs(spans[0].Attributes)["toolguard.new_result"])
	assert.Equal(t, false, attrs(spans[1].Attributes)["toolguard.new_result"])
	for i, verdict := range []string{"hint", "abort"} {
		s := spans[2+i]
		a := attrs(s.Attributes)
		assert.Equal(t, verdict, a["toolguard.verdict"])
		assert.Equal(t, "duplicate", a["toolguard.reason"])
		assert.Equal(t, "toolguard.duplicate", a["error.type"])
		assert.NotContains(t, a, "toolguard.status")
		assert.Equal(t, codes.Error, s.Status.Code)
		assert.Contains(t, s.Status.Description, verdict+": duplicate")
		assert.Equal(t, s.StartTime, s.EndTime, "a skipped call's span has no length")
	}

	assert.Equal(t, map[string]int64{
		"gen_ai.tool.name=get_weather,toolguard.verdict=allow": 2,
		"gen_ai.tool.name=get_weather,toolguard.verdict=hint":  1,
		"gen_ai.tool.name=get_weather,toolguard.verdict=abort": 1,
	}, e.sums(t, "toolguard.calls"))
	assert.Equal(t, map[string]int64{
		"gen_ai.tool.name=get_weather,toolguard.reason=duplicate": 2,
	}, e.sums(t, "toolguard.skips"))
	assert.Empty(t, e.sums(t, "toolguard.phase_transitions"))
}

func TestPhaseChangesAreSpanEvents(t *testing.T) {
	e := newEnv(t)
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4, OnEvent: e.obs.OnEvent})
	for i := 1; i <= 5; i++ {
		c := call(fmt.Sprintf("c%d", i), "poll", `{}`)
		if d := tr.ShouldSkip(c); !d.Skip() {
			tr.Record(c, toolguard.Outcome{Result: fmt.Sprint(i)})
		}
	}
	spans := e.spans.GetSpans()
	require.Len(t, spans, 5, "every span ended, including those that waited for a phase change")
	events := map[string][]string{}
	for _, s := range spans {
		id := attrs(s.Attributes)["gen_ai.tool.call.id"].(string)
		for _, ev := range s.Events {
			require.Equal(t, tgotel.PhaseChangeEvent, ev.Name)
			a := attrs(ev.Attributes)
			events[id] = append(events[id], fmt.Sprintf("%s->%s", a["toolguard.from_phase"], a["toolguard.to_phase"]))
			assert.Equal(t, s.EndTime, ev.Time)
		}
	}
	assert.Equal(t, map[string][]string{"c3": {"normal->nudge"}, "c4": {"nudge->wind_down"}, "c5": {"wind_down->exhausted"}}, events)

	last := spans[4]
	a := attrs(last.Attributes)
	assert.Equal(t, "abort", a["toolguard.verdict"])
	assert.Equal(t, "budget", a["toolguard.reason"])
	assert.Equal(t, map[string]int64{
		"toolguard.from_phase=normal,toolguard.to_phase=nudge":        1,
		"toolguard.from_phase=nudge,toolguard.to_phase=wind_down":     1,
		"toolguard.from_phase=wind_down,toolguard.to_phase=exhausted": 1,
	}, e.sums(t, "toolguard.phase_transitions"))

	// A new turn starts over.
	tr.Reset()
	c := call("n1", "poll", `{}`)
	require.False(t, tr.ShouldSkip(c).Skip())
	tr.Record(c, toolguard.Outcome{Result: "x"})
	spans = e.spans.GetSpans()
	require.Len(t, spans, 6)
	assert.Empty(t, spans[5].Events)
	assert.Equal(t, int64(2), attrs(spans[5].Attributes)["toolguard.turn"])
}

func TestParentFromContextFunc(t *testing.T) {
	var e *env
	var parent trace.Span
	ctxFor := func(ev toolguard.Event) context.Context {
		return trace.ContextWithSpan(context.Background(), parent)
	}
	e = newEnv(t, tgotel.WithContext(ctxFor))
	_, parent = e.tp.Tracer("harness").Start(context.Background(), "invoke_agent")

	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 1, OnEvent: e.obs.OnEvent})
	c := call("a", "read", `{"path":"x"}`)
	require.False(t, tr.ShouldSkip(c).Skip())
	tr.Record(c, toolguard.Outcome{Result: "x"})
	require.True(t, tr.ShouldSkip(call("b", "read", `{"path":"y"}`)).Skip())
	parent.End()

	spans := e.spans.GetSpans()
	require.Len(t, spans, 3)
	root := spans[2]
	require.Equal(t, "invoke_agent", root.Name)
	for _, s := range spans[:2] {
		assert.Equal(t, root.SpanContext.SpanID(), s.Parent.SpanID(), "%s is a child of the turn span", s.Name)
		assert.Equal(t, root.SpanContext.TraceID(), s.SpanContext.TraceID())
	}
	require.Len(t, spans[0].Events, 1, "the wind-down is an event of the call that caused it")
	assert.Empty(t, root.Events)
}

func TestPhaseChangeFallsBackToParent(t *testing.T) {
	var parent trace.Span
	e := newEnv(t, tgotel.WithContext(func(toolguard.Event) context.Context {
		return trace.ContextWithSpan(context.Background(), parent)
	}))
	_, parent = e.tp.Tracer("harness").Start(context.Background(), "invoke_agent")
	// A phase change whose call span is gone, as when another call's event
	// came between a Record and its phase change.
	e.obs.OnEvent(toolguard.Event{Kind: toolguard.EventPhase, Seq: 42, Turn: 1, Tool: "poll",
		From: toolguard.PhaseNormal, Phase: toolguard.PhaseNudge})
	parent.End()
	spans := e.spans.GetSpans()
	require.Len(t, spans, 1)
	require.Len(t, spans[0].Events, 1)
	assert.Equal(t, tgotel.PhaseChangeEvent, spans[0].Events[0].Name)
}

func TestFailedCall(t *testing.T) {
	e := newEnv(t)
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: e.obs.OnEvent})
	c := call("f", "bash", `{"cmd":"make"}`)
	require.False(t, tr.ShouldSkip(c).Skip())
	tr.Record(c, toolguard.Outcome{Err: errors.New("exit status 2")})
	spans := e.spans.GetSpans()
	require.Len(t, spans, 1)
	a := attrs(spans[0].Attributes)
	assert.Equal(t, "failed", a["toolguard.status"])
	assert.Equal(t, "tool_error", a["error.type"])
	assert.Equal(t, codes.Error, spans[0].Status.Code)
	for _, kv := range spans[0].Attributes {
		assert.NotContains(t, kv.Value.Emit(), "exit status", "no results or errors in spans")
		assert.NotContains(t, kv.Value.Emit(), "make")
	}
}

func TestRecordWithoutCheck(t *testing.T) {
	e := newEnv(t)
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: e.obs.OnEvent})
	tr.Record(call("u", "read", `{}`), toolguard.Outcome{Result: "x"})
	spans := e.spans.GetSpans()
	require.Len(t, spans, 1)
	assert.Equal(t, "execute_tool read", spans[0].Name)
	assert.Equal(t, "ok", attrs(spans[0].Attributes)["toolguard.status"])
}

func TestEvictionAndClose(t *testing.T) {
	e := newEnv(t, tgotel.WithMaxOpenSpans(2))
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: e.obs.OnEvent})
	var calls []toolguard.Call
	for i := 1; i <= 3; i++ {
		c := call(fmt.Sprintf("c%d", i), "read", fmt.Sprintf(`{"n":%d}`, i))
		require.False(t, tr.ShouldSkip(c).Skip())
		calls = append(calls, c)
	}
	spans := e.spans.GetSpans()
	require.Len(t, spans, 1, "the oldest open span is ended past the bound")
	assert.Equal(t, "c1", attrs(spans[0].Attributes)["gen_ai.tool.call.id"])
	assert.Equal(t, true, attrs(spans[0].Attributes)["toolguard.evicted"])

	tr.Record(calls[1], toolguard.Outcome{Result: "two"})
	spans = e.spans.GetSpans()
	require.Len(t, spans, 2)
	assert.Equal(t, "c2", attrs(spans[1].Attributes)["gen_ai.tool.call.id"])
	assert.NotContains(t, attrs(spans[1].Attributes), "toolguard.evicted")

	e.obs.Close()
	spans = e.spans.GetSpans()
	require.Len(t, spans, 3)
	assert.Equal(t, "c3", attrs(spans[2].Attributes)["gen_ai.tool.call.id"])
	assert.Equal(t, true, attrs(spans[2].Attributes)["toolguard.evicted"])
	e.obs.Close()
	assert.Len(t, e.spans.GetSpans(), 3)
}

func TestChain(t *testing.T) {
	var got []string
	a := func(toolguard.Event) { got = append(got, "a") }
	b := func(toolguard.Event) { got = append(got, "b") }
	assert.Nil(t, tgotel.Chain())
	assert.Nil(t, tgotel.Chain(nil, nil))
	tgotel.Chain(nil, a)(toolguard.Event{})
	tgotel.Chain(a, nil, b)(toolguard.Event{})
	assert.Equal(t, []string{"a", "a", "b"}, got)

	e := newEnv(t)
	n := 0
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: tgotel.Chain(func(toolguard.Event) { n++ }, e.obs.OnEvent)})
	c := call("x", "read", `{}`)
	tr.ShouldSkip(c)
	tr.Record(c, toolguard.Outcome{Result: "x"})
	assert.Equal(t, 2, n)
	assert.Len(t, e.spans.GetSpans(), 1)
}

func TestDefaultsAndNil(t *testing.T) {
	obs, err := tgotel.NewObserver(nil, tgotel.WithTracerProvider(nil), tgotel.WithMaxOpenSpans(-1))
	require.NoError(t, err)
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: obs.OnEvent})
	c := call("x", "read", `{}`)
	tr.ShouldSkip(c)
	tr.Record(c, toolguard.Outcome{Result: "x"})
	obs.Close()

	var none *tgotel.Observer
	none.OnEvent(toolguard.Event{})
	none.Close()
}

// TestConcurrentCalls runs the parallel calls of several turns through one
// Tracker and Observer; run it with -race.
func TestConcurrentCalls(t *testing.T) {
	for _, budget := range []int{-1, 60} {
		t.Run(fmt.Sprint("budget ", budget), func(t *testing.T) { concurrentCalls(t, budget) })
	}
}

func concurrentCalls(t *testing.T, budget int) {
	e := newEnv(t)
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: budget, OnEvent: e.obs.OnEvent})
	const workers, perWorker = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				c := call(fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("tool%d", i%3), fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))
				if d := tr.ShouldSkip(c); !d.Skip() {
					tr.Record(c, toolguard.Outcome{Result: fmt.Sprint(w, i)})
				}
			}
		}()
	}
	wg.Wait()
	e.obs.Close()
	spans := e.spans.GetSpans()
	assert.Len(t, spans, workers*perWorker)
	var total int64
	for _, v := range e.sums(t, "toolguard.calls") {
		total += v
	}
	assert.Equal(t, int64(workers*perWorker), total)
	events := 0
	for _, s := range spans {
		assert.NotContains(t, attrs(s.Attributes), "toolguard.evicted")
		events += len(s.Events)
	}
	if budget > 0 {
		assert.Len(t, e.sums(t, "toolguard.phase_transitions"), 3)
		assert.LessOrEqual(t, events, 3, "a phase change is on at most one span")
	}
}

// BenchmarkObserver measures a checked and recorded call with the Observer
// and an SDK tracer provider that samples every span, against the same call
// without a hook.
func BenchmarkObserver(b *testing.B) {
	for _, withObserver := range []bool{false, true} {
		b.Run(fmt.Sprint("observer=", withObserver), func(b *testing.B) {
			var p toolguard.Policy
			p.MaxCallsPerTurn = -1
			p.SessionLimit = -1
			p.MaxRepeats = -1
			if withObserver {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				b.Cleanup(func() {
					_ = tp.Shutdown(context.Background())
					_ = mp.Shutdown(context.Background())
				})
				obs, err := tgotel.NewObserver(tgotel.WithTracerProvider(tp), tgotel.WithMeterProvider(mp))
				require.NoError(b, err)
				p.OnEvent = obs.OnEvent
			}
			tr := toolguard.NewTracker(p)
			c := call("id", "read", `{"path":"/etc/hosts"}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tr.ShouldSkip(c)
				tr.Record(c, toolguard.Outcome{Result: "x"})
				if i%1024 == 0 {
					tr.Reset()
				}
			}
		})
	}
}
