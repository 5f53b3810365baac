package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// fileReader reads the records of one transcript in order; finish returns
// its episodes and what it saw (for the error of a file without calls).
type fileReader interface {
	record(line int, data []byte) error
	finish() ([]Episode, map[string]int, error)
}

// probe holds the keys that tell the formats apart, from a file's first
// record.
type probe struct {
	Type          string          `json:"type"`
	Payload       json.RawMessage `json:"payload"`
	SessionID     json.RawMessage `json:"sessionId"`
	SessionIDS    json.RawMessage `json:"session_id"`
	ProjectHash   json.RawMessage `json:"projectHash"`
	UUID          json.RawMessage `json:"uuid"`
	LeafUUID      json.RawMessage `json:"leafUuid"`
	Snapshot      json.RawMessage `json:"snapshot"`
	Object        string          `json:"object"`
	ResourceSpans json.RawMessage `json:"resourceSpans"`
	Calls         json.RawMessage `json:"calls"`
	Messages      json.RawMessage `json:"messages"`
	Input         json.RawMessage `json:"input"`
	ID            json.RawMessage `json:"id"`
	Instructions  json.RawMessage `json:"instructions"`
	CallID        json.RawMessage `json:"call_id"`
	SchemaVersion string          `json:"schema_version"`
	Steps         json.RawMessage `json:"steps"`
	Data          json.RawMessage `json:"data"`
	Action        json.RawMessage `json:"action"`
	Observation   json.RawMessage `json:"observation"`
	Source        string          `json:"source"`
	WorkingDir    json.RawMessage `json:"working_dir"`
	MessageCount  json.RawMessage `json:"message_count"`
	Info          json.RawMessage `json:"info"`
	Agent         json.RawMessage `json:"agent"`
	Version       json.RawMessage `json:"version"`
}

var (
	claudeTypes = map[string]bool{"user": true, "assistant": true, "summary": true, "system": true,
		"file-history-snapshot": true, "queue-operation": true, "progress": true}
	// streamTypes are the messages of Claude Code's headless output
	// (claude -p --output-format stream-json), which carry session_id.
	streamTypes = map[string]bool{"system": true, "assistant": true, "user": true, "result": true}
	codexTypes  = map[string]bool{"session_meta": true, "response_item": true, "event_msg": true,
		"turn_context": true, "compacted": true}
	responsesItemTypes = map[string]bool{"message": true, "function_call": true, "function_call_output": true,
		"custom_tool_call": true, "custom_tool_call_output": true, "reasoning": true}
)

// detection is what a file's first record says about the file.
type detection struct {
	format Format
	// perRecord: each record is read on its own (the episode format and
	// conversation objects); otherwise newReader reads the whole file.
	perRecord bool
	newReader func(name string) fileReader
	// array: the file is one JSON array whose elements are the records
	// newReader reads (the execution file of claude-code-action).
	array bool
}

// detect tells the format of a file from its first record.
func detect(first []byte) (detection, error) {
	t := strings.TrimSpace(string(first[:min(len(first), 16)]))
	if strings.HasPrefix(t, "[") {
		if el, ok := firstElement(first); ok {
			if clineStart(el) {
				return detection{format: FormatCline, array: true, newReader: func(n string) fileReader { return newClineReader(n) }}, nil
			}
			if d, err := detect(el); err == nil && d.newReader != nil && (d.format == FormatClaudeCode || d.format == FormatOpenHands) {
				d.array = true
				return d, nil
			}
		}
		return detection{format: FormatMessages, perRecord: true}, nil
	}
	var p probe
	if err := json.Unmarshal(first, &p); err != nil {
		return detection{}, fmt.Errorf("the first record is not a JSON object: %s", describeJSON(err, ""))
	}
	has := func(r json.RawMessage) bool { return len(r) > 0 && string(r) != "null" }
	switch {
	case len(p.Calls) > 0:
		return detection{format: FormatEpisodes, perRecord: true}, nil
	case strings.HasPrefix(p.SchemaVersion, "ATIF") && has(p.Steps):
		return detection{format: FormatATIF, newReader: func(n string) fileReader { return newATIFReader(n) }}, nil
	case p.Source != "" && (has(p.Action) || has(p.Observation)) && has(p.ID):
		// An OpenHands event; a trajectory is an array of them.
		return detection{format: FormatOpenHands, newReader: func(n string) fileReader { return newOpenHandsReader(n) }}, nil
	case has(p.WorkingDir) && has(p.MessageCount):
		// Goose's session metadata line.
		return detection{format: FormatGoose, newReader: func(n string) fileReader { return newGooseReader(n) }}, nil
	case has(p.Info) && has(p.Messages) && opencodeStart(p.Messages):
		return detection{format: FormatOpencode, newReader: func(n string) fileReader { return newOpencodeReader(n) }}, nil
	case has(p.SessionID) && has(p.Messages) && has(p.Agent) && has(p.Version):
		// A Cline CLI session (ID.messages.json): version, agent,
		// sessionId, messages.
		return detection{format: FormatCline, newReader: func(n string) fileReader { return newClineSessionReader(n) }}, nil
	case copilotTypes[p.Type] && has(p.Data):
		return detection{format: FormatCopilot, newReader: func(n string) fileReader { return newCopilotReader(n) }}, nil
	case has(p.ResourceSpans):
		return detection{format: FormatOTLP, newReader: func(string) fileReader { return newOTLPReader() }}, nil
	case has(p.SessionID) && has(p.ProjectHash):
		return detection{format: FormatGemini, newReader: func(n string) fileReader { return newGeminiReader(n) }}, nil
	case codexTypes[p.Type] && has(p.Payload):
		return detection{format: FormatCodex, newReader: func(n string) fileReader { return newCodexReader(n) }}, nil
	case claudeTypes[p.Type] && (has(p.SessionID) || has(p.UUID) || has(p.LeafUUID) || has(p.Snapshot)),
		streamTypes[p.Type] && has(p.SessionIDS):
		return detection{format: FormatClaudeCode, newReader: func(n string) fileReader { return newClaudeReader(n) }}, nil
	case p.Object == "chat.completion":
		return detection{format: FormatChatCompletion, newReader: func(n string) fileReader { return newCompletionReader(n) }}, nil
	case p.Object == "response" || (has(p.Input) && !has(p.Messages)):
		return detection{format: FormatResponses, newReader: func(n string) fileReader { return newResponsesReader(n) }}, nil
	case has(p.Messages):
		return detection{format: FormatMessages, perRecord: true}, nil
	case responsesItemTypes[p.Type] || (p.Type != "" && has(p.CallID)):
		return detection{format: FormatResponses, newReader: func(n string) fileReader { return newResponsesReader(n) }}, nil
	case has(p.ID) && has(p.Instructions):
		return detection{format: FormatCodex, newReader: func(n string) fileReader { return newCodexReader(n) }}, nil
	}
	return detection{}, unknownRecord(first)
}

// firstElement returns the first element of a JSON array, when it is an
// object.
func firstElement(data []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') || !dec.More() {
		return nil, false
	}
	var el json.RawMessage
	if dec.Decode(&el) != nil || len(el) == 0 || el[0] != '{' {
		return nil, false
	}
	return el, true
}

// arrayRecords cuts a JSON array into its elements, each with its line.
func arrayRecords(rec record) ([]record, error) {
	dec := json.NewDecoder(bytes.NewReader(rec.data))
	if _, err := dec.Token(); err != nil {
		return nil, describeErr(err)
	}
	var out []record
	for dec.More() {
		start := skipSpace(rec.data, int(dec.InputOffset()))
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return nil, describeErr(err)
		}
		out = append(out, record{line: rec.line + bytes.Count(rec.data[:start], []byte("\n")), data: el})
	}
	return out, nil
}

// unknownRecord describes a first record of no known format by its keys
// (never its values).
func unknownRecord(data []byte) error {
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) != nil {
		return fmt.Errorf("the first record is not a JSON object")
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, clip(k))
	}
	sort.Strings(names)
	if len(names) > 8 {
		names = append(names[:8], "…")
	}
	return fmt.Errorf("not a transcript this command reads: the first record is an object with keys %s (see docs/audit.md for the formats)", strings.Join(names, ", "))
}
