// Package toolguard decides, before each tool call of an LLM agent, whether
// the call should run, and records what happened after it ran. It stops the
// waste that burns agent budgets — the same call again and again, the same
// search reworded, a failing command retried with a tweaked flag, two tools
// ping-ponging, one tool past its quota, a turn past its budget — and tells
// the model what to do instead.
//
// # Using a Tracker
//
// A Tracker guards one agent session. The shortest way to use it is to run
// each call through it with the function that runs tools:
//
//	tr := toolguard.NewTracker(toolguard.Policy{}) // the zero Policy is the defaults
//
//	r := tr.Run(ctx, call, run) // run: func(ctx, Call) (string, error)
//	fmt.Println(r.Text) // give it to the model as the call's result
//	// r.Text is the call's result for the model: the tool's output, or a
//	// hint saying the call was not executed and what to do instead.
//	// r.Decision.Skip() tells a hint or refusal from a real result;
//	// r.Err is the tool's error, or for an Abort the reason to stop the turn.
//	// r.Phase is the turn's phase after the call: when it changes, send
//	// tr.Guidance().Message (and strip the tools from PhaseWindDown on).
//
// The calls of one model response are one round: run them with
// tr.RunRound(ctx, calls, run). Call Reset when new user input starts a new
// turn.
//
// Without Run, ask before each call and report after it:
//
//	tr := toolguard.NewTracker(toolguard.Policy{})
//	var told toolguard.Phase // the phase the model was last told of
//
//	d := tr.ShouldSkip(call)
//	switch d.Verdict {
//	case toolguard.Allow:
//		out, err := run(ctx, call)
//		if phase := tr.Record(call, toolguard.Outcome{Result: out, Err: err}); phase != told {
//			told = phase // the turn entered the nudge or the wind-down:
//			// give the model tr.Guidance().Message
//		}
//	case toolguard.Hint:
//		// Do not run the call: give the model d.Message as its result.
//	case toolguard.Abort:
//		// Do not run the call: stop the turn with d.Err.
//	}
//
// # Which API do I use?
//
//   - Tracker.Run: you call your tools yourself, one at a time, from a
//     function of the shape func(context.Context, Call) (string, error).
//     One line around the executor; the Result tells you everything.
//   - Tracker.RunRound: the model asked for several calls in one response
//     and you run them one after another. Similar queries among them are
//     distinct questions; with Policy.CountRounds they use one budget unit.
//   - Tracker.WithRound with Tracker.Run (or ShouldSkipContext): the same
//     round, with the calls run in parallel goroutines.
//   - ShouldSkip (or ShouldSkipContext) and Record (or RecordContext): the
//     call runs somewhere you do not control with a function — a framework
//     callback, a queue, another process — or you need the Decision before
//     deciding how to run it. Every allowed call must be recorded.
//   - ShouldSkipRound (or ShouldSkipRoundContext): the same for the calls
//     of one model response checked together before any of them runs; with
//     a Store, the round asks it once.
//   - An adapter, when your agent runs on a framework: each wires the
//     Tracker into that framework's own hook, in its own module under
//     github.com/toolguard/toolguard. MCP servers: adapters/mcpgo
//     (mark3labs/mcp-go) or adapters/mcpsdk (the official Go SDK);
//     langchaingo agents: adapters/langchaingo; Eino: adapters/einoguard;
//     Genkit: adapters/genkitguard; Google ADK: adapters/adkguard; the
//     provider SDKs, which have no hooks (OpenAI, Anthropic, Google Gen
//     AI): adapters/openaiguard, adapters/anthropicguard,
//     adapters/genaiguard, which check a model message's tool calls as one
//     round. OpenTelemetry spans and metrics: otelguard. Quotas shared
//     across replicas: redisstore.
//
// Read the phase from a call's answer (Result.Phase, Record, Decision.Phase)
// or, at any time, from Guidance, which also says what to tell the model.
// Summary (the turn) and SessionSummary (every turn) say what an agent must
// report when it stops.
//
// # What fires
//
// The rules run in this order; the first that fires decides:
//
//   - Budget (ReasonBudget): the turn used Policy.MaxCallsPerTurn calls
//     (300, sized for long coding turns).
//   - Tool limit (ReasonToolLimit): ToolPolicy.Limit calls of one tool in a
//     turn, or the tool's session quota: the least of the agent quota, the
//     platform quota and the rule default (none unless Policy.SessionLimit is
//     set; 10 for tools marked high-cost).
//   - Duplicate (ReasonDuplicate): the same tool with the same canonical
//     arguments ran Policy.MaxRepeats times (2) without progress.
//   - Similar query (ReasonSimilarQuery): a search tool was asked, in an
//     earlier round of the turn and with its other arguments equal, a query
//     similar (≥ 0.75) to this one, and similar queries brought nothing new.
//   - Repeated failure (ReasonRepeatedFailure): the call, or a tweak of it,
//     failed Policy.MaxFailures times (3) in the same way with nothing
//     changed in between; or it failed the same way in that many turns in
//     a row (one hint, not escalated).
//   - Cycle (ReasonCycle): the call would continue a cycle of 2 to 4 distinct
//     calls that already repeated 3 times without new results.
//   - Churn (ReasonChurn): the last 10 calls hold 5 similar searches of one
//     tool, or 5 fetches of one host and path, that brought no new result.
//
// The first firing is a Hint (with ActionHint, the default); if the model
// sends the hinted call again with nothing changed since, whichever rule
// sees it, that call is an Abort with a *LoopError.
//
// # Progress and canonical arguments
//
// Two calls are identical when their tools are equal and their arguments
// are equal as JSON values: keys sorted at every depth, whitespace ignored,
// numbers compared by value. Arguments that are not JSON are compared as
// bytes. A call repeats without progress only if nothing changed since it
// last ran: its result (for a failure, its error output) is the same, and no
// other call that may have changed the world — a new call or a changed
// result, that succeeded, of a tool not marked ToolPolicy.ReadOnly — made
// progress in between. So polling a job whose output changes never fires,
// and a build after an edit or a check after a setting changed is new work,
// while A, B, A, B with unchanged results is a loop. Differences that are
// only timestamps, UUIDs, long hex ids or durations are noise, not progress.
//
// # Turn budget
//
// Each executed call counts one (Policy.CountRounds counts model responses
// instead). Record returns PhaseNudge from the call at 75% of the budget
// (Guidance then says "You have used X of Y tool calls. Start wrapping up.")
// and PhaseWindDown at 100% (strip the tools and ask the model to summarize
// and answer). A call asked for after that is refused with an error
// matching ErrBudgetExhausted.
//
// # Ledger, summary and events
//
// Ledger returns one Entry per checked call with its hash, a redacted
// purpose, the verdict and the outcome — never raw arguments or results
// unless Policy.KeepRaw is set. Summary turns the turn into what an agent
// must say when it stops: calls per tool, failures, new results, skips and
// the budget left, with a suggested next step. Policy.OnEvent and
// Policy.Logger see every decision, record and phase change.
//
// # Concurrency
//
// A Tracker is safe for concurrent use by the parallel tool calls of a
// turn: ShouldSkip reserves the budget slot and the repeat count
// atomically. Hooks run after the Tracker's lock is released and may call
// back into it. Quotas shared between processes go through a store.Store
// (package store: the interface, SharedQuota, the Breaker and the store
// errors); see the redisstore module.
//
// # Many sessions
//
// A server that holds one Tracker per conversation makes one Sessions from
// its Policy at start-up, opens each conversation's Tracker with
// Sessions.NewTracker, and hands it back with Sessions.Release when the
// conversation ends. The Policy and each tool's policy are then resolved
// once for every session rather than once per session. An open session
// holds at most 2 KiB after a typical episode of the bundled traces (1,926
// bytes measured; TestMemoryPerSession fails above 2 KiB; see
// docs/performance.md).
package toolguard
