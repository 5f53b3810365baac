package toolguard

import (
	"context"
	"log/slog"
	"time"

	"github.com/toolguard/toolguard/store"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventDecision: ShouldSkip decided on a call (Decision is set).
	EventDecision EventKind = iota
	// EventRecord: Record booked an outcome (Failed, NewResult, Duration).
	EventRecord
	// EventPhase: the turn's phase changed (From and Phase).
	EventPhase
	// EventStore: a Store operation failed (Err); with FailOpen the call
	// was counted locally.
	EventStore
	// EventBreaker: the store's store.Breaker changed state (Breaker; Err is the
	// failure that opened it).
	EventBreaker
)

var eventNames = [...]string{"decision", "record", "phase", "store", "breaker"}

// String returns "decision", "record", "phase", "store" or "breaker".
func (k EventKind) String() string { return enumString(eventNames[:], int(k), "EventKind") }

// Event is delivered to Policy.OnEvent and Policy.Logger. It carries no
// arguments or results.
type Event struct {
	// Context is the context of the call the event is about, as passed to
	// ShouldSkipContext, RecordContext, Run or RunRound;
	// context.Background() for the context-less methods and Reset. Hooks
	// use it to join the event to the call's trace or log; it is not for
	// keeping.
	Context   context.Context
	Kind      EventKind
	Seq       uint64 // the ledger entry of the call
	Turn      int
	CallID    string
	Tool      string
	Decision  Decision           // EventDecision
	Failed    bool               // EventRecord: the call failed
	NewResult bool               // EventRecord
	Duration  time.Duration      // EventRecord: from the check to the Record
	From      Phase              // EventPhase: the phase before
	Phase     Phase              // the phase after the event
	Err       error              // EventStore, EventBreaker
	Breaker   store.BreakerState // EventBreaker: the state after
}

// events collects the events of one operation, so they can be delivered
// after the lock is released.
type events struct {
	on   bool // there is a hook or a logger to deliver to; else nothing is collected
	list []Event
}

func (e *events) add(ev Event) {
	if e.on {
		e.list = append(e.list, ev)
	}
}

// emit delivers events to the hook and the logger. It must be called
// without the lock held.
func (t *Tracker) emit(ctx context.Context, evs *events) {
	for _, ev := range evs.list {
		ev.Context = ctx
		if t.cfg.policy.OnEvent != nil {
			t.cfg.policy.OnEvent(ev)
		}
		logEvent(t.cfg.policy.Logger, ev)
	}
}

// logEvent writes an event, if l is set, with the GenAI attribute names for
// the tool and the call id. Firings are warnings; everything else is debug.
func logEvent(l *slog.Logger, ev Event) {
	skipped := ev.Kind == EventDecision && ev.Decision.Verdict != Allow
	level := slog.LevelDebug
	if skipped || ev.Kind == EventStore || ev.Kind == EventBreaker && ev.Breaker == store.BreakerOpen {
		level = slog.LevelWarn
	}
	if l == nil || !l.Enabled(ev.Context, level) {
		return
	}
	msg := "toolguard: quota store failed" // EventStore
	attrs := []slog.Attr{
		slog.String("gen_ai.tool.name", ev.Tool),
		slog.String("gen_ai.tool.call.id", ev.CallID),
		slog.Uint64("toolguard.seq", ev.Seq),
		slog.Int("toolguard.turn", ev.Turn),
		slog.String("toolguard.phase", ev.Phase.String()),
	}
	switch ev.Kind {
	case EventDecision:
		msg = "toolguard: decision"
		if skipped {
			msg = "toolguard: call skipped"
		}
		attrs = append(attrs,
			slog.String("toolguard.verdict", ev.Decision.Verdict.String()),
			slog.String("toolguard.reason", ev.Decision.Reason.String()))
	case EventRecord:
		msg = "toolguard: record"
		attrs = append(attrs,
			slog.String("toolguard.status", Entry{Done: true, Failed: ev.Failed}.Status()),
			slog.Bool("toolguard.new_result", ev.NewResult),
			slog.Duration("toolguard.duration", ev.Duration))
	case EventPhase:
		msg = "toolguard: phase change"
		attrs = append(attrs, slog.String("toolguard.from", ev.From.String()))
	case EventBreaker:
		msg = "toolguard: quota store breaker " + ev.Breaker.String()
		attrs = append(attrs, slog.String("toolguard.breaker", ev.Breaker.String()))
	}
	if ev.Err != nil { // EventStore, EventBreaker
		attrs = append(attrs, slog.String("error", ev.Err.Error()))
	}
	l.LogAttrs(ev.Context, level, msg, attrs...)
}
