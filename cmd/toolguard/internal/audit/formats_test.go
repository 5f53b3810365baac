package audit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNewFormats reads the formats added for the files users keep besides
// the CLIs' own session folders, each detected from its content.
func TestNewFormats(t *testing.T) {
	tests := []struct {
		file   string
		format Format
		want   []shape
	}{
		// claude-code-action's execution file: the headless stream-json
		// messages collected in one JSON array.
		{"headless/claude-execution-output.json", FormatClaudeCode, []shape{
			{"sample-session-id", "", []string{"Read 1 1", "Edit 2 1", "mcp__github__add_pull_request_review_comment 3 1"}},
		}},
		// claude -p --output-format stream-json: one message a line; the
		// subagent's messages name its Task call (parent_tool_use_id).
		{"headless/claude-stream.jsonl", FormatClaudeCode, []shape{
			{"0b7e2c55-1f3a-4c8e-9d20-6a5b4c3d2e1f", "", []string{"Bash 1 1 !", "Task 2 1", "Edit 3 1", "Bash 4 1"}},
			{"0b7e2c55-1f3a-4c8e-9d20-6a5b4c3d2e1f/task-toolu_01B", "", []string{"Bash 1 1"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, eps := parseFixture(t, tt.file)
			assert.Equal(t, tt.format, f)
			var got []shape
			for _, ep := range eps {
				got = append(got, shapeOf(ep))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
