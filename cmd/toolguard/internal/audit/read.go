package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// ParseError is a problem with an input file: the file, the line of the
// record (1-based; 0 when the problem concerns the whole file) and what is
// wrong. It never quotes arguments or results.
type ParseError struct {
	File    string
	Line    int
	Problem string
}

// Error returns "toolguard audit: FILE: line N: PROBLEM".
func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("toolguard audit: %s: line %d: %s", e.File, e.Line, e.Problem)
	}
	return fmt.Sprintf("toolguard audit: %s: %s", e.File, e.Problem)
}

// record is one top-level JSON value of an input and the line it starts on.
type record struct {
	line int
	data []byte
}

// Parse reads the episodes of one input held in memory, whose format it
// detects from the content (see docs/audit.md for the formats). name
// labels the episodes and the errors. A malformed input yields a
// *ParseError and no episodes. Unlike Main, it accepts a file without any
// call.
func Parse(name string, data []byte) (Format, []Episode, error) {
	format, eps, _, _, err := parseWhole(name, data, false)
	if err != nil {
		return 0, nil, err
	}
	for i := range eps {
		eps[i].File = name
	}
	return format, eps, nil
}

// parseRecords reads records that are each an episode or a conversation.
func parseRecords(name string, recs []record) (Format, []Episode, error) {
	var (
		format Format
		eps    []Episode
	)
	for _, rec := range recs {
		ep, f, perr := parseRecord(rec)
		if perr != nil {
			return 0, nil, &ParseError{File: name, Line: rec.lineOf(perr.Error()), Problem: perr.Error()}
		}
		merged, ok := mergeFormat(format, f)
		if !ok {
			return 0, nil, &ParseError{File: name, Line: rec.line,
				Problem: fmt.Sprintf("%s, but the file's first record is %s (one format per file)", article(f), article(format))}
		}
		format = merged
		ep.File = name
		if ep.Name == "" {
			ep.Name = fmt.Sprintf("line %d", rec.line)
		}
		eps = append(eps, ep)
	}
	return format, eps, nil
}

// mergeFormat combines the format of the records read so far with the
// next record's. Conversations without tool calls fit either provider.
func mergeFormat(have, next Format) (Format, bool) {
	switch {
	case have == 0 || have == next:
		return next, true
	case have == FormatMessages && (next == FormatOpenAI || next == FormatAnthropic || next == FormatVercel):
		return next, true
	case next == FormatMessages && (have == FormatOpenAI || have == FormatAnthropic || have == FormatVercel):
		return have, true
	}
	return have, false
}

func article(f Format) string {
	switch f {
	case FormatEpisodes:
		return "an episode record"
	case FormatOpenAI:
		return "an OpenAI conversation"
	case FormatAnthropic:
		return "an Anthropic conversation"
	case FormatVercel:
		return "a Vercel AI SDK conversation"
	}
	return "a conversation without tool calls"
}

// splitRecords cuts an input into its top-level JSON values. An input
// whose first non-blank line is a complete JSON value is JSON Lines, one
// value per line. Otherwise it is read as a document: one or more JSON
// values, possibly indented over many lines. When neither reading works,
// the error is reported the JSON Lines way if some later unindented line
// is a complete value on its own (a broken line in a JSON Lines file), and
// the document way otherwise. With validate false, the lines of JSON Lines
// are not checked here (their decoding checks them).
func splitRecords(data []byte, validate bool) ([]record, *ParseError) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	first := firstNonBlank(data)
	if first == nil {
		return nil, &ParseError{Problem: "empty input: no episode or conversation"}
	}
	if json.Valid(first) {
		return splitLines(data, validate)
	}
	recs, docErr := splitDocument(data)
	if docErr == nil {
		return recs, nil
	}
	if looksLikeLines(data) {
		return splitLines(data, true)
	}
	return nil, docErr
}

// looksLikeLines reports whether some line after the first non-blank one
// starts in column 1 and is a complete JSON object or array on its own.
func looksLikeLines(data []byte) bool {
	seenFirst := false
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte("\n"))
		t := bytes.TrimSpace(l)
		if len(t) == 0 {
			continue
		}
		if !seenFirst {
			seenFirst = true
			continue
		}
		if (l[0] == '{' || l[0] == '[') && json.Valid(t) {
			return true
		}
	}
	return false
}

func firstNonBlank(data []byte) []byte {
	for len(data) > 0 {
		l, rest, _ := bytes.Cut(data, []byte("\n"))
		if len(bytes.TrimSpace(l)) > 0 {
			return l
		}
		data = rest
	}
	return nil
}

func splitLines(data []byte, validate bool) ([]record, *ParseError) {
	var recs []record
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		l, data, _ = bytes.Cut(data, []byte("\n"))
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		if validate && !json.Valid(l) {
			var v any
			err := json.Unmarshal(l, &v)
			return nil, &ParseError{Line: line, Problem: describeSyntax(err)}
		}
		recs = append(recs, record{line: line, data: l})
	}
	return recs, nil
}

func splitDocument(data []byte) ([]record, *ParseError) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var recs []record
	for {
		start := skipSpace(data, int(dec.InputOffset()))
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			var se *json.SyntaxError
			switch {
			case errors.As(err, &se):
				off := int(se.Offset)
				col := off - bytes.LastIndexByte(data[:min(max(off, 0), len(data))], '\n') - 1
				return nil, &ParseError{Line: lineAt(data, off),
					Problem: fmt.Sprintf("invalid JSON at column %d: %s", col, se.Error())}
			case errors.Is(err, io.ErrUnexpectedEOF):
				return nil, &ParseError{Line: lineAt(data, start),
					Problem: fmt.Sprintf("truncated JSON: the input ends (line %d) before the document that starts here is complete",
						lineAt(data, len(data)))}
			}
			return nil, &ParseError{Line: lineAt(data, start), Problem: "invalid JSON: " + err.Error()}
		}
		recs = append(recs, record{line: lineAt(data, start), data: raw})
	}
}

func skipSpace(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
		off++
	}
	return off
}

func lineAt(data []byte, off int) int {
	off = min(max(off, 0), len(data))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

func describeSyntax(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if strings.Contains(se.Error(), "unexpected end") {
			return "truncated JSON: the line ends before the value is complete"
		}
		return fmt.Sprintf("invalid JSON at column %d: %s", se.Offset, se.Error())
	}
	if err != nil {
		return "invalid JSON: " + err.Error()
	}
	return "invalid JSON"
}

// parseRecord reads one top-level value: an episode, a conversation object
// or an array of messages.
func parseRecord(rec record) (Episode, Format, error) {
	d := bytes.TrimSpace(rec.data)
	switch {
	case len(d) > 0 && d[0] == '[':
		return parseConversation(d, "messages")
	case len(d) > 0 && d[0] == '{':
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(d, &keys); err != nil {
			return Episode{}, 0, errors.New(describeJSON(err, ""))
		}
		if _, ok := keys["calls"]; ok {
			ep, err := parseEpisode(keys)
			return ep, FormatEpisodes, err
		}
		if msgs, ok := keys["messages"]; ok {
			ep, f, err := parseConversation(msgs, "messages")
			if err != nil {
				return ep, f, err
			}
			if err := conversationMeta(keys, &ep); err != nil {
				return ep, f, err
			}
			return ep, f, nil
		}
	}
	return Episode{}, 0, errors.New(`neither an episode (an object with "calls") nor a conversation (an object with "messages", or an array of messages)`)
}

// decodeField decodes raw into dst and describes a failure with path. It
// decodes with decode, and only on a failure again with encoding/json,
// whose error names the field.
func decodeField(raw json.RawMessage, dst any, path string) error {
	if decode(raw, dst) == nil {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return errors.New(describeJSON(err, path))
	}
	return nil
}

// describeErr is describeJSON as an error.
func describeErr(err error) error { return errors.New(describeJSON(err, "")) }

// describeJSON turns a decoding error into "path.field: want a string, got
// number", without quoting the data.
func describeJSON(err error, path string) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		p := joinPath(path, te.Field)
		if p == "" {
			p = "value"
		}
		return fmt.Sprintf("%s: want %s, got %s", p, typeName(te.Type), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "invalid JSON: " + se.Error()
	}
	if path != "" {
		return path + ": " + err.Error()
	}
	return err.Error()
}

func joinPath(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

func typeName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Name() == "RawMessage" {
			return "a JSON value"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// optString decodes an optional string field; null and absent are "".
func optString(keys map[string]json.RawMessage, key string) (string, error) {
	raw, ok := keys[key]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := decodeField(raw, &s, key); err != nil {
		return "", err
	}
	return s, nil
}
