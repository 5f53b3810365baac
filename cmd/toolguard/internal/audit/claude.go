package audit

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// claudeRecord is one line of a Claude Code session transcript: the fields
// the replay needs, decoded once.
type claudeRecord struct {
	Type             string `json:"type"`
	UUID             string `json:"uuid"`
	ParentUUID       string `json:"parentUuid"`
	SessionID        string `json:"sessionId"`
	SessionIDS       string `json:"session_id"` // the headless stream-json output
	ParentToolUseID  string `json:"parent_tool_use_id"`
	AgentID          string `json:"agentId"`
	Cwd              string `json:"cwd"`
	IsSidechain      bool   `json:"isSidechain"`
	IsMeta           bool   `json:"isMeta"`
	IsCompactSummary bool   `json:"isCompactSummary"`
	Message          *struct {
		ID      string          `json:"id"`
		Content json.RawMessage `json:"content"`
		Usage   *anthropicUsage `json:"usage"`
	} `json:"message"`
}

// anthropicUsage is the usage of an Anthropic Messages response.
type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// prompt is every input token the response read, cached or not.
func (u *anthropicUsage) prompt() int {
	if u == nil {
		return 0
	}
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

func (u *anthropicUsage) output() int {
	if u == nil {
		return 0
	}
	return u.OutputTokens
}

// claudeReader reads a Claude Code session: the main chain is one episode,
// each sidechain (a subagent) another. A subagent is told by its agentId;
// Claude Code 1.0.x wrote its subagents inline without one, each chain
// starting at a user line whose parentUuid is null, so there a line joins
// the chain of its parent. Lines that repeat a uuid already read (a
// resumed session copies its history) are skipped.
type claudeReader struct {
	name     string
	project  string
	chains   map[string]*session // "" for the main chain
	order    []string
	seenUUID map[string]bool
	seen     map[string]int
	// sideOf is the inline sidechain of each line read without an agentId
	// (Claude Code 1.0.x); sides counts those chains.
	sideOf map[string]string
	sides  int
}

func newClaudeReader(name string) *claudeReader {
	return &claudeReader{name: name, chains: map[string]*session{}, seenUUID: map[string]bool{},
		seen: map[string]int{}, sideOf: map[string]string{}}
}

func (r *claudeReader) record(line int, data []byte) error {
	var rec claudeRecord
	if err := decode(data, &rec); err != nil {
		return describeErr(err)
	}
	if rec.UUID != "" {
		if r.seenUUID[rec.UUID] {
			return nil
		}
		r.seenUUID[rec.UUID] = true
	}
	if r.project == "" && rec.Cwd != "" {
		r.project = rec.Cwd
	}
	side := r.sidechain(&rec)
	if (rec.Type != "user" && rec.Type != "assistant") || rec.Message == nil {
		r.seen[orDash(rec.Type)+" records"]++
		return nil
	}
	s := r.chain(rec, side)
	s.line = line
	m := rec.Message
	if rec.Type == "assistant" {
		blocks, err := contentBlocks(m.Content, "message.content")
		if err != nil {
			return err
		}
		var calls []Call
		for i := range blocks {
			b := &blocks[i]
			switch b.Type {
			case "tool_use", "server_tool_use", "mcp_tool_use":
				calls = append(calls, Call{ID: b.ID, Tool: b.Name, Args: rawArgs(b.Input)})
			case "text", "thinking", "redacted_thinking":
				s.note("assistant " + b.Type + " blocks")
			default:
				if err := resultBlock(s, b); err != nil {
					return err
				}
			}
		}
		if len(calls) == 0 {
			// A line of a response whose calls were read on earlier lines
			// carries the usage at that point of the stream: keep the last.
			if !s.sameResponse(m.ID, m.Usage.prompt(), m.Usage.output()) {
				s.response(m.Usage.prompt())
			}
			return nil
		}
		s.calls(m.ID, m.Usage.prompt(), m.Usage.output(), calls...)
		return nil
	}
	if rec.IsMeta || rec.IsCompactSummary {
		s.note("meta user messages")
		return nil
	}
	if jsonKind(m.Content) == "string" {
		s.note("user messages")
		text, _ := contentText(m.Content, "")
		s.userTurn(text)
		return nil
	}
	blocks, err := contentBlocks(m.Content, "message.content")
	if err != nil {
		return err
	}
	newTurn, said := false, ""
	for i := range blocks {
		b := &blocks[i]
		if b.Type == "text" && b.Text != nil && said == "" {
			said = string(*b.Text)
		}
		if b.Type == "tool_result" {
			text, err := contentText(b.Content, "message.content.content")
			if err != nil {
				return err
			}
			s.result(b.ToolUseID, text, b.IsError != nil && *b.IsError)
			continue
		}
		newTurn = true
	}
	if newTurn {
		s.note("user messages")
		s.userTurn(said)
	}
	return nil
}

// sidechain returns the key of the record's sidechain: "task-ID" for a
// subagent of the headless output (its Task call's id), "agent-ID" for a
// subagent with an agentId, "sidechain-N" for the N-th inline chain of a
// Claude Code 1.0.x session, "" for the main chain.
func (r *claudeReader) sidechain(rec *claudeRecord) string {
	switch {
	case rec.ParentToolUseID != "":
		// The headless output: a subagent's messages name its Task call.
		return "task-" + rec.ParentToolUseID
	case !rec.IsSidechain:
		return ""
	case rec.AgentID != "":
		return "agent-" + rec.AgentID
	}
	key, ok := r.sideOf[rec.ParentUUID]
	if !ok || rec.ParentUUID == "" {
		r.sides++
		key = fmt.Sprintf("sidechain-%d", r.sides)
	}
	if rec.UUID != "" {
		r.sideOf[rec.UUID] = key
	}
	return key
}

// chain returns the session of the chain key.
func (r *claudeReader) chain(rec claudeRecord, key string) *session {
	s := r.chains[key]
	if s == nil {
		name := rec.SessionID
		if name == "" {
			name = rec.SessionIDS
		}
		if name == "" {
			name = strings.TrimSuffix(path.Base(r.name), ".jsonl")
		}
		if key != "" {
			name += "/" + key
		}
		s = newSession(name)
		r.chains[key] = s
		r.order = append(r.order, key)
	}
	return s
}

func (r *claudeReader) finish() ([]Episode, map[string]int, error) {
	var eps []Episode
	for _, k := range r.order {
		s := r.chains[k]
		for kind, n := range s.seen {
			r.seen[kind] += n
		}
		if len(s.ep.Calls) == 0 {
			continue
		}
		ep := s.finish()
		ep.Project = r.project
		eps = append(eps, ep)
	}
	return eps, r.seen, nil
}

// resultBlock reads the result blocks that Anthropic server tools put in
// the assistant message itself (web_search_tool_result, mcp_tool_result,
// ...), and notes any other block.
func resultBlock(s *session, b *block) error {
	if b.ToolUseID == "" || !strings.HasSuffix(b.Type, "_result") {
		s.note("unrecognized " + clip(b.Type) + " blocks")
		return nil
	}
	text, failed, err := serverResult(b)
	if err != nil {
		return err
	}
	s.result(b.ToolUseID, text, failed)
	return nil
}

// serverResult reads a server or MCP tool result block: its text, and
// whether it failed (is_error, or a content object whose type ends in
// "_error", as web_search_tool_result_error).
func serverResult(b *block) (string, bool, error) {
	failed := b.IsError != nil && *b.IsError
	if jsonKind(b.Content) == "object" {
		var e struct {
			Type      string `json:"type"`
			ErrorCode string `json:"error_code"`
		}
		if err := decodeField(b.Content, &e, "content"); err != nil {
			return "", false, err
		}
		if strings.HasSuffix(e.Type, "_error") {
			return e.ErrorCode, true, nil
		}
		return string(b.Content), failed, nil
	}
	text, err := contentText(b.Content, "content")
	if err != nil {
		// A list of search results is not a list of text blocks: keep it whole.
		return string(b.Content), failed, nil
	}
	if text == "" && jsonKind(b.Content) == "array" {
		text = string(b.Content)
	}
	return text, failed, nil
}

// contentBlocks decodes message content that is a list of blocks; a string
// or null is no block.
func contentBlocks(raw json.RawMessage, path string) ([]block, error) {
	if jsonKind(raw) != "array" {
		return nil, nil
	}
	var bs []block
	err := decodeField(raw, &bs, path)
	return bs, err
}

// rawArgs is nil for absent or null arguments.
func rawArgs(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}
