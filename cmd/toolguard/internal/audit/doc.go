// Package audit replays recorded agent tool calls through a toolguard
// Tracker and reports what would have fired. It is the engine of the
// `toolguard audit` command.
//
// # Inputs
//
// Parse reads one input file, whose format is detected from its content:
//
//   - the JSON Lines episode format of testdata/traces/FORMAT.md (one
//     episode per line, with its calls and their recorded results);
//   - OpenAI Chat Completions conversations: a JSON array of messages, an
//     object {"messages": [...]}, or JSON Lines of either, where assistant
//     tool_calls pair with tool messages by tool_call_id;
//   - Anthropic Messages conversations in the same shapes, where tool_use
//     blocks pair with tool_result blocks by tool_use_id.
//
// # Replay
//
// Replay runs the calls of one Episode through a new Tracker: the calls of
// one model response are checked together with ShouldSkipRound, an allowed
// call is recorded with its recorded result, and a new user message (in the
// episode format, a change of user_turn) resets the turn. A skipped call is not recorded, but the replay goes on with the
// next recorded call, so the report shows every rule that would have fired.
//
// # Reports
//
// A Report holds the decisions of every episode; WriteText, WriteJSON and
// WriteHTML render it. Main is the command line on top of all of this.
package audit
