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
)

var formatNames = map[Format]string{
	FormatEpisodes:  "episodes",
	FormatOpenAI:    "openai",
	FormatAnthropic: "anthropic",
	FormatMessages:  "messages",
}

// String returns "episodes", "openai", "anthropic" or "messages".
func (f Format) String() string {
	if s, ok := formatNames[f]; ok {
		return s
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Episode is one recorded agent session: its calls in the order the agent
// made them.
type Episode struct {
	File  string // the input it came from, as named on the command line
	Name  string // the episode id, or "line N" when the input gives none
	Label string // "success", "failure", "unknown", or "" when not recorded
	Calls []Call
}

// Call is one recorded tool call with its recorded outcome.
type Call struct {
	Round  int // the model response that asked for it, 1-based in the episode
	Turn   int // the user turn, 1-based; a new user message starts one
	ID     string
	Tool   string
	Args   json.RawMessage // nil when the call has no arguments
	Result string          // the recorded result; "" when none was recorded
	Failed bool            // the recorded result is a failure
}
