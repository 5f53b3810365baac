package audit

import (
	"encoding/json"
	"fmt"
)

// Format is the shape of an input file.
type Format int

const (
	// FormatEpisodes is the JSON Lines episode format of the bundled traces.
	FormatEpisodes Format = iota + 1
	// FormatOpenAI is OpenAI Chat Completions messages.
	FormatOpenAI
	// FormatAnthropic is Anthropic Messages messages.
	FormatAnthropic
	// FormatMessages is chat messages without any tool call, which read the
	// same in both providers' formats.
	FormatMessages
	// FormatClaudeCode is a Claude Code session transcript
	// (~/.claude/projects/PROJECT/SESSION.jsonl).
	FormatClaudeCode
	// FormatCodex is a Codex CLI rollout (~/.codex/sessions/.../rollout-*.jsonl).
	FormatCodex
	// FormatGemini is a Gemini CLI session (~/.gemini/tmp/HASH/chats/session-*).
	FormatGemini
	// FormatResponses is OpenAI Responses API items: response objects,
	// requests with "input", or one item per line.
	FormatResponses
	// FormatChatCompletion is OpenAI chat.completion response objects.
	FormatChatCompletion
	// FormatOTLP is OpenTelemetry OTLP-JSON spans with the GenAI conventions.
	FormatOTLP
	// FormatVercel is Vercel AI SDK UI messages, whose tool calls are parts.
	FormatVercel
	// FormatATIF is an Agent Trajectory Interchange Format document:
	// Harbor's (Terminal-Bench's) trajectory.json.
	FormatATIF
	// FormatCopilot is a GitHub Copilot CLI session log
	// (~/.copilot/session-state/SESSION/events.jsonl).
	FormatCopilot
	// FormatOpenHands is an OpenHands trajectory: its array of events.
	FormatOpenHands
	// FormatCline is a Cline or Roo Code task's api_conversation_history.json.
	FormatCline
	// FormatAider is aider's Markdown chat history (.aider.chat.history.md).
	FormatAider
	// FormatGoose is a Goose session (JSON Lines with a metadata line).
	FormatGoose
	// FormatOpencode is a session exported by `opencode export`.
	FormatOpencode
)

var formatNames = map[Format]string{
	FormatEpisodes:       "episodes",
	FormatOpenAI:         "openai",
	FormatAnthropic:      "anthropic",
	FormatMessages:       "messages",
	FormatClaudeCode:     "claude-code",
	FormatCodex:          "codex",
	FormatGemini:         "gemini",
	FormatResponses:      "openai-responses",
	FormatChatCompletion: "chat-completion",
	FormatOTLP:           "otlp",
	FormatVercel:         "vercel-ai",
	FormatATIF:           "atif",
	FormatCopilot:        "copilot-cli",
	FormatOpenHands:      "openhands",
	FormatCline:          "cline",
	FormatAider:          "aider",
	FormatGoose:          "goose",
	FormatOpencode:       "opencode",
}

// String returns the format's name: "episodes", "openai", "anthropic",
// "messages", "claude-code", "codex", "gemini", "openai-responses",
// "chat-completion", "otlp", "vercel-ai", "atif", "copilot-cli",
// "openhands", "cline", "aider", "goose" or "opencode".
func (f Format) String() string {
	if s, ok := formatNames[f]; ok {
		return s
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Episode is one recorded agent session: its calls in the order the agent
// made them.
type Episode struct {
	File    string // the input it came from, as named on the command line
	Project string // the project it belongs to (a working directory); "" when unknown
	Name    string // the episode id, or "line N" when the input gives none
	Label   string // "success", "failure", "unknown", or "" when not recorded
	// Title is the first thing the user asked (at most maxTitleBytes, not
	// redacted: reports redact it); "" when the transcript holds none.
	Title string
	Calls []Call
	// Tokens reports that Call.Cost counts tokens (the transcript records
	// the model's usage); otherwise it counts characters.
	Tokens bool
}

// Call is one recorded tool call with its recorded outcome.
type Call struct {
	Round  int // the model response that asked for it, 1-based in the episode
	Turn   int // the user turn, 1-based; a new user message starts one
	Line   int // the line of the input that holds it; 0 when not known
	ID     string
	Tool   string
	Args   json.RawMessage // nil when the call has no arguments
	Result string          // the recorded result; "" when none was recorded
	Failed bool            // the recorded result is a failure
	// Cost is what the result carried into the conversation: tokens when
	// Episode.Tokens, otherwise characters. See costs.go.
	Cost int
}
