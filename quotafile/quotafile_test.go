package quotafile_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/quotafile"
)

// want is the part of a Policy a quota file sets.
type want struct {
	quota       *toolguard.Quota
	windowLimit int
	maxFailures int
}

func got(p toolguard.Policy) want {
	return want{quota: p.AgentQuota, windowLimit: p.WindowLimit, maxFailures: p.MaxFailures}
}

func TestParseMapping(t *testing.T) {
	tests := []struct {
		name, file, data string
		want             want
	}{
		{
			name: "the declared form",
			file: "quota.yaml",
			data: "tool_quota:\n  Bash: 10\n  WebFetch: 5\n  defaults: 20\nloop_detection:\n  same_call_window: 5\n  max_retries: 3\n",
			want: want{
				quota:       &toolguard.Quota{Tools: map[string]int{"Bash": 10, "WebFetch": 5}, Default: 20},
				windowLimit: 5, maxFailures: 3,
			},
		},
		{
			name: "flow style",
			file: "quota.yml",
			data: "{tool_quota: {Bash: 10, defaults: 20}, loop_detection: {max_retries: 2}}",
			want: want{quota: &toolguard.Quota{Tools: map[string]int{"Bash": 10}, Default: 20}, maxFailures: 2},
		},
		{
			name: "only defaults",
			file: "q",
			data: "tool_quota:\n  defaults: 7\n",
			want: want{quota: &toolguard.Quota{Default: 7}},
		},
		{
			name: "glob patterns",
			file: "q.yaml",
			data: "tool_quota:\n  'mcp__github__*': 8\n  web_*: 4\n",
			want: want{quota: &toolguard.Quota{Tools: map[string]int{"mcp__github__*": 8, "web_*": 4}}},
		},
		{
			name: "tools named defaults and tools, nested",
			file: "q.yaml",
			data: "tool_quota:\n  defaults: 20\n  Bash: 10\n  tools:\n    defaults: 3\n    tools: 2\n    Edit: 15\n",
			want: want{quota: &toolguard.Quota{Tools: map[string]int{"defaults": 3, "tools": 2, "Edit": 15, "Bash": 10}, Default: 20}},
		},
		{
			name: "empty tool_quota declares an empty quota",
			file: "q.yaml",
			data: "tool_quota: {}\n",
			want: want{quota: &toolguard.Quota{}},
		},
		{
			name: "loop detection only",
			file: "q.yaml",
			data: "loop_detection:\n  same_call_window: 4\n",
			want: want{windowLimit: 4},
		},
		{name: "empty file", file: "q.yaml", data: ""},
		{name: "comments only", file: "q.yaml", data: "# nothing yet\n"},
		{name: "document marker only", file: "q.yaml", data: "---\n"},
		{name: "null document", file: "q.yaml", data: "~\n"},
		{
			name: "explicit document markers",
			file: "q.yaml",
			data: "---\ntool_quota: {Bash: 1}\n...\n",
			want: want{quota: &toolguard.Quota{Tools: map[string]int{"Bash": 1}}},
		},
		{
			name: "explicit int tag and anchors without aliases",
			file: "q.yaml",
			data: "tool_quota: &q\n  Bash: !!int \"4\"\n",
			want: want{quota: &toolguard.Quota{Tools: map[string]int{"Bash": 4}}},
		},
		{
			name: "byte order mark",
			file: "q.yaml",
			data: "\uFEFFtool_quota: {Bash: 1}\n",
			want: want{quota: &toolguard.Quota{Tools: map[string]int{"Bash": 1}}},
		},
		{
			name: "largest limit",
			file: "q.yaml",
			data: "tool_quota: {Bash: 2147483647}\n",
			want: want{quota: &toolguard.Quota{Tools: map[string]int{"Bash": 2147483647}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := quotafile.Parse(tt.file, []byte(tt.data))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got(p))
			assert.NoError(t, p.Validate())
		})
	}
}

func TestFrontMatter(t *testing.T) {
	agentQuota := &toolguard.Quota{Tools: map[string]int{"Bash": 10, "WebFetch": 5}, Default: 20}
	tests := []struct {
		name, file, data string
		want             want
	}{
		{
			name: "agent definition keys are ignored",
			file: "reviewer.md",
			data: "---\nname: code-reviewer\ndescription: Reviews code.\ntools: Read, Grep, Bash\nmodel: sonnet\ncolor: blue\n" +
				"tool_quota:\n  Bash: 10\n  WebFetch: 5\n  defaults: 20\nloop_detection:\n  same_call_window: 5\n  max_retries: 3\n---\n\n# Reviewer\n",
			want: want{quota: agentQuota, windowLimit: 5, maxFailures: 3},
		},
		{
			name: "nested values of ignored keys are ignored",
			file: "a.md",
			data: "---\nhooks:\n  PreToolUse: [{matcher: Bash}]\nx: &anchor [1, 2]\ny: *anchor\n1: numeric key\n" +
				"tool_quota: {Bash: 10, WebFetch: 5, defaults: 20}\n---\n",
			want: want{quota: agentQuota},
		},
		{
			name: "CRLF line ends",
			file: "a.md",
			data: "---\r\nname: a\r\ntool_quota:\r\n  Bash: 10\r\n  WebFetch: 5\r\n  defaults: 20\r\n---\r\nbody\r\n",
			want: want{quota: agentQuota},
		},
		{
			name: "trailing blanks on the delimiters and a byte order mark",
			file: "a.MD",
			data: "\uFEFF--- \ntool_quota: {Bash: 10, WebFetch: 5, defaults: 20}\n---\t\n",
			want: want{quota: agentQuota},
		},
		{
			name: "markdown extension",
			file: "dir/agent.markdown",
			data: "---\ntool_quota: {Bash: 10, WebFetch: 5, defaults: 20}\n---",
			want: want{quota: agentQuota},
		},
		{
			name: "body after the front matter is not read",
			file: "a.md",
			data: "---\nname: a\n---\ntool_quota:\n  Bash: -1\n---\nmore\n",
		},
		{name: "no front matter", file: "a.md", data: "# Agent\n\ntool_quota: {Bash: -1}\n"},
		{name: "front matter not on the first line", file: "a.md", data: "\n---\ntool_quota: {Bash: -1}\n---\n"},
		{name: "empty front matter", file: "a.md", data: "---\n---\nbody\n"},
		{name: "empty file", file: "a.md", data: ""},
		{name: "only agent keys", file: "a.md", data: "---\nname: a\ndescription: b\n---\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := quotafile.Parse(tt.file, []byte(tt.data))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got(p))
		})
	}
}

// errorCase is a file that must be refused: the *Error must carry the line
// and the key, and its message must name the file, the line and the key.
type errorCase struct {
	name, file, data string
	line             int
	key              string
	problem          string // a fragment of Error.Problem
}

func TestParseErrors(t *testing.T) {
	tests := []errorCase{
		// Keys.
		{name: "unknown top-level key", file: "q.yaml", data: "tool_quota: {Bash: 1}\nloop_detect:\n  max_retries: 3\n",
			line: 2, key: "loop_detect", problem: "unknown key; did you mean loop_detection?"},
		{name: "agent key in a plain file", file: "q.yaml", data: "name: reviewer\n",
			line: 1, key: "name", problem: "unknown key"},
		{name: "unknown loop_detection key", file: "q.yaml", data: "loop_detection:\n  max_retries: 3\n  same_call_windw: 5\n",
			line: 3, key: "loop_detection.same_call_windw", problem: "unknown key; did you mean same_call_window?"},
		{name: "unknown loop_detection key in front matter", file: "a.md", data: "---\nname: a\nloop_detection:\n  retries: 3\n---\n",
			line: 4, key: "loop_detection.retries", problem: "unknown key"},
		{name: "near miss in front matter", file: "a.md", data: "---\nname: a\ntool_quotas:\n  Bash: 3\n---\n",
			line: 3, key: "tool_quotas", problem: "did you mean tool_quota?"},
		{name: "near miss with another case", file: "a.md", data: "---\nLoop-Detection: {max_retries: 3}\n---\n",
			line: 2, key: "Loop-Detection", problem: "did you mean loop_detection?"},
		{name: "duplicate top-level key", file: "q.yaml", data: "tool_quota: {Bash: 1}\n\ntool_quota: {Bash: 2}\n",
			line: 3, key: "tool_quota", problem: "duplicate key (first at line 1)"},
		{name: "duplicate tool", file: "q.yaml", data: "tool_quota:\n  Bash: 10\n  WebFetch: 5\n  Bash: 3\n",
			line: 4, key: "tool_quota.Bash", problem: "duplicate key (first at line 2)"},
		{name: "duplicate tool across tools:", file: "q.yaml", data: "tool_quota:\n  Bash: 10\n  tools:\n    Bash: 3\n",
			line: 4, key: "tool_quota.tools.Bash", problem: "duplicate key (first at line 2)"},
		{name: "duplicate defaults", file: "q.yaml", data: "tool_quota:\n  defaults: 1\n  defaults: 2\n",
			line: 3, key: "tool_quota.defaults", problem: "duplicate key"},
		{name: "duplicate loop_detection key", file: "q.yaml", data: "loop_detection:\n  max_retries: 1\n  max_retries: 2\n",
			line: 3, key: "loop_detection.max_retries", problem: "duplicate key"},
		{name: "duplicate agent key in front matter", file: "a.md", data: "---\nname: a\nname: b\n---\n",
			line: 3, key: "name", problem: "duplicate key (first at line 2)"},
		{name: "empty tool name", file: "q.yaml", data: "tool_quota:\n  Bash: 1\n  \"\": 3\n",
			line: 3, key: `tool_quota.""`, problem: "empty tool name"},
		{name: "blank tool name", file: "q.yaml", data: "tool_quota:\n  \"  \": 3\n",
			line: 2, key: `tool_quota."  "`, problem: "empty tool name"},
		{name: "tool name with blanks around it", file: "q.yaml", data: "tool_quota:\n  \" Bash\": 3\n",
			line: 2, key: `tool_quota." Bash"`, problem: "leading or trailing blanks"},
		{name: "malformed glob", file: "q.yaml", data: "tool_quota:\n  \"mcp_[\": 3\n",
			line: 2, key: `tool_quota."mcp_["`, problem: "malformed glob pattern"},
		{name: "numeric key", file: "q.yaml", data: "tool_quota:\n  42: 3\n",
			line: 2, key: "tool_quota.42", problem: "a key must be a string, not 42; quote it"},
		{name: "null key", file: "q.yaml", data: "tool_quota:\n  ~: 3\n",
			line: 2, key: `tool_quota."~"`, problem: "a key must be a string, not null"},
		{name: "complex key", file: "q.yaml", data: "tool_quota:\n  ? [a, b]\n  : 3\n",
			line: 2, key: "tool_quota.?", problem: "a key must be a string, not a list"},
		{name: "merge key", file: "q.yaml", data: "base: &b {Bash: 1}\n", line: 1, key: "base", problem: "unknown key"},
		{name: "merge key in tool_quota", file: "a.md", data: "---\nbase: &b {Bash: 1}\ntool_quota:\n  <<: *b\n---\n",
			line: 4, key: `tool_quota."<<"`, problem: "merge keys (<<) are not allowed"},

		// Numbers.
		{name: "negative limit", file: "q.yaml", data: "tool_quota:\n  Bash: -1\n",
			line: 2, key: "tool_quota.Bash", problem: "negative limit -1 (use a positive limit or remove the key)"},
		{name: "negative defaults", file: "q.yaml", data: "tool_quota:\n  defaults: -20\n",
			line: 2, key: "tool_quota.defaults", problem: "negative limit -20"},
		{name: "negative retries", file: "q.yaml", data: "loop_detection:\n  max_retries: -3\n",
			line: 2, key: "loop_detection.max_retries", problem: "negative limit -3"},
		{name: "huge negative", file: "q.yaml", data: "tool_quota:\n  Bash: -99999999999999999999\n",
			line: 2, key: "tool_quota.Bash", problem: "negative limit"},
		{name: "zero limit", file: "q.yaml", data: "tool_quota:\n  Bash: 0\n",
			line: 2, key: "tool_quota.Bash", problem: "limit 0 is not allowed (use a positive limit or remove the key)"},
		{name: "zero window", file: "q.yaml", data: "loop_detection:\n  same_call_window: 0\n",
			line: 2, key: "loop_detection.same_call_window", problem: "limit 0 is not allowed"},
		{name: "too large", file: "q.yaml", data: "tool_quota:\n  Bash: 2147483648\n",
			line: 2, key: "tool_quota.Bash", problem: "too large (at most 2147483647)"},
		{name: "far too large", file: "q.yaml", data: "tool_quota:\n  Bash: 99999999999999999999999\n",
			line: 2, key: "tool_quota.Bash", problem: "too large"},
		{name: "explicit float", file: "q.yaml", data: "tool_quota:\n  Bash: !!float 5\n",
			line: 2, key: "tool_quota.Bash", problem: "want a positive integer, got 5"},
		{name: "float", file: "q.yaml", data: "tool_quota:\n  Bash: 1.5\n",
			line: 2, key: "tool_quota.Bash", problem: "want a positive integer, got 1.5"},
		{name: "integral float", file: "q.yaml", data: "tool_quota:\n  Bash: 10.0\n",
			line: 2, key: "tool_quota.Bash", problem: "want a positive integer, got 10.0"},
		{name: "word", file: "q.yaml", data: "tool_quota:\n  Bash: ten\n",
			line: 2, key: "tool_quota.Bash", problem: `want a positive integer, got "ten"`},
		{name: "quoted number", file: "q.yaml", data: "tool_quota:\n  Bash: \"10\"\n",
			line: 2, key: "tool_quota.Bash", problem: `got "10" (remove the quotes)`},
		{name: "bool", file: "q.yaml", data: "loop_detection:\n  max_retries: true\n",
			line: 2, key: "loop_detection.max_retries", problem: "want a positive integer, got true"},
		{name: "null", file: "q.yaml", data: "tool_quota:\n  Bash: null\n",
			line: 2, key: "tool_quota.Bash", problem: "want a positive integer, got null"},
		{name: "missing value", file: "q.yaml", data: "tool_quota:\n  defaults:\n",
			line: 2, key: "tool_quota.defaults", problem: "got null"},
		{name: "octal", file: "q.yaml", data: "tool_quota:\n  Bash: 010\n",
			line: 2, key: "tool_quota.Bash", problem: "write the limit as a decimal integer, got 010"},
		{name: "hexadecimal", file: "q.yaml", data: "tool_quota:\n  Bash: 0x10\n",
			line: 2, key: "tool_quota.Bash", problem: "decimal integer"},
		{name: "underscores", file: "q.yaml", data: "tool_quota:\n  Bash: 1_000\n",
			line: 2, key: "tool_quota.Bash", problem: "decimal integer"},
		{name: "custom tag", file: "q.yaml", data: "tool_quota:\n  Bash: !limit 3\n",
			line: 2, key: "tool_quota.Bash", problem: "got a value tagged !limit"},
		{name: "tag with a newline is quoted", file: "q.yaml", data: "tool_quota:\n  Bash: !%0A 3\n",
			line: 2, key: "tool_quota.Bash", problem: `got a value tagged "!\n"`},
		{name: "long value is clipped", file: "q.yaml", data: "tool_quota:\n  Bash: " + strings.Repeat("x", 100) + "\n",
			line: 2, key: "tool_quota.Bash", problem: `got "` + strings.Repeat("x", 32) + `…"`},

		// Kinds.
		{name: "list for tool_quota", file: "q.yaml", data: "tool_quota:\n  - Bash\n",
			line: 2, key: "tool_quota", problem: "want a mapping of tool names to limits, got a list"},
		{name: "scalar for tool_quota", file: "q.yaml", data: "tool_quota: 10\n",
			line: 1, key: "tool_quota", problem: "got 10"},
		{name: "null tool_quota", file: "q.yaml", data: "tool_quota:\n",
			line: 1, key: "tool_quota", problem: "got null"},
		{name: "list for loop_detection", file: "q.yaml", data: "loop_detection: [5, 3]\n",
			line: 1, key: "loop_detection", problem: "want a mapping with same_call_window and max_retries, got a list"},
		{name: "tagged mapping", file: "q.yaml", data: "loop_detection: !rules {max_retries: 3}\n",
			line: 1, key: "loop_detection", problem: "got a mapping tagged !rules"},
		{name: "mapping for a limit", file: "q.yaml", data: "tool_quota:\n  Bash: {max: 3}\n",
			line: 2, key: "tool_quota.Bash", problem: "want a positive integer, got a mapping"},
		{name: "list for a limit", file: "q.yaml", data: "tool_quota:\n  Bash: [3]\n",
			line: 2, key: "tool_quota.Bash", problem: "got a list"},
		{name: "scalar for tools", file: "q.yaml", data: "tool_quota:\n  tools: 5\n",
			line: 2, key: "tool_quota.tools", problem: "write tool_quota: {tools: {tools: N}}"},
		{name: "list at the top", file: "q.yaml", data: "- tool_quota\n",
			line: 1, key: "", problem: "want a mapping of policy keys (tool_quota, loop_detection, tools, …), got a list"},
		{name: "scalar at the top", file: "q.yaml", data: "Bash: 10\n", line: 1, key: "Bash", problem: "unknown key"},

		// Aliases.
		{name: "alias for a limit", file: "a.md", data: "---\nten: &ten 10\ntool_quota:\n  Bash: *ten\n---\n",
			line: 4, key: "tool_quota.Bash", problem: "aliases are not allowed"},
		{name: "alias for tool_quota", file: "a.md", data: "---\nq: &q {Bash: 1}\ntool_quota: *q\n---\n",
			line: 3, key: "tool_quota", problem: "aliases are not allowed"},
		{name: "alias as a key", file: "a.md", data: "---\nn: &n Bash\ntool_quota:\n  *n : 3\n---\n",
			line: 4, key: "tool_quota.*n", problem: "aliases are not allowed"},
		{name: "alias without anchor", file: "q.yaml", data: "tool_quota:\n  Bash: 1\n  Edit: *nothing\n",
			line: 3, key: "", problem: "malformed YAML: alias *nothing refers to no anchor"},

		// Documents.
		{name: "bad indentation", file: "q.yaml", data: "tool_quota:\n  Bash: 10\n    WebFetch: 5\n",
			line: 3, key: "", problem: "malformed YAML: mapping values are not allowed in this context"},
		{name: "unclosed flow", file: "q.yaml", data: "tool_quota: {Bash: 10\n",
			line: 2, key: "", problem: "malformed YAML"},
		{name: "tab indentation", file: "q.yaml", data: "\ttool_quota: {}\n",
			line: 1, key: "", problem: "malformed YAML"},
		{name: "two documents", file: "q.yaml", data: "tool_quota: {Bash: 1}\n---\nloop_detection: {max_retries: 1}\n",
			line: 2, key: "", problem: "a second YAML document starts here"},
		{name: "markdown read as YAML", file: "agent.txt", data: "---\nname: a\n---\n# Agent\n",
			line: 3, key: "", problem: "use a name ending in .md"},
		{name: "malformed front matter", file: "agent.md", data: "---\nname: a\ndescription: Use it when: always\n---\n",
			line: 3, key: "", problem: "malformed YAML: mapping values are not allowed"},
		{name: "unterminated front matter", file: "agent.md", data: "---\nname: a\ntool_quota: {Bash: 1}\n",
			line: 1, key: "front matter", problem: `unterminated: no closing "---" line`},
		{name: "front matter opened only", file: "agent.md", data: "---",
			line: 1, key: "front matter", problem: "unterminated"},
		{name: "invalid UTF-8", file: "q.yaml", data: "tool_quota:\n  \"\xff\": 1\n",
			line: 1, key: "", problem: "malformed YAML: invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := quotafile.Parse(tt.file, []byte(tt.data))
			checkError(t, err, tt)
		})
	}
}

// checkError asserts that err holds an *Error as tt describes and that
// its message names the file, the line and the key.
func checkError(t *testing.T, err error, tt errorCase) {
	t.Helper()
	require.Error(t, err)
	var e *quotafile.Error
	require.True(t, errors.As(err, &e), "not an *Error: %v", err)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "quotafile: "), msg)
	assert.Equal(t, tt.file, e.File, msg)
	assert.Equal(t, tt.line, e.Line, msg)
	assert.Equal(t, tt.key, e.Key, msg)
	assert.Contains(t, e.Problem, tt.problem, msg)
	head := tt.file + ":" + strconv.Itoa(tt.line)
	if e.Column > 0 {
		head += ":" + strconv.Itoa(e.Column)
	}
	head += ": "
	if tt.key != "" {
		head += tt.key + ": "
	}
	assert.Contains(t, msg, head, "the message names the file, the line and the key")
}

func TestErrorMessage(t *testing.T) {
	e := &quotafile.Error{File: "q.yaml", Line: 3, Key: "tool_quota.Bash", Problem: "negative limit -1"}
	assert.Equal(t, "quotafile: q.yaml:3: tool_quota.Bash: negative limit -1", e.Error())
	e = &quotafile.Error{File: "q.yaml", Problem: "file is larger than 1 MiB"}
	assert.Equal(t, "quotafile: q.yaml: file is larger than 1 MiB", e.Error())
	e = &quotafile.Error{File: "a\nb.yaml", Line: 1, Problem: "x"}
	assert.Equal(t, `quotafile: "a\nb.yaml":1: x`, e.Error())
	e = &quotafile.Error{Line: 1, Problem: "x"}
	assert.Equal(t, `quotafile: "":1: x`, e.Error())
	e = &quotafile.Error{File: "q.yaml", Line: 2, Column: 9, Key: "tool_quota.Bash", Problem: "negative limit -1"}
	assert.Equal(t, "quotafile: q.yaml:2:9: tool_quota.Bash: negative limit -1", e.Error())
	e = &quotafile.Error{File: "q.yaml", Column: 9, Problem: "x"}
	assert.Equal(t, "quotafile: q.yaml: x", e.Error(), "a column without a line is not shown")
}

// TestPositions pins the line and column of YAML syntax errors, which come
// from the parser's typed *yaml.LoadError, and of problems in values.
func TestPositions(t *testing.T) {
	tests := []struct {
		name, file, data string
		line, col        int
	}{
		{"bad indentation", "q.yaml", "tool_quota:\n  Bash: 10\n    WebFetch: 5\n", 3, 13},
		{"alias without anchor", "q.yaml", "tool_quota:\n  Bash: 1\n  Edit: *nothing\n", 3, 9},
		{"front matter", "agent.md", "---\nname: a\ndescription: Use it when: always\n---\n", 3, 25},
		{"negative limit", "q.yaml", "tool_quota:\n  Bash: -1\n", 2, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := quotafile.Parse(tt.file, []byte(tt.data))
			var e *quotafile.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.line, e.Line, err.Error())
			assert.Equal(t, tt.col, e.Column, err.Error())
		})
	}
}

func TestSeveralErrors(t *testing.T) {
	data := "tool_quota:\n  Bash: -1\n  Edit: ten\nloop_detection:\n  max_retries: 0\n"
	_, err := quotafile.Parse("q.yaml", []byte(data))
	require.Error(t, err)
	assert.Equal(t, "quotafile: q.yaml:2:9: tool_quota.Bash: negative limit -1 (use a positive limit or remove the key)\n"+
		"quotafile: q.yaml:3:9: tool_quota.Edit: want a positive integer, got \"ten\"\n"+
		"quotafile: q.yaml:5:16: loop_detection.max_retries: limit 0 is not allowed (use a positive limit or remove the key)",
		err.Error())

	// At most ten problems, then a note.
	var b strings.Builder
	b.WriteString("tool_quota:\n")
	for i := range 50 {
		b.WriteString("  t" + strconv.Itoa(i) + ": -1\n")
	}
	_, err = quotafile.Parse("q.yaml", []byte(b.String()))
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 11)
	assert.Equal(t, "quotafile: q.yaml: too many problems; fix these first", lines[10])
}

func TestTooLarge(t *testing.T) {
	data := []byte("tool_quota: {Bash: 1}\n# " + strings.Repeat("x", quotafile.MaxSize) + "\n")
	_, err := quotafile.Parse("big.yaml", data)
	var e *quotafile.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "quotafile: big.yaml: file is larger than 1 MiB (1048576 bytes); a quota declaration is a few lines", err.Error())

	path := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	_, err = quotafile.Load(path)
	require.True(t, errors.As(err, &e))
	assert.Equal(t, path, e.File)
	assert.Contains(t, e.Problem, "larger than 1 MiB")

	// Exactly MaxSize is accepted.
	data = []byte("tool_quota: {Bash: 1}\n")
	data = append(data, '#')
	data = append(data, strings.Repeat("x", quotafile.MaxSize-len(data)-1)...)
	data = append(data, '\n')
	require.Len(t, data, quotafile.MaxSize)
	p, err := quotafile.Parse("max.yaml", data)
	require.NoError(t, err)
	assert.Equal(t, 1, p.AgentQuota.Tools["Bash"])
}

func TestLoad(t *testing.T) {
	p, err := quotafile.Load("testdata/quota.yaml")
	require.NoError(t, err)
	assert.Equal(t, want{
		quota:       &toolguard.Quota{Tools: map[string]int{"Bash": 10, "WebFetch": 5, "mcp__github__*": 8}, Default: 20},
		windowLimit: 5, maxFailures: 3,
	}, got(p))

	p, err = quotafile.Load("testdata/agent.md")
	require.NoError(t, err)
	assert.Equal(t, want{
		quota:       &toolguard.Quota{Tools: map[string]int{"Bash": 10, "WebFetch": 5}, Default: 20},
		windowLimit: 5, maxFailures: 3,
	}, got(p))

	p, err = quotafile.Load("testdata/agent-literal-defaults.md")
	require.NoError(t, err)
	assert.Equal(t, &toolguard.Quota{Tools: map[string]int{"defaults": 3, "tools": 2, "Edit": 15}, Default: 20}, p.AgentQuota)

	p, err = quotafile.Load("testdata/agent-no-quota.md")
	require.NoError(t, err)
	assert.Equal(t, want{}, got(p))

	_, err = quotafile.Load("testdata/missing.yaml")
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.True(t, strings.HasPrefix(err.Error(), "quotafile: "), err.Error())
	var e *quotafile.Error
	assert.False(t, errors.As(err, &e), "an I/O error is not a problem in the file")
}

// TestInvalidFixtures pins what each file in testdata/invalid reports, so
// that other commands can rely on them.
func TestInvalidFixtures(t *testing.T) {
	tests := []errorCase{
		{file: "billion-laughs.md", line: 13, key: "tool_quota", problem: "aliases are not allowed"},
		{file: "duplicate.yaml", line: 4, key: "tool_quota.Bash", problem: "duplicate key (first at line 2)"},
		{file: "empty-name.yaml", line: 2, key: `tool_quota.""`, problem: "empty tool name"},
		{file: "malformed.yaml", line: 3, problem: "malformed YAML"},
		{file: "negative.yaml", line: 3, key: "tool_quota.WebFetch", problem: "negative limit -5"},
		{file: "not-integer.yaml", line: 2, key: "tool_quota.Bash", problem: `got "ten"`},
		{file: "unknown-key.yaml", line: 4, key: "loop_detection.same_call_windw", problem: "unknown key"},
		{file: "unterminated.md", line: 1, key: "front matter", problem: "unterminated"},
		{file: "wrong-kind.yaml", line: 2, key: "tool_quota", problem: "got a list"},
		{file: "zero.md", line: 5, key: "tool_quota.Bash", problem: "limit 0 is not allowed"},
	}
	files, err := filepath.Glob("testdata/invalid/*")
	require.NoError(t, err)
	require.Len(t, files, len(tests), "every fixture has a case")
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tt.file = filepath.Join("testdata", "invalid", tt.file)
			start := time.Now()
			_, err := quotafile.Load(tt.file)
			checkError(t, err, tt)
			assert.Less(t, time.Since(start), 2*time.Second)
		})
	}
}

func TestBillionLaughs(t *testing.T) {
	// Nine levels of nine: 9^9 strings if the aliases were expanded.
	var b strings.Builder
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		prev := "*a" + strconv.Itoa(i-1)
		b.WriteString("a" + strconv.Itoa(i) + ": &a" + strconv.Itoa(i) + " [")
		b.WriteString(strings.Repeat(prev+", ", 8) + prev + "]\n")
	}
	laughs := b.String()
	for _, tt := range []struct{ file, data string }{
		{"a.md", "---\n" + laughs + "tool_quota:\n  Bash: *a9\n---\n"},
		{"a.md", "---\n" + laughs + "tool_quota: *a9\n---\n"},
		{"a.md", "---\n" + laughs + "loop_detection: {max_retries: *a9}\n---\n"},
	} {
		start := time.Now()
		_, err := quotafile.Parse(tt.file, []byte(tt.data))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "aliases are not allowed")
		assert.Less(t, time.Since(start), time.Second)
	}

	// In a plain file the keys of the laughs are unknown.
	start := time.Now()
	_, err := quotafile.Parse("q.yaml", []byte(laughs+"tool_quota: *a9\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "quotafile: q.yaml:1:1: a0: unknown key")
	assert.Less(t, time.Since(start), time.Second)

	// Aliases in keys an agent definition owns are never followed.
	p, err := quotafile.Parse("a.md", []byte("---\n"+laughs+"tool_quota: {Bash: 1}\n---\n"))
	require.NoError(t, err)
	assert.Equal(t, 1, p.AgentQuota.Tools["Bash"])
}

func TestDeepNesting(t *testing.T) {
	for _, data := range []string{
		"tool_quota: " + strings.Repeat("[", 100000),
		"tool_quota: " + strings.Repeat("{a: ", 20000),
		strings.Repeat("- ", 50000) + "x\n",
	} {
		start := time.Now()
		_, err := quotafile.Parse("q.yaml", []byte(data))
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), "quotafile: q.yaml:"), err.Error())
		assert.Less(t, time.Since(start), 2*time.Second)
	}
}

func TestApply(t *testing.T) {
	base, err := toolguard.Preset("quota-rule")
	require.NoError(t, err)
	platform := &toolguard.Quota{Tools: map[string]int{"Bash": 4}}
	base.PlatformQuota = platform
	base.AgentQuota = &toolguard.Quota{Tools: map[string]int{"Edit": 1}}
	before := base

	p, err := quotafile.Apply(base, "agent.md", []byte("---\nname: a\ntool_quota: {Bash: 10, defaults: 20}\nloop_detection: {max_retries: 2}\n---\n"))
	require.NoError(t, err)
	assert.Equal(t, &toolguard.Quota{Tools: map[string]int{"Bash": 10}, Default: 20}, p.AgentQuota, "tool_quota replaces the agent quota")
	assert.Equal(t, 2, p.MaxFailures)
	assert.Equal(t, base.WindowLimit, p.WindowLimit, "not set: stays")
	assert.Equal(t, base.Window, p.Window)
	assert.Same(t, platform, p.PlatformQuota)
	assert.Equal(t, base.HighCostTools, p.HighCostTools)
	assert.Equal(t, map[string]int{"Edit": 1}, base.AgentQuota.Tools, "base is not modified")
	assert.Equal(t, before.MaxFailures, base.MaxFailures)

	// Nothing declared: base comes back as it was.
	p, err = quotafile.Apply(base, "agent.md", []byte("# no front matter\n"))
	require.NoError(t, err)
	assert.Same(t, base.AgentQuota, p.AgentQuota)
	assert.Equal(t, base.MaxFailures, p.MaxFailures)

	// On error, base comes back unchanged, even for the fields that were valid.
	p, err = quotafile.Apply(base, "q.yaml", []byte("tool_quota: {Bash: 10}\nloop_detection: {max_retries: -1}\n"))
	require.Error(t, err)
	assert.Same(t, base.AgentQuota, p.AgentQuota)
	assert.Equal(t, base.MaxFailures, p.MaxFailures)
}

func call(tool, args string) toolguard.Call {
	return toolguard.Call{Tool: tool, Args: json.RawMessage(args)}
}

// TestLoadedPolicyLimitsTracker runs a real Tracker with a loaded policy:
// with Bash: 2 the third Bash call of the session is stopped by the
// agent quota, in a later turn too.
func TestLoadedPolicyLimitsTracker(t *testing.T) {
	for _, file := range []string{"q.yaml", "agent.md"} {
		t.Run(file, func(t *testing.T) {
			data := "tool_quota:\n  Bash: 2\n  defaults: 20\n"
			if file == "agent.md" {
				data = "---\nname: shell\ntools: Bash\n" + data + "---\nRuns commands.\n"
			}
			p, err := quotafile.Parse(file, []byte(data))
			require.NoError(t, err)
			tr := toolguard.NewTracker(p)

			for i, cmd := range []string{"ls", "pwd"} {
				c := call("Bash", `{"command":"`+cmd+`"}`)
				d := tr.ShouldSkip(c)
				require.Equal(t, toolguard.Allow, d.Verdict, "call %d: %s", i+1, d.Message)
				tr.Record(c, toolguard.Outcome{Result: "output of " + cmd})
				tr.Reset() // a new turn: session quotas keep counting
			}

			d := tr.ShouldSkip(call("Bash", `{"command":"whoami"}`))
			assert.Equal(t, toolguard.Hint, d.Verdict)
			assert.Equal(t, toolguard.ReasonToolLimit, d.Reason)
			assert.True(t, strings.HasPrefix(d.Message, toolguard.HintMarker), d.Message)
			assert.Contains(t, d.Message, "agent quota: 2")
			assert.Contains(t, d.Message, "Bash")

			// Other tools still run under the agent's defaults.
			d = tr.ShouldSkip(call("Read", `{"path":"README.md"}`))
			assert.Equal(t, toolguard.Allow, d.Verdict, d.Message)
		})
	}
}

// TestLoadedDefaultsLimitTracker checks that defaults is the limit of every
// tool the file does not name.
func TestLoadedDefaultsLimitTracker(t *testing.T) {
	p, err := quotafile.Parse("q.yaml", []byte("tool_quota: {Bash: 5, defaults: 1}\n"))
	require.NoError(t, err)
	tr := toolguard.NewTracker(p)
	c := call("Read", `{"path":"a"}`)
	require.Equal(t, toolguard.Allow, tr.ShouldSkip(c).Verdict)
	tr.Record(c, toolguard.Outcome{Result: "a"})
	d := tr.ShouldSkip(call("Read", `{"path":"b"}`))
	assert.Equal(t, toolguard.ReasonToolLimit, d.Reason)
	assert.Contains(t, d.Message, "agent quota: 1")
	assert.Equal(t, toolguard.Allow, tr.ShouldSkip(call("Bash", `{"command":"ls"}`)).Verdict)
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"tool_quota:\n  Bash: 10\n  WebFetch: 5\n  defaults: 20\nloop_detection:\n  same_call_window: 5\n  max_retries: 3\n",
		"tool_quota: {tools: {defaults: 3}, defaults: 2}",
		"---\nname: a\ntool_quota: {Bash: 1}\n---\nbody",
		"---\nname: a\n",
		"a: &a [x, x]\nb: &b [*a, *a]\ntool_quota: *b\n",
		"tool_quota:\n  Bash: -1\n  Bash: 1.5\n  '': ten\n",
		"tool_quota: [",
		"\uFEFF---\r\n---\r\n",
		"tool_quota: {<<: {a: 1}}",
		"loop_detection: {same_call_window: 0x10, max_retries: 010}",
		"preset: quota-rule\nmax_calls_per_turn: off\naction: abort\ntools:\n  'mcp__*': {max_repeats: 4, read_only: false}\n  poll: {exempt: true}\n",
		"nudge_ratio: 0.5\nsearch_tools: []\nshared_quotas:\n  - {name: a, limit: 3, window: 1h, per_tool: true}\nstore_timeout: 1s\n",
		"budget_unit: rounds\nsimilarity_threshold: off\nmax_failures: 2\nloop_detection: {max_retries: 2}\n",
	} {
		for _, name := range []string{"q.yaml", "agent.md"} {
			f.Add(name, []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		p, err := quotafile.Parse(name, data)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "quotafile: ") {
					t.Fatalf("error line without the package name: %q", line)
				}
			}
			var e *quotafile.Error
			if !errors.As(err, &e) || e.File != name {
				t.Fatalf("not an *Error naming %q: %v", name, err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("loaded an invalid policy: %v", err)
		}
		// What a plain file declares round-trips through Format.
		if !strings.HasSuffix(strings.ToLower(name), ".md") && !strings.HasSuffix(strings.ToLower(name), ".markdown") {
			out, err := quotafile.Format(p)
			if err != nil {
				t.Fatalf("Format of a parsed policy: %v", err)
			}
			back, err := quotafile.Parse("back.yaml", out)
			if err != nil {
				t.Fatalf("Parse of Format: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(p, back) {
				t.Fatalf("round trip changed the policy:\n%s", out)
			}
		}
		if q := p.AgentQuota; q != nil {
			if q.Default < 0 {
				t.Fatalf("negative default %d", q.Default)
			}
			for tool, n := range q.Tools {
				if tool == "" || n <= 0 {
					t.Fatalf("bad entry %q: %d", tool, n)
				}
			}
		}
		if p.WindowLimit < 0 || p.MaxFailures < 0 {
			t.Fatalf("negative loop detection: %+v", p)
		}
		// Layering onto the result again gives the same declaration.
		p2, err := quotafile.Apply(p, name, data)
		if err != nil || !assert.ObjectsAreEqual(got(p), got(p2)) {
			t.Fatalf("Apply is not idempotent: %v", err)
		}
	})
}

// TestLargestFileIsFast parses a file just under MaxSize: the cost is
// linear in the size.
func TestLargestFileIsFast(t *testing.T) {
	var b strings.Builder
	b.WriteString("tool_quota:\n")
	for i := 0; b.Len() < quotafile.MaxSize-64; i++ {
		b.WriteString("  tool_" + strconv.Itoa(i) + ": 7\n")
	}
	start := time.Now()
	p, err := quotafile.Parse("big.yaml", []byte(b.String()))
	require.NoError(t, err)
	assert.Greater(t, len(p.AgentQuota.Tools), 50000)
	assert.Less(t, time.Since(start), 30*time.Second, "linear in the size, even on a loaded machine under -race")
}

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/agent.md")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := quotafile.Parse("agent.md", data); err != nil {
			b.Fatal(err)
		}
	}
}
