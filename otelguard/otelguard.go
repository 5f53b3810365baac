// Package otelguard records what a toolguard.Tracker decides as
// OpenTelemetry spans and metrics, with the names of the GenAI semantic
// conventions (see GenAIConventionsVersion).
//
// An Observer plugs into Policy.OnEvent:
//
//	obs, err := otelguard.NewObserver(otelguard.WithTracerProvider(tp), otelguard.WithMeterProvider(mp))
//	if err != nil {
//		return err
//	}
//	policy.OnEvent = otelguard.Chain(policy.OnEvent, obs.OnEvent) // keeps an existing hook
//	tracker := toolguard.NewTracker(policy)
//
// One Observer serves any number of Trackers, as when one Policy is shared
// by the trackers of many sessions: it keeps no state between events, so
// the calls of different trackers never mix.
//
// # Spans
//
// A call that ran gets a span that follows the conventions for tool
// execution: it is named "execute_tool {tool}", has kind Internal, runs
// from the call's check to its Record (the Record's time minus
// Event.Duration), and has gen_ai.operation.name ("execute_tool"),
// gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.type (WithToolInfo;
// "function" unless set), gen_ai.tool.description (WithToolInfo) and
// gen_ai.agent.name (WithAgentName), plus toolguard.verdict ("allow"),
// toolguard.status ("ok" or "failed"), toolguard.new_result,
// toolguard.phase (the turn's phase after the call) and toolguard.turn. A
// failed call has an error status and error.type "tool_error".
//
// A skipped call (Hint or Abort) did not run, so it gets no execute_tool
// span: it gets a zero-length span named "toolguard.skip {tool}" with the
// same gen_ai.tool.* attributes, toolguard.verdict, toolguard.reason (such
// as "duplicate"), toolguard.phase and toolguard.turn. An aborted call's
// span has an error status and error.type "toolguard.{reason}"; a hint's
// has none (the guard did its job).
//
// A span's parent is the span in the call's context (Event.Context: the
// context given to ShouldSkipContext, RecordContext, Run or RunRound),
// so tool spans hang under the harness's span for the agent turn. WithContext
// replaces that context.
//
// Where the framework already records an execute_tool span for each tool
// call and runs the tool under it (anthropic-sdk-go's tool runner does),
// WithToolSpanFromContext makes the Observer annotate that span with the
// toolguard.* attributes instead of creating its own, so each call has one
// span.
//
// A phase change (the nudge, the wind-down, exhaustion) is a span event
// named "toolguard.phase_change", with toolguard.from_phase and
// toolguard.to_phase, on the recording span of the call's context.
//
// # Metrics
//
//	gen_ai.execute_tool.duration s            histogram of calls that ran, by gen_ai.operation.name, gen_ai.tool.name, gen_ai.tool.type and error.type
//	toolguard.calls              {call}       every checked call, by gen_ai.tool.name and toolguard.verdict
//	toolguard.skips              {call}       every skipped call, by gen_ai.tool.name and toolguard.reason
//	toolguard.phase_transitions  {transition} every phase change, by toolguard.from_phase and toolguard.to_phase
//
// Tool names come from the model; the SDK's cardinality limit bounds the
// attribute sets a model inventing names can create.
//
// # Concurrency
//
// The Tracker calls its hook outside its lock, from the goroutines that
// call ShouldSkip and Record, so OnEvent may run concurrently: it is safe
// for that, and holds no lock of its own.
//
// Events carry no arguments or results, so neither do spans or metrics.
package otelguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	otelglobal "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard"
)

// ScopeName is the instrumentation scope of the Observer's tracer and meter.
const ScopeName = "github.com/toolguard/toolguard/otelguard"

// Attribute keys the Observer sets besides the GenAI ones.
const (
	AttrVerdict   = attribute.Key("toolguard.verdict")
	AttrReason    = attribute.Key("toolguard.reason")
	AttrPhase     = attribute.Key("toolguard.phase")
	AttrTurn      = attribute.Key("toolguard.turn")
	AttrStatus    = attribute.Key("toolguard.status")
	AttrNewResult = attribute.Key("toolguard.new_result")
	AttrFromPhase = attribute.Key("toolguard.from_phase")
	AttrToPhase   = attribute.Key("toolguard.to_phase")
)

// PhaseChangeEvent is the name of the span event of a phase change.
const PhaseChangeEvent = "toolguard.phase_change"

// SkipSpanName is the name of a skipped call's span, before the tool name.
const SkipSpanName = "toolguard.skip"

// Option configures an Observer.
type Option func(*config)

type config struct {
	tp        trace.TracerProvider
	mp        metric.MeterProvider
	ctx       func(toolguard.Event) context.Context
	toolInfo  func(tool string) (toolType, description string)
	agent     string
	annotate  bool
	durations []float64
}

// WithTracerProvider sets the tracer provider. Without it, or with nil, the
// global provider (go.opentelemetry.io/otel.GetTracerProvider) is used.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the meter provider. Without it, or with nil, the
// global provider (go.opentelemetry.io/otel.GetMeterProvider) is used.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithContext sets the function that gives an event its context — the
// parent of the event's span and the context of its measurements — in
// place of Event.Context. f is called for every event and must be safe for
// concurrent use; a nil result means Event.Context.
func WithContext(f func(toolguard.Event) context.Context) Option {
	return func(c *config) { c.ctx = f }
}

// WithToolInfo sets the function that gives a tool's gen_ai.tool.type
// (ToolTypeFunction, ToolTypeExtension, ToolTypeDatastore) and
// gen_ai.tool.description. An empty type means ToolTypeFunction; an empty
// description is left out. f must be safe for concurrent use.
func WithToolInfo(f func(tool string) (toolType, description string)) Option {
	return func(c *config) { c.toolInfo = f }
}

// WithAgentName sets gen_ai.agent.name on every span.
func WithAgentName(name string) Option {
	return func(c *config) { c.agent = name }
}

// WithToolSpanFromContext makes the Observer annotate the recording span of
// the call's context — the framework's own execute_tool span, under which
// it runs the tool — instead of creating a span: the decision adds
// toolguard.verdict, toolguard.reason, toolguard.phase and toolguard.turn
// (and for an abort, error.type and an error status), the Record adds
// toolguard.status and toolguard.new_result. A call whose context holds no
// recording span gets the Observer's own span, as without this option.
func WithToolSpanFromContext() Option {
	return func(c *config) { c.annotate = true }
}

// WithDurationBuckets sets the bucket boundaries, in seconds, of the
// gen_ai.execute_tool.duration histogram. Without it the Observer uses
// boundaries from 10 ms to 5 min, sized for tool calls.
func WithDurationBuckets(bounds ...float64) Option {
	return func(c *config) { c.durations = bounds }
}

// defaultDurationBuckets span tool calls from a quick lookup to a long
// build, in seconds.
var defaultDurationBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Observer turns toolguard events into spans and metrics. Create it with
// NewObserver and set its OnEvent method as Policy.OnEvent.
type Observer struct {
	tracer      trace.Tracer
	duration    metric.Float64Histogram
	calls       metric.Int64Counter
	skips       metric.Int64Counter
	transitions metric.Int64Counter
	ctx         func(toolguard.Event) context.Context
	toolInfo    func(string) (string, string)
	agent       string
	annotate    bool
}

// NewObserver returns an Observer with the given options. It fails only
// when the meter refuses to create an instrument.
func NewObserver(opts ...Option) (*Observer, error) {
	var c config
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	if c.tp == nil {
		c.tp = otelglobal.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otelglobal.GetMeterProvider()
	}
	if c.durations == nil {
		c.durations = defaultDurationBuckets
	}
	meter := c.mp.Meter(ScopeName, metric.WithSchemaURL(SchemaURL))
	duration, err0 := meter.Float64Histogram(MetricExecuteToolDuration,
		metric.WithDescription("Duration of tool calls that ran, from the check to the Record."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(c.durations...))
	calls, err1 := meter.Int64Counter("toolguard.calls",
		metric.WithDescription("Tool calls checked by toolguard, by tool and verdict."),
		metric.WithUnit("{call}"))
	skips, err2 := meter.Int64Counter("toolguard.skips",
		metric.WithDescription("Tool calls toolguard skipped (hint or abort), by tool and reason."),
		metric.WithUnit("{call}"))
	transitions, err3 := meter.Int64Counter("toolguard.phase_transitions",
		metric.WithDescription("Changes of a turn's budget phase, by the phase before and after."),
		metric.WithUnit("{transition}"))
	if err := errors.Join(err0, err1, err2, err3); err != nil {
		return nil, fmt.Errorf("otelguard: creating instruments: %w", err)
	}
	return &Observer{
		tracer:      c.tp.Tracer(ScopeName, trace.WithSchemaURL(SchemaURL)),
		duration:    duration,
		calls:       calls,
		skips:       skips,
		transitions: transitions,
		ctx:         c.ctx,
		toolInfo:    c.toolInfo,
		agent:       c.agent,
		annotate:    c.annotate,
	}, nil
}

// Chain returns a hook that calls each non-nil hook in order, such as an
// existing Policy.OnEvent and an Observer's OnEvent. It returns nil when
// every hook is nil.
func Chain(hooks ...func(toolguard.Event)) func(toolguard.Event) {
	var hs []func(toolguard.Event)
	for _, h := range hooks {
		if h != nil {
			hs = append(hs, h)
		}
	}
	switch len(hs) {
	case 0:
		return nil
	case 1:
		return hs[0]
	}
	return func(ev toolguard.Event) {
		for _, h := range hs {
			h(ev)
		}
	}
}

// OnEvent records one event. Set it as Policy.OnEvent (or Chain it with
// another hook). It is safe for concurrent use, by any number of Trackers.
func (o *Observer) OnEvent(ev toolguard.Event) {
	if o == nil {
		return
	}
	ctx := ev.Context
	if o.ctx != nil {
		if c := o.ctx(ev); c != nil {
			ctx = c
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	switch ev.Kind {
	case toolguard.EventDecision:
		o.decision(ctx, ev)
	case toolguard.EventRecord:
		o.record(ctx, ev)
	case toolguard.EventPhase:
		o.phaseChange(ctx, ev)
	}
}

// toolSpan returns the framework's tool span in ctx when the Observer
// annotates it, or nil.
func (o *Observer) toolSpan(ctx context.Context) trace.Span {
	if !o.annotate {
		return nil
	}
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		return s
	}
	return nil
}

func (o *Observer) decision(ctx context.Context, ev toolguard.Event) {
	d := ev.Decision
	o.calls.Add(ctx, 1, metric.WithAttributes(
		AttrToolName.String(ev.Tool), AttrVerdict.String(d.Verdict.String())))
	if !d.Skip() {
		if s := o.toolSpan(ctx); s != nil {
			s.SetAttributes(AttrVerdict.String(d.Verdict.String()), AttrReason.String(d.Reason.String()),
				AttrPhase.String(ev.Phase.String()), AttrTurn.Int(ev.Turn))
		}
		return // the call's span is made at its Record
	}
	o.skips.Add(ctx, 1, metric.WithAttributes(
		AttrToolName.String(ev.Tool), AttrReason.String(d.Reason.String())))

	attrs := []attribute.KeyValue{
		AttrVerdict.String(d.Verdict.String()),
		AttrReason.String(d.Reason.String()),
		AttrPhase.String(ev.Phase.String()),
		AttrTurn.Int(ev.Turn),
	}
	span := o.toolSpan(ctx)
	if span != nil {
		span.SetAttributes(attrs...)
	} else {
		now := time.Now()
		_, span = o.tracer.Start(ctx, spanName(SkipSpanName, ev.Tool),
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(now),
			trace.WithAttributes(o.toolAttrs(ev)...),
			trace.WithAttributes(attrs...))
		defer span.End(trace.WithTimestamp(now))
	}
	if d.Verdict == toolguard.Abort {
		span.SetAttributes(AttrErrorType.String("toolguard." + d.Reason.String()))
		span.SetStatus(codes.Error, fmt.Sprintf("toolguard: call not executed (%s: %s)", d.Verdict, d.Reason))
	}
}

func (o *Observer) record(ctx context.Context, ev toolguard.Event) {
	failed := ev.Failed
	toolType, _ := o.info(ev.Tool)
	measure := []attribute.KeyValue{
		AttrOperationName.String(OperationExecuteTool),
		AttrToolName.String(ev.Tool),
		AttrToolType.String(toolType),
	}
	if failed {
		measure = append(measure, AttrErrorType.String("tool_error"))
	}
	o.duration.Record(ctx, ev.Duration.Seconds(), metric.WithAttributes(measure...))

	attrs := []attribute.KeyValue{
		AttrStatus.String(recordStatus(failed)),
		AttrNewResult.Bool(ev.NewResult),
	}
	span := o.toolSpan(ctx)
	if span == nil {
		now := time.Now()
		_, span = o.tracer.Start(ctx, spanName(OperationExecuteTool, ev.Tool),
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(now.Add(-ev.Duration)),
			trace.WithAttributes(o.toolAttrs(ev)...),
			trace.WithAttributes(
				AttrVerdict.String(toolguard.Allow.String()),
				AttrPhase.String(ev.Phase.String()),
				AttrTurn.Int(ev.Turn)))
		defer span.End(trace.WithTimestamp(now))
	}
	span.SetAttributes(attrs...)
	if failed {
		span.SetAttributes(AttrErrorType.String("tool_error"))
		span.SetStatus(codes.Error, "tool call failed")
	}
}

func (o *Observer) phaseChange(ctx context.Context, ev toolguard.Event) {
	o.transitions.Add(ctx, 1, metric.WithAttributes(
		AttrFromPhase.String(ev.From.String()), AttrToPhase.String(ev.Phase.String())))
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.AddEvent(PhaseChangeEvent, trace.WithAttributes(
			AttrFromPhase.String(ev.From.String()), AttrToPhase.String(ev.Phase.String()),
			AttrToolName.String(ev.Tool), AttrTurn.Int(ev.Turn)))
	}
}

// info returns a tool's type and description.
func (o *Observer) info(tool string) (toolType, description string) {
	if o.toolInfo != nil {
		toolType, description = o.toolInfo(tool)
	}
	if toolType == "" {
		toolType = ToolTypeFunction
	}
	return toolType, description
}

// toolAttrs are the gen_ai.* attributes of a call's span.
func (o *Observer) toolAttrs(ev toolguard.Event) []attribute.KeyValue {
	toolType, description := o.info(ev.Tool)
	attrs := make([]attribute.KeyValue, 0, 6)
	if ev.Kind == toolguard.EventRecord {
		attrs = append(attrs, AttrOperationName.String(OperationExecuteTool))
	}
	attrs = append(attrs, AttrToolName.String(ev.Tool), AttrToolType.String(toolType))
	if ev.CallID != "" {
		attrs = append(attrs, AttrToolCallID.String(ev.CallID))
	}
	if description != "" {
		attrs = append(attrs, AttrToolDescription.String(description))
	}
	if o.agent != "" {
		attrs = append(attrs, AttrAgentName.String(o.agent))
	}
	return attrs
}

// spanName is "{prefix} {tool}", or prefix for a call without a tool name.
func spanName(prefix, tool string) string {
	if tool == "" {
		return prefix
	}
	return prefix + " " + tool
}

// recordStatus is the toolguard.status of a record: "ok" or "failed".
func recordStatus(failed bool) string {
	if failed {
		return "failed"
	}
	return "ok"
}
