package otelguard_test

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
	"github.com/toolguard/toolguard/otelguard"
)

// env is an Observer wired to in-memory exporters.
type env struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	obs    *otelguard.Observer
}

func newEnv(t *testing.T, opts ...otelguard.Option) *env {
	t.Helper()
	e := &env{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(e.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	t.Cleanup(func() {
		_ = e.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := otelguard.NewObserver(append([]otelguard.Option{
		otelguard.WithTracerProvider(e.tp), otelguard.WithMeterProvider(mp)}, opts...)...)
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
					parts = append(parts, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
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

// histogram returns the count and sum of the duration histogram's points,
// keyed like sums.
func (e *env) histogram(t *testing.T) map[string]uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, e.reader.Collect(context.Background(), &rm))
	out := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != otelguard.MetricExecuteToolDuration {
				continue
			}
			require.Equal(t, "s", m.Unit)
			h, ok := m.Data.(metricdata.Histogram[float64])
			require.True(t, ok)
			for _, dp := range h.DataPoints {
				var parts []string
				for _, kv := range dp.Attributes.ToSlice() {
					parts = append(parts, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
				}
				sort.Strings(parts)
				out[strings.Join(parts, ",")] = dp.Count
			}
		}
	}
	return out
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
		assert.Equal(t, trace.SpanKindInternal, s.SpanKind)
		assert.False(t, s.Parent.IsValid(), "a call without a span in its context gets a root span")
		a := attrs(s.Attributes)
		assert.Equal(t, "get_weather", a["gen_ai.tool.name"])
		assert.Equal(t, "function", a["gen_ai.tool.type"])
		assert.Equal(t, fmt.Sprintf("call_%d", i+1), a["gen_ai.tool.call.id"])
		assert.Equal(t, int64(1), a["toolguard.turn"])
	}
	for _, s := range spans[:2] {
		assert.Equal(t, "execute_tool get_weather", s.Name)
		a := attrs(s.Attributes)
		assert.Equal(t, "execute_tool", a["gen_ai.operation.name"])
		assert.Equal(t, "allow", a["toolguard.verdict"])
		assert.Equal(t, "ok", a["toolguard.status"])
		assert.Equal(t, codes.Unset, s.Status.Code)
		assert.False(t, s.EndTime.Before(s.StartTime))
	}
	assert.Equal(t, true, attrs(spans[0].Attributes)["toolguard.new_result"])
	assert.Equal(t, false, attrs(spans[1].Attributes)["toolguard.new_result"])

	hint, abort := spans[2], spans[3]
	for i, s := range []tracetest.SpanStub{hint, abort} {
		assert.Equal(t, "toolguard.skip get_weather", s.Name, "a skipped call is not an execute_tool span")
		a := attrs(s.Attributes)
		assert.NotContains(t, a, "gen_ai.operation.name")
		assert.Equal(t, []string{"hint", "abort"}[i], a["toolguard.verdict"])
		assert.Equal(t, "duplicate", a["toolguard.reason"])
		assert.NotContains(t, a, "toolguard.status")
		assert.Equal(t, s.StartTime, s.EndTime, "a skipped call's span has no length")
	}
	assert.Equal(t, codes.Unset, hint.Status.Code, "a hint is not an error")
	assert.Equal(t, codes.Error, abort.Status.Code)
	assert.Contains(t, abort.Status.Description, "abort: duplicate")
	assert.Equal(t, "toolguard.duplicate", attrs(abort.Attributes)["error.type"])

	assert.Equal(t, map[string]int64{
		"gen_ai.tool.name=get_weather,toolguard.verdict=allow": 2,
		"gen_ai.tool.name=get_weather,toolguard.verdict=hint":  1,
		"gen_ai.tool.name=get_weather,toolguard.verdict=abort": 1,
	}, e.sums(t, "toolguard.calls"))
	assert.Equal(t, map[string]int64{
		"gen_ai.tool.name=get_weather,toolguard.reason=duplicate": 2,
	}, e.sums(t, "toolguard.skips"))
	assert.Equal(t, map[string]uint64{
		"gen_ai.operation.name=execute_tool,gen_ai.tool.name=get_weather,gen_ai.tool.type=function": 2,
	}, e.histogram(t), "only the calls that ran have a duration")
	assert.Empty(t, e.sums(t, "toolguard.phase_transitions"))
}

// Spans and metrics carry the GenAI conventions' own schema URL, not a
// core semantic conventions schema (whose GenAI attributes are deprecated).
func TestSchemaURL(t *testing.T) {
	assert.Equal(t, "https://opentelemetry.io/schemas/gen-ai-dev/1.42.0-dev", otelguard.SchemaURL)
	e := newEnv(t)
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: e.obs.OnEvent})
	c := call("call_1", "get_weather", `{"city":"Paris"}`)
	require.False(t, tr.ShouldSkip(c).Skip())
	tr.Record(c, toolguard.Outcome{Result: "sunny"})

	spans := e.spans.GetSpans()
	require.Len(t, spans, 1)
	assert.Equal(t, otelguard.SchemaURL, spans[0].InstrumentationScope.SchemaURL)
	var rm metricdata.ResourceMetrics
	require.NoError(t, e.reader.Collect(context.Background(), &rm))
	require.NotEmpty(t, rm.ScopeMetrics)
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, otelguard.SchemaURL, sm.Scope.SchemaURL)
	}
}

func TestSpansHangUnderTheCallsContext(t *testing.T) {
	e := newEnv(t)
	ctx, turn := e.tp.Tracer("harness").Start(context.Background(), "invoke_agent")
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 4, OnEvent: e.obs.OnEvent})
	for i := 1; i <= 5; i++ {
		c := call(fmt.Sprintf("c%d", i), "poll", `{}`)
		if d := tr.ShouldSkipContext(ctx, c); !d.Skip() {
			tr.RecordContext(ctx, c, toolguard.Outcome{Result: fmt.Sprint(i)})
		}
	}
	turn.End()
	spans := e.spans.GetSpans()
	require.Len(t, spans, 6)
	root := spans[5]
	require.Equal(t, "invoke_agent", root.Name)
	for _, s := range spans[:5] {
		assert.Equal(t, root.SpanContext.SpanID(), s.Parent.SpanID(), "%s is a child of the turn's span", s.Name)
		assert.Equal(t, root.SpanContext.TraceID(), s.SpanContext.TraceID())
	}
	assert.Equal(t, "toolguard.skip poll", spans[4].Name)
	assert.Equal(t, "budget", attrs(spans[4].Attributes)["toolguard.reason"])

	var changes []string
	for _, ev := range root.Events {
		require.Equal(t, otelguard.PhaseChangeEvent, ev.Name)
		a := attrs(ev.Attributes)
		changes = append(changes, fmt.Sprintf("%s->%s", a["toolguard.from_phase"], a["toolguard.to_phase"]))
	}
	assert.Equal(t, []string{"normal->nudge", "nudge->wind_down", "wind_down->exhausted"}, changes,
		"phase changes are events of the turn's span")
	assert.Equal(t, map[string]int64{
		"toolguard.from_phase=normal,toolguard.to_phase=nudge":        1,
		"toolguard.from_phase=nudge,toolguard.to_phase=wind_down":     1,
		"toolguard.from_phase=wind_down,toolguard.to_phase=exhausted": 1,
	}, e.sums(t, "toolguard.phase_transitions"))
	assert.Equal(t, "nudge", attrs(spans[2].Attributes)["toolguard.phase"], "the call that raised the phase")
}

func TestWithContextReplacesTheCallsContext(t *testing.T) {
	var parent trace.Span
	e := newEnv(t, otelguard.WithContext(func(toolguard.Event) context.Context {
		return trace.ContextWithSpan(context.Background(), parent)
	}))
	_, parent = e.tp.Tracer("harness").Start(context.Background(), "session")
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: e.obs.OnEvent})
	c := call("a", "read", `{"path":"x"}`)
	require.False(t, tr.ShouldSkip(c).Skip())
	tr.Record(c, toolguard.Outcome{Result: "x"})
	parent.End()
	spans := e.spans.GetSpans()
	require.Len(t, spans, 2)
	assert.Equal(t, spans[1].SpanContext.SpanID(), spans[0].Parent.SpanID())
}

func TestAnnotatesTheFrameworksToolSpan(t *testing.T) {
	e := newEnv(t, otelguard.WithToolSpanFromContext())
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: e.obs.OnEvent})
	framework := e.tp.Tracer("framework")
	// The framework runs each tool under its own execute_tool span.
	run := func(id string) {
		ctx, span := framework.Start(context.Background(), "execute_tool get_weather")
		defer span.End()
		c := call(id, "get_weather", `{"city":"Paris"}`)
		if d := tr.ShouldSkipContext(ctx, c); !d.Skip() {
			tr.RecordContext(ctx, c, toolguard.Outcome{Result: "sunny"})
		}
	}
	for i := 1; i <= 4; i++ {
		run(fmt.Sprintf("call_%d", i))
	}
	spans := e.spans.GetSpans()
	require.Len(t, spans, 4, "one span per call: the framework's")
	want := []struct{ verdict, status string }{{"allow", "ok"}, {"allow", "ok"}, {"hint", ""}, {"abort", ""}}
	for i, s := range spans {
		assert.Equal(t, "framework", s.InstrumentationScope.Name)
		a := attrs(s.Attributes)
		assert.Equal(t, want[i].verdict, a["toolguard.verdict"])
		if want[i].status != "" {
			assert.Equal(t, want[i].status, a["toolguard.status"])
		} else {
			assert.Equal(t, "duplicate", a["toolguard.reason"])
		}
	}
	assert.Equal(t, codes.Error, spans[3].Status.Code)

	// Without a recording span in the context, the Observer makes its own.
	c := call("x", "read", `{}`)
	tr.ShouldSkip(c)
	tr.Record(c, toolguard.Outcome{Result: "x"})
	spans = e.spans.GetSpans()
	require.Len(t, spans, 5)
	assert.Equal(t, otelguard.ScopeName, spans[4].InstrumentationScope.Name)
}

func TestToolInfoAndAgentName(t *testing.T) {
	e := newEnv(t, otelguard.WithAgentName("support-bot"), otelguard.WithToolInfo(func(tool string) (string, string) {
		if tool == "search_docs" {
			return otelguard.ToolTypeDatastore, "Searches the product docs."
		}
		return "", ""
	}))
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: e.obs.OnEvent})
	for _, c := range []toolguard.Call{call("1", "search_docs", `{"query":"refund"}`), call("2", "send_mail", `{}`)} {
		tr.ShouldSkip(c)
		tr.Record(c, toolguard.Outcome{Result: "r"})
	}
	spans := e.spans.GetSpans()
	require.Len(t, spans, 2)
	a := attrs(spans[0].Attributes)
	assert.Equal(t, "datastore", a["gen_ai.tool.type"])
	assert.Equal(t, "Searches the product docs.", a["gen_ai.tool.description"])
	assert.Equal(t, "support-bot", a["gen_ai.agent.name"])
	b := attrs(spans[1].Attributes)
	assert.Equal(t, "function", b["gen_ai.tool.type"])
	assert.NotContains(t, b, "gen_ai.tool.description")
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
		assert.NotContains(t, kv.Value.String(), "exit status", "no results or errors in spans")
		assert.NotContains(t, kv.Value.String(), "make")
	}
	assert.Equal(t, map[string]uint64{
		"error.type=tool_error,gen_ai.operation.name=execute_tool,gen_ai.tool.name=bash,gen_ai.tool.type=function": 1,
	}, e.histogram(t))
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

// TestOneObserverManyTrackers is the MCP sessions wiring: one Policy, so
// one Observer, for the trackers of many sessions, whose calls run at the
// same time and have the same ledger numbers. Every call must get exactly
// its own span.
func TestOneObserverManyTrackers(t *testing.T) {
	e := newEnv(t)
	policy := toolguard.Policy{OnEvent: e.obs.OnEvent}
	const sessions, perSession = 4, 100
	var wg sync.WaitGroup
	for s := 0; s < sessions; s++ {
		tr := toolguard.NewTracker(policy)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inFlight []toolguard.Call
			for i := 0; i < perSession; i++ {
				c := call(fmt.Sprintf("s%d-%d", s, i), "read", fmt.Sprintf(`{"n":%d}`, i))
				require.False(t, tr.ShouldSkip(c).Skip())
				inFlight = append(inFlight, c)
				if len(inFlight) == 3 { // a few calls open at once, recorded out of order
					for j := len(inFlight) - 1; j >= 0; j-- {
						tr.Record(inFlight[j], toolguard.Outcome{Result: inFlight[j].ID})
					}
					inFlight = inFlight[:0]
				}
			}
			for _, c := range inFlight {
				tr.Record(c, toolguard.Outcome{Result: c.ID})
			}
		}()
	}
	wg.Wait()
	spans := e.spans.GetSpans()
	seen := map[string]int{}
	for _, s := range spans {
		a := attrs(s.Attributes)
		seen[a["gen_ai.tool.call.id"].(string)]++
		assert.Equal(t, "ok", a["toolguard.status"], "%s was recorded", s.Name)
		assert.NotContains(t, a, "toolguard.evicted")
	}
	assert.Len(t, spans, sessions*perSession)
	for s := 0; s < sessions; s++ {
		for i := 0; i < perSession; i++ {
			assert.Equal(t, 1, seen[fmt.Sprintf("s%d-%d", s, i)], "one span for s%d-%d", s, i)
		}
	}
}

func TestChain(t *testing.T) {
	var got []string
	a := func(toolguard.Event) { got = append(got, "a") }
	b := func(toolguard.Event) { got = append(got, "b") }
	assert.Nil(t, otelguard.Chain())
	assert.Nil(t, otelguard.Chain(nil, nil))
	otelguard.Chain(nil, a)(toolguard.Event{})
	otelguard.Chain(a, nil, b)(toolguard.Event{})
	assert.Equal(t, []string{"a", "a", "b"}, got)

	e := newEnv(t)
	n := 0
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: otelguard.Chain(func(toolguard.Event) { n++ }, e.obs.OnEvent)})
	c := call("x", "read", `{}`)
	tr.ShouldSkip(c)
	tr.Record(c, toolguard.Outcome{Result: "x"})
	assert.Equal(t, 2, n)
	assert.Len(t, e.spans.GetSpans(), 1)
}

func TestDefaultsAndNil(t *testing.T) {
	obs, err := otelguard.NewObserver(nil, otelguard.WithTracerProvider(nil), otelguard.WithContext(func(toolguard.Event) context.Context { return nil }))
	require.NoError(t, err)
	tr := toolguard.NewTracker(toolguard.Policy{OnEvent: obs.OnEvent})
	c := call("x", "read", `{}`)
	tr.ShouldSkip(c)
	tr.Record(c, toolguard.Outcome{Result: "x"})
	obs.OnEvent(toolguard.Event{Kind: toolguard.EventRecord}) // no context at all

	var none *otelguard.Observer
	none.OnEvent(toolguard.Event{})
}

// TestConcurrentCalls runs the parallel calls of several turns through one
// Tracker and Observer; run it with -race.
func TestConcurrentCalls(t *testing.T) {
	e := newEnv(t)
	tr := toolguard.NewTracker(toolguard.Policy{MaxCallsPerTurn: 60, OnEvent: e.obs.OnEvent})
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
	assert.Len(t, e.spans.GetSpans(), workers*perWorker)
	var total int64
	for _, v := range e.sums(t, "toolguard.calls") {
		total += v
	}
	assert.Equal(t, int64(workers*perWorker), total)
	assert.Len(t, e.sums(t, "toolguard.phase_transitions"), 3)
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
				obs, err := otelguard.NewObserver(otelguard.WithTracerProvider(tp), otelguard.WithMeterProvider(mp))
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
