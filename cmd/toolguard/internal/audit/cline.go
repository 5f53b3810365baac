package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Cline and Roo Code keep each task's conversation in
// api_conversation_history.json: an array of Anthropic-style messages. The
// assistant asks for a tool either with a tool_use block (native tool
// calling) or, in the classic form, with an XML element in its text
// (<read_file><path>a.go</path></read_file>); the result comes back in the
// next user message as a text block "[read_file for 'a.go'] Result:
// ..." (or a tool_result block).

// clineMessage is one message of the history.
type clineMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Metrics *struct {
		Tokens *struct {
			Prompt     int `json:"prompt"`
			Completion int `json:"completion"`
		} `json:"tokens"`
		// The CLI's sessions: the prompt's tokens (cache reads
		// included) and the response's.
		InputTokens  int `json:"inputTokens"`
		OutputTokens int `json:"outputTokens"`
	} `json:"metrics"`
}

var (
	// clineResultRe is the header of a result text block.
	clineResultRe = regexp.MustCompile(`^\[([A-Za-z_][\w-]*)(?: for [^\]]*)?\] Result:`)
	// clineToolRe finds a classic XML tool call: a known tool's element.
	clineToolRe  = regexp.MustCompile(`(?s)<(` + strings.Join(clineTools, "|") + `)>(.*?)</(?:` + strings.Join(clineTools, "|") + `)>`)
	clineParamRe = regexp.MustCompile(`(?s)<([a-z_]+)>(.*?)</([a-z_]+)>`)
	// clineOpenToolRe finds the opening tags of calls, for a call the
	// extension cut off: the message then ends with "[Response interrupted
	// by a tool use result. …]" and the call has no closing tags.
	clineOpenToolRe = regexp.MustCompile(`<(` + strings.Join(clineTools, "|") + `)>`)
	// clineOpenParamRe is the parameter a cut-off call ends in.
	clineOpenParamRe = regexp.MustCompile(`(?s)<([a-z_]+)>([^<]*)\z`)
)

// clineTools are the tools of Cline and Roo Code that the classic form
// writes as XML elements.
var clineTools = []string{"execute_command", "read_file", "write_to_file", "replace_in_file", "apply_diff",
	"insert_content", "search_and_replace", "search_files", "list_files", "list_code_definition_names",
	"codebase_search", "browser_action", "use_mcp_tool", "access_mcp_resource", "ask_followup_question",
	"attempt_completion", "new_task", "plan_mode_respond", "web_fetch", "fetch_instructions", "switch_mode",
	"update_todo_list", "load_mcp_documentation", "new_rule", "condense", "report_bug"}

// clineFailures start the text of a result that failed.
var clineFailures = []string{"The tool execution failed", "Error", "[ERROR]", "<error>"}

// clineReader reads one task: one episode. Results without a tool_use_id
// complete the oldest calls still waiting, in order.
type clineReader struct {
	s       *session
	waiting []string // call ids without a result, oldest first
	n       int      // calls read, for the ids of classic calls
}

func newClineReader(name string) *clineReader {
	return &clineReader{s: newSession(path.Base(path.Dir(name)))}
}

func (r *clineReader) record(line int, data []byte) error {
	var m clineMessage
	if err := decode(data, &m); err != nil {
		return describeErr(err)
	}
	s := r.s
	s.line = line
	blocks, err := contentBlocks(m.Content, "content")
	if err != nil {
		return err
	}
	if jsonKind(m.Content) == "string" {
		t, _ := contentText(m.Content, "")
		tt := text(t)
		blocks = []block{{Type: "text", Text: &tt}}
	}
	if m.Role == "assistant" {
		return r.assistant(&m, blocks)
	}
	said := ""
	// A "[TOOL for '…'] Result:" block's body goes on in the text blocks
	// after it, up to the next result or the environment details; the
	// body of a result that answers no call is skipped.
	var bodyID string
	var body []string
	inBody := false
	flush := func() {
		if bodyID != "" {
			t := strings.TrimSpace(strings.Join(body, "\n"))
			s.result(bodyID, t, clineFailed(t))
		}
		bodyID, body, inBody = "", nil, false
	}
	for i := range blocks {
		b := &blocks[i]
		switch {
		case b.Type == "tool_result":
			flush()
			out, _ := contentText(b.Content, "")
			if out == "" && jsonKind(b.Content) == "array" {
				// The CLI writes a tool's results as a list of
				// {query, result} objects: the list is the result.
				out = string(b.Content)
			}
			r.done(b.ToolUseID)
			s.result(b.ToolUseID, out, b.IsError != nil && *b.IsError)
		case b.Text != nil && clineResultRe.MatchString(string(*b.Text)):
			flush()
			inBody = true
			if len(r.waiting) == 0 {
				s.orphans++
				continue
			}
			bodyID = r.waiting[0]
			r.waiting = r.waiting[1:]
			_, first, _ := strings.Cut(string(*b.Text), "] Result:")
			body = []string{first}
		case b.Text != nil && strings.HasPrefix(strings.TrimSpace(string(*b.Text)), "<environment_details>"):
			flush()
		case b.Text != nil && inBody:
			body = append(body, string(*b.Text))
		case b.Text != nil && said == "" && !clineReminder(string(*b.Text)):
			said = string(*b.Text)
		}
	}
	flush()
	// Text outside the results is the user's: the <task>, a <feedback>,
	// or the new instructions of a resumed task after a result.
	if said != "" {
		s.note("user messages")
		s.userTurn(clineTask(said))
	}
	return nil
}

// assistant books the calls of an assistant message: its tool_use blocks,
// or else the classic XML tool call in its text.
func (r *clineReader) assistant(m *clineMessage, blocks []block) error {
	// Results answer the message before them: a call still waiting (a
	// task resumed, or condensed, before its result) has none.
	r.waiting = r.waiting[:0]
	prompt, output := 0, 0
	if m.Metrics != nil && m.Metrics.Tokens != nil {
		prompt, output = m.Metrics.Tokens.Prompt, m.Metrics.Tokens.Completion
	} else if m.Metrics != nil {
		prompt, output = m.Metrics.InputTokens, m.Metrics.OutputTokens
	}
	var calls []Call
	for i := range blocks {
		if b := &blocks[i]; b.Type == "tool_use" {
			calls = append(calls, Call{ID: b.ID, Tool: b.Name, Args: rawArgs(b.Input)})
		}
	}
	if len(calls) == 0 {
		for i := range blocks {
			if b := &blocks[i]; b.Text != nil {
				if c, ok := clineXMLCall(string(*b.Text)); ok {
					r.n++
					c.ID = "xml-" + strconv.Itoa(r.n)
					calls = append(calls, c)
				}
			}
		}
	}
	if len(calls) == 0 {
		r.s.note("assistant messages without tool calls")
		r.s.response(prompt)
		return nil
	}
	for _, c := range calls {
		r.waiting = append(r.waiting, c.ID)
	}
	r.s.calls("", prompt, output, calls...)
	return nil
}

// done drops an id from the calls waiting for a result.
func (r *clineReader) done(id string) {
	for i, w := range r.waiting {
		if w == id {
			r.waiting = append(r.waiting[:i], r.waiting[i+1:]...)
			return
		}
	}
}

func (r *clineReader) finish() ([]Episode, map[string]int, error) {
	if len(r.s.ep.Calls) == 0 {
		return nil, r.s.seen, nil
	}
	return []Episode{r.s.finish()}, r.s.seen, nil
}

// The Cline CLI keeps a session in
// ~/.cline/data/sessions/ID/ID.messages.json: one object with the
// sessionId and the messages, which are the messages of a task history
// (tool_use and tool_result blocks, usage in metrics).

// clineSessionReader reads a CLI session: its messages in order, each with
// its line, through the task history's reader; the episode is named by
// the sessionId.
type clineSessionReader struct {
	clineReader
}

func newClineSessionReader(name string) *clineSessionReader {
	return &clineSessionReader{clineReader: *newClineReader(name)}
}

func (r *clineSessionReader) record(line int, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("a Cline session is a JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return describeErr(err)
		}
		switch key {
		case "sessionId":
			var id string
			if err := dec.Decode(&id); err != nil {
				return fmt.Errorf("sessionId: %w", describeErr(err))
			}
			r.s.ep.Name = id
		case "messages":
			off := int(dec.InputOffset())
			for off < len(data) && strings.IndexByte(" \t\r\n:", data[off]) >= 0 {
				off++
			}
			msgs, err := arrayRecords(record{line: line + bytes.Count(data[:off], []byte("\n")), data: data[off:]})
			if err != nil {
				return fmt.Errorf("messages: %w", err)
			}
			for _, m := range msgs {
				if err := r.clineReader.record(m.line, m.data); err != nil {
					return err
				}
			}
			return nil
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return describeErr(err)
			}
		}
	}
	return errors.New("a Cline session without messages")
}

// clineXMLCall reads the first classic tool call of an assistant text: the
// tool's element, its parameters as a JSON object of strings.
func clineXMLCall(t string) (Call, bool) {
	m := clineToolRe.FindStringSubmatch(t)
	if before, _, cut := strings.Cut(t, "[Response interrupted by"); m == nil && cut {
		// The last call opened runs to the interruption.
		if all := clineOpenToolRe.FindAllStringSubmatchIndex(before, -1); len(all) > 0 {
			last := all[len(all)-1]
			m = []string{before[last[0]:], before[last[2]:last[3]], before[last[1]:]}
		}
	}
	if m == nil {
		return Call{}, false
	}
	args := map[string]string{}
	for _, p := range clineParamRe.FindAllStringSubmatch(m[2], -1) {
		if p[1] == p[3] {
			args[p[1]] = strings.TrimSpace(p[2])
		}
	}
	if p := clineOpenParamRe.FindStringSubmatch(m[2]); p != nil {
		if _, ok := args[p[1]]; !ok {
			args[p[1]] = strings.TrimSpace(p[2])
		}
	}
	raw, _ := json.Marshal(args)
	return Call{Tool: m[1], Args: raw}, true
}

// clineFailed reports a result that says the tool failed.
func clineFailed(body string) bool {
	for _, f := range clineFailures {
		if strings.HasPrefix(body, f) {
			return true
		}
	}
	return false
}

// clineReminder reports a message the extension writes as the user's
// when the model answered without a tool ("[ERROR] You did not use a
// tool in your previous response! …"): it is not a user turn.
func clineReminder(t string) bool {
	return strings.HasPrefix(strings.TrimSpace(t), "[ERROR] You did not use a tool")
}

// clineTask returns what the user asked: the text inside <task>, or the
// text itself.
func clineTask(t string) string {
	t = strings.TrimSpace(t)
	for _, tag := range []string{"task", "feedback", "user_message", "answer"} {
		if strings.HasPrefix(t, "<"+tag+">") {
			inner, _, _ := strings.Cut(strings.TrimPrefix(t, "<"+tag+">"), "</"+tag+">")
			return inner
		}
	}
	return t
}

// clineStart reports whether the first message of an array is a Cline or
// Roo Code task: a user message whose first text starts with <task>.
func clineStart(el json.RawMessage) bool {
	var m clineMessage
	if decode(el, &m) != nil || m.Role != "user" {
		return false
	}
	t, _ := contentText(m.Content, "")
	return strings.HasPrefix(strings.TrimSpace(t), "<task>")
}
