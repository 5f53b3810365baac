// Package otel records what a toolguard.Tracker decides as OpenTelemetry
// spans and metrics.
//
// An Observer plugs into Policy.OnEvent:
//
//	obs, err := otel.NewObserver(otel.WithTracerProvider(tp), otel.WithMeterProvider(mp))
//	if err != nil {
//		return err
//	}
//	policy.OnEvent = otel.Chain(policy.OnEvent, obs.OnEvent) // keeps an existing hook
//	tracker := toolguard.NewTracker(policy)
//
// Use one Observer per Tracker: an Observer matches the events of a call by
// their Seq, which counts per Tracker. Creating one is cheap; the SDK hands
// out the same instruments for the same names.
//
// # Spans
//
// Every checked call gets a span that follows the OpenTelemetry semantic
// conventions for generative AI: it is named "execute_tool {tool}", has
// kind Internal and the attributes gen_ai.operation.name ("execute_tool"),
// gen_ai.tool.name and gen_ai.tool.call.id, plus toolguard.verdict
// ("allow", "hint", "abort"), toolguard.reason (such as "duplicate"),
// toolguard.phase (the turn's phase at the check) and toolguard.turn.
//
// An allowed call's span starts at the decision and ends at the call's
// Record, which adds toolguard.status ("ok" or "failed") and
// toolguard.new_result; a failed call gets an error status and error.type
// "tool_error". A skipped call (Hint or Abort) gets a zero-length span
// with an error status whose description names the verdict and reason,
// and error.type "toolguard.{reason}". A Record without an open span (a
// call that was never checked) gets a span of its own, from the Record's
// time minus the event's Duration to the Record.
//
// The Observer holds at most WithMaxOpenSpans spans open (4096 unless
// set): past that it ends the oldest one with toolguard.evicted = true. A
// call still running when the Tracker is Reset gets no Record event, so
// its span stays open until evicted or until Close.
//
// A phase change (the nudge, the wind-down, exhaustion) is a span event
// named "toolguard.phase_change", with toolguard.from_phase and
// toolguard.to_phase, on the span of the call whose Record changed the
// phase. When that span is no longer open (only possible when calls of a
// turn are recorded concurrently), the event goes on the recording span
// of the context from WithContext, if there is one.
//
// Spans are roots unless a context function is given: WithContext(f) makes
// f(event) the parent context of the event's span, so a harness can hang
// the tool spans under its own span for the agent turn.
//
// # Metrics
//
// Three counters, documented in the module's README:
//
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
// for that, and it calls into the OpenTelemetry SDK (span processors,
// exporters) without holding its own lock.
//
// Events carry no arguments or results, so neither do spans or metrics.
package otel

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	otelglobal "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard"
)

// ScopeName is the instrumentation scope of the Observer's tracer and meter.
const ScopeName = "github.com/toolguard/toolguard/otelguard"

// DefaultMaxOpenSpans is the number of spans of allowed calls an Observer
// keeps open at most when WithMaxOpenSpans is not given.
const DefaultMaxOpenSpans = 4096

// Attribute keys the Observer sets besides the GenAI ones.
const (
	AttrVerdict   = attribute.Key("toolguard.verdict")
	AttrReason    = attribute.Key("toolguard.reason")
	AttrPhase     = attribute.Key("toolguard.phase")
	AttrTurn      = attribute.Key("toolguard.turn")
	AttrStatus    = attribute.Key("toolguard.status")
	AttrNewResult = attribute.Key("toolguard.new_result")
	AttrEvicted   = attribute.Key("toolguard.evicted")
	AttrFromPhase = attribute.Key("toolguard.from_phase")
	AttrToPhase   = attribute.Key("toolguard.to_phase")
)

// PhaseChangeEvent is the name of the span event of a phase change.
const PhaseChangeEvent = "toolguard.phase_change"

// Option configures an Observer.
type Option func(*config)

type config struct {
	tp      trace.TracerProvider
	mp      metric.MeterProvider
	ctx     func(toolguard.Event) context.Context
	maxOpen int
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

// WithContext sets the function that gives an event its context: the
// parent of the event's span, the context of its measurements, and the
// span that receives a phase change when the call's span is gone. Without
// it, or with nil, spans are roots. f is called for every event, outside
// the Observer's lock, and must be safe for concurrent use.
func WithContext(f func(toolguard.Event) context.Context) Option {
	return func(c *config) { c.ctx = f }
}

// WithMaxOpenSpans bounds the spans of allowed calls that wait for their
// Record. n < 1 means DefaultMaxOpenSpans.
func WithMaxOpenSpans(n int) Option {
	return func(c *config) { c.maxOpen = n }
}

// Observer turns toolguard events into spans and metrics. Create it with
// NewObserver and set its OnEvent method as Policy.OnEvent.
type Observer struct {
	tracer      trace.Tracer
	calls       metric.Int64Counter
	skips       metric.Int64Counter
	transitions metric.Int64Counter
	ctx         func(toolguard.Event) context.Context
	maxOpen     int

	mu        sync.Mutex
	open      map[uint64]*list.Element // of *openSpan, by Seq
	order     list.List                // open spans, oldest first
	finishing []*openSpan              // recorded, waiting for their phase change
	turn      int                      // the latest turn seen
	phase     toolguard.Phase          // the highest phase recorded in turn
}

// openSpan is the span of an allowed call between its decision and its end.
type openSpan struct {
	seq  uint64
	span trace.Span
	end  time.Time // set once recorded
}

// NewObserver returns an Observer with the given options. It fails only
// when the meter refuses to create a counter.
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
	if c.maxOpen < 1 {
		c.maxOpen = DefaultMaxOpenSpans
	}
	meter := c.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	calls, err1 := meter.Int64Counter("toolguard.calls",
		metric.WithDescription("Tool calls checked by toolguard, by tool and verdict."),
		metric.WithUnit("{call}"))
	skips, err2 := meter.Int64Counter("toolguard.skips",
		metric.WithDescription("Tool calls toolguard skipped (hint or abort), by tool and reason."),
		metric.WithUnit("{call}"))
	transitions, err3 := meter.Int64Counter("toolguard.phase_transitions",
		metric.WithDescription("Changes of a turn's budget phase, by the phase before and after."),
		metric.WithUnit("{transition}"))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("otel: creating counters: %w", err)
	}
	return &Observer{
		tracer:      c.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		calls:       calls,
		skips:       skips,
		transitions: transitions,
		ctx:         c.ctx,
		maxOpen:     c.maxOpen,
		open:        make(map[uint64]*list.Element),
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
// another hook). It is safe for concurrent use.
func (o *Observer) OnEvent(ev toolguard.Event) {
	if o == nil {
		return
	}
	ctx := context.Background()
	if o.ctx != nil {
		if c := o.ctx(ev); c != nil {
			ctx = c
		}
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

// Close ends the spans still open, with toolguard.evicted = true: calls
// that were never recorded. The Observer stays usable.
func (o *Observer) Close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	var spans []*openSpan
	for e := o.order.Front(); e != nil; e = e.Next() {
		spans = append(spans, e.Value.(*openSpan))
	}
	o.order.Init()
	clear(o.open)
	finishing := o.finishing
	o.finishing = nil
	o.mu.Unlock()
	endFinished(finishing)
	for _, s := range spans {
		evict(s)
	}
}

func (o *Observer) decision(ctx context.Context, ev toolguard.Event) {
	d := ev.Decision
	o.calls.Add(ctx, 1, metric.WithAttributes(
		semconv.GenAIToolName(ev.Tool), AttrVerdict.String(d.Verdict.String())))
	if d.Skip() {
		o.skips.Add(ctx, 1, metric.WithAttributes(
			semconv.GenAIToolName(ev.Tool), AttrReason.String(d.Reason.String())))
	}

	attrs := o.callAttrs(ev, d, ev.Phase)
	if d.Skip() {
		now := time.Now()
		_, span := o.tracer.Start(ctx, spanName(ev.Tool),
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(now),
			trace.WithAttributes(attrs...),
			trace.WithAttributes(semconv.ErrorTypeKey.String("toolguard."+d.Reason.String())))
		span.SetStatus(codes.Error, fmt.Sprintf("toolguard: call not executed (%s: %s)", d.Verdict, d.Reason))
		if d.Reason == toolguard.ReasonBudget && ev.Phase == toolguard.PhaseExhausted {
			// A refusal after the wind-down may exhaust the turn: its
			// EventPhase comes next, so keep the span open for it.
			o.mu.Lock()
			finishing := o.takeFinishingLocked(ev)
			o.finishing = append(o.finishing, &openSpan{seq: ev.Seq, span: span, end: now})
			o.mu.Unlock()
			endFinished(finishing)
			return
		}
		span.End(trace.WithTimestamp(now))
		o.flush(ev)
		return
	}

	_, span := o.tracer.Start(ctx, spanName(ev.Tool),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
	s := &openSpan{seq: ev.Seq, span: span}
	var evicted []*openSpan
	o.mu.Lock()
	finishing := o.takeFinishingLocked(ev)
	if old, ok := o.open[ev.Seq]; ok { // a Seq seen twice: end the older span
		o.order.Remove(old)
		evicted = append(evicted, old.Value.(*openSpan))
	}
	o.open[ev.Seq] = o.order.PushBack(s)
	for o.order.Len() > o.maxOpen {
		front := o.order.Front()
		victim := front.Value.(*openSpan)
		o.order.Remove(front)
		delete(o.open, victim.seq)
		evicted = append(evicted, victim)
	}
	o.mu.Unlock()
	endFinished(finishing)
	for _, v := range evicted {
		evict(v)
	}
}

func (o *Observer) record(ctx context.Context, ev toolguard.Event) {
	now := time.Now()
	o.mu.Lock()
	finishing := o.takeFinishingLocked(ev)
	var s *openSpan
	if e, ok := o.open[ev.Seq]; ok {
		s = e.Value.(*openSpan)
		o.order.Remove(e)
		delete(o.open, ev.Seq)
	}
	raised := o.raiseLocked(ev.Turn, ev.Phase)
	o.mu.Unlock()
	endFinished(finishing)

	if s == nil {
		// Never checked (or evicted): a span of its own.
		_, span := o.tracer.Start(ctx, spanName(ev.Tool),
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(now.Add(-ev.Duration)),
			trace.WithAttributes(o.callAttrs(ev, toolguard.Decision{}, ev.Phase)...))
		s = &openSpan{seq: ev.Seq, span: span}
	}
	s.span.SetAttributes(
		AttrStatus.String(ev.Status.String()),
		AttrNewResult.Bool(ev.NewResult))
	if ev.Status == toolguard.StatusFailed {
		s.span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
		s.span.SetStatus(codes.Error, "tool call failed")
	}
	if !raised {
		s.span.End(trace.WithTimestamp(now))
		return
	}
	// This Record raised the turn's phase, so its EventPhase comes next,
	// from the same goroutine: keep the span open for it.
	s.end = now
	o.mu.Lock()
	o.finishing = append(o.finishing, s)
	o.mu.Unlock()
}

// raiseLocked notes the phase of a turn after a Record and reports whether
// it is higher than any phase seen in that turn.
func (o *Observer) raiseLocked(turn int, p toolguard.Phase) bool {
	switch {
	case turn < o.turn:
		return false
	case turn > o.turn:
		o.turn, o.phase = turn, toolguard.PhaseNormal
	}
	if p > o.phase {
		o.phase = p
		return true
	}
	return false
}

func (o *Observer) phaseChange(ctx context.Context, ev toolguard.Event) {
	o.transitions.Add(ctx, 1, metric.WithAttributes(
		AttrFromPhase.String(ev.From.String()), AttrToPhase.String(ev.Phase.String())))

	o.mu.Lock()
	var own *openSpan
	for i, s := range o.finishing {
		if s.seq == ev.Seq {
			own = s
			o.finishing = append(o.finishing[:i], o.finishing[i+1:]...)
			break
		}
	}
	others := o.takeFinishingLocked(ev)
	o.raiseLocked(ev.Turn, ev.Phase)
	o.mu.Unlock()
	endFinished(others)

	eventAttrs := trace.WithAttributes(
		AttrFromPhase.String(ev.From.String()), AttrToPhase.String(ev.Phase.String()),
		semconv.GenAIToolName(ev.Tool), AttrTurn.Int(ev.Turn))
	if own != nil {
		own.span.AddEvent(PhaseChangeEvent, eventAttrs, trace.WithTimestamp(own.end))
		own.span.End(trace.WithTimestamp(own.end))
		return
	}
	if parent := trace.SpanFromContext(ctx); parent.IsRecording() {
		parent.AddEvent(PhaseChangeEvent, eventAttrs)
	}
}

// flush ends the spans waiting for a phase change that ev is not.
func (o *Observer) flush(ev toolguard.Event) {
	o.mu.Lock()
	finishing := o.takeFinishingLocked(ev)
	o.mu.Unlock()
	endFinished(finishing)
}

// takeFinishingLocked removes and returns the recorded spans still waiting
// for a phase change: any event other than that change means it is not
// coming (it follows its Record at once).
func (o *Observer) takeFinishingLocked(ev toolguard.Event) []*openSpan {
	if len(o.finishing) == 0 {
		return nil
	}
	var keep, done []*openSpan
	for _, s := range o.finishing {
		if ev.Kind == toolguard.EventPhase && ev.Seq == s.seq {
			keep = append(keep, s)
		} else {
			done = append(done, s)
		}
	}
	o.finishing = keep
	return done
}

func endFinished(spans []*openSpan) {
	for _, s := range spans {
		s.span.End(trace.WithTimestamp(s.end))
	}
}

func evict(s *openSpan) {
	s.span.SetAttributes(AttrEvicted.Bool(true))
	s.span.End()
}

// callAttrs are the attributes of a call's span.
func (o *Observer) callAttrs(ev toolguard.Event, d toolguard.Decision, phase toolguard.Phase) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs,
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(ev.Tool))
	if ev.CallID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(ev.CallID))
	}
	return append(attrs,
		AttrVerdict.String(d.Verdict.String()),
		AttrReason.String(d.Reason.String()),
		AttrPhase.String(phase.String()),
		AttrTurn.Int(ev.Turn))
}

// spanName follows the GenAI convention "execute_tool {gen_ai.tool.name}".
func spanName(tool string) string {
	if tool == "" {
		return "execute_tool"
	}
	return "execute_tool " + tool
}
