// Package audit replays recorded agent tool calls through a toolguard
// Tracker and reports what would have fired. It is the engine of the
// `toolguard audit` command.
//
// # Inputs
//
// Main reads files and folders; the format of each file is detected from
// its first record (detect): Claude Code session transcripts, Codex CLI
// rollouts, Gemini CLI sessions (JSONL, with rewinds, or the older JSON),
// OpenAI Responses API records, chat.completion responses, OpenAI Chat
// Completions, Anthropic Messages and Vercel AI SDK conversations,
// OTLP-JSON spans of the GenAI conventions, and the JSON Lines episode
// format of testdata/traces/FORMAT.md. Files of the episode format and of
// conversation objects are read record by record, every other file whole
// (a session is one episode, or a few with its subagents); the pipeline
// (pipeline.go) decodes and replays them in parallel and puts the results
// back in input order. Parse reads one file in memory.
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
