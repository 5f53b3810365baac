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
// each call through it with the function that runs tools (see
// ExampleTracker_Run):
//
//	tr := toolguard.NewTracker(toolguard.Policy{}) // the zero Policy is the defaults
//	r := tr.Run(ctx, call, run)                    // run: func(ctx, Call) (string, error)
//	fmt.Println(r.Text)                            // the output, or a hint that it did not run
//
// r.Decision.Skip() tells a hint or refusal from a real result; r.Err is the
// tool's error, or for an Abort the reason to stop the turn. When r.Phase
// changes (Guidance gives it at any time), give the model
// tr.Guidance().Message and strip the tools from PhaseWindDown on. Call
// Reset when new user input starts a new turn.
//
// Without Run, ask before each call and report after it (see
// ExampleTracker_ShouldSkip):
//
//	tr := toolguard.NewTracker(toolguard.Policy{})
//	var told toolguard.Phase // the phase the model was last told of
//	d := tr.ShouldSkip(call)
//	switch d.Verdict {
//	case toolguard.Allow:
//		out, err := run(ctx, call)
//		if phase := tr.Record(call, toolguard.Outcome{Result: out, Err: err}); phase != told {
//			told = phase // the nudge or the wind-down: give the model tr.Guidance().Message
//		}
//	case toolguard.Hint: // do not run the call: give the model d.Message as its result
//	case toolguard.Abort: // do not run the call: stop the turn with d.Err
//	}
//
// # Which API do I use?
//
//   - Tracker.Run: you call your tools yourself, one at a time (above).
//   - Tracker.RunRound: the calls of one model response, run one after
//     another; similar queries among them are distinct questions, and with
//     Policy.CountRounds they use one budget unit. Tracker.WithRound with
//     Run (or ShouldSkipContext): the same round, run in parallel goroutines.
//   - ShouldSkip and Record (or their Context forms): the call runs where
//     you do not control it with a function — a framework callback, a queue,
//     another process. Every allowed call must be recorded. ShouldSkipRound
//     (or ShouldSkipRoundContext) checks one response's calls together
//     before any runs; with a Store, it asks the Store once.
//   - An adapter, when your agent runs on a framework (MCP servers,
//     langchaingo, Eino, Genkit, Google ADK) or calls a provider SDK that has
//     no hooks (OpenAI, Anthropic, Google Gen AI): each is a module of its own
//     under github.com/toolguard/toolguard/adapters (docs/integrations.md).
//     otelguard adds OpenTelemetry spans and metrics; redisstore shares
//     quotas across replicas.
//
// # What fires
//
// The rules run in this order; the first that fires decides:
//
//   - Budget (ReasonBudget, an error matching ErrBudgetExhausted): the turn
//     used Policy.MaxCallsPerTurn calls (300, sized for long coding turns;
//     Policy.CountRounds counts model responses instead). Record returns
//     PhaseNudge from the call at 75% of the budget and PhaseWindDown at
//     100% (ExampleTracker_Guidance).
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
//     failed Policy.MaxFailures times (3) the same way with nothing changed
//     in between, or the same way in that many turns in a row (one hint).
//   - Cycle (ReasonCycle): the call would continue a cycle of 2 to 4 distinct
//     calls that already repeated 3 times without new results.
//   - Churn (ReasonChurn): the last 10 calls hold 5 similar searches of one
//     tool, or 5 fetches of one host and path, that brought no new result.
//
// The first firing is a Hint (with ActionHint, the default); if the model
// sends the hinted call again with nothing changed since, whichever rule
// sees it, that call is an Abort with a *LoopError. docs/policy.md lists
// every field and how each threshold counts.
//
// # Progress and canonical arguments
//
// Two calls are identical when their tools are equal and their arguments
// are equal as JSON values (keys sorted at every depth, whitespace ignored,
// numbers compared by value) or, when not JSON, as bytes. A call repeats
// without progress only if nothing changed since it last ran: its result
// (for a failure, its error output) is the same, and no other call that
// may have changed the world — a new call or a changed result, that
// succeeded, of a tool not marked ToolPolicy.ReadOnly — made progress in
// between. So a poll whose output changes never fires
// (ExampleTracker_Record_polling), and a build after an edit is new work,
// while A, B, A, B with unchanged results is a loop. Timestamps, UUIDs,
// long hex ids and durations are noise, not progress.
//
// # Ledger, summary and events
//
// Ledger returns one Entry per checked call with its hash, a redacted
// purpose, the verdict and the outcome — never raw arguments or results
// unless Policy.KeepRaw is set. Summary (the turn) and SessionSummary
// (every turn) say what an agent must report when it stops: calls per
// tool, failures, new results, skips and the budget left, with a suggested
// next step. Policy.OnEvent and Policy.Logger see every decision, record
// and phase change.
//
// # Concurrency
//
// A Tracker is safe for concurrent use by the parallel tool calls of a
// turn: ShouldSkip reserves the budget slot and the repeat count
// atomically. Hooks run after the Tracker's lock is released and may call
// back into it. Quotas shared between processes go through a store.Store
// (package store, docs/distributed.md).
//
// # Many sessions
//
// A server that holds one Tracker per conversation makes one Sessions from
// its Policy at start-up, opens each conversation's Tracker with
// Sessions.NewTracker, and hands it back with Sessions.Release when the
// conversation ends. The Policy and each tool's policy are then resolved
// once for every session. docs/performance.md gives the memory an open
// session holds.
package toolguard
