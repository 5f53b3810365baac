package audit

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// lineOf returns the line of the element that problem names with its
// leading path ("messages[3].tool_call_id: ..."), so an error inside an
// indented document points at the right line; the record's first line when
// the path cannot be followed.
func (r record) lineOf(problem string) int {
	if !bytes.Contains(r.data, []byte("\n")) {
		return r.line
	}
	path, _, _ := strings.Cut(problem, ":")
	if t := bytes.TrimSpace(r.data); len(t) > 0 && t[0] == '[' {
		// An array of messages is read as if it were {"messages": [...]}.
		path = strings.TrimPrefix(path, "messages")
	}
	off, ok := locate(r.data, path)
	if !ok {
		return r.line
	}
	return r.line + bytes.Count(r.data[:off], []byte("\n"))
}

// pathStep is one step of a path: an object key or an array index.
type pathStep struct {
	key   string
	index int // -1 for a key
}

// parsePath splits "messages[3].content[0].id" (or "[3].id") into its steps. It reports
// false for anything that is not such a path.
func parsePath(path string) ([]pathStep, bool) {
	var steps []pathStep
	for i, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		switch {
		case key == "" && i == 0 && strings.HasPrefix(part, "["):
			// The path starts at an array.
		case key == "" || strings.ContainsAny(key, " \t\""):
			return nil, false
		default:
			steps = append(steps, pathStep{key: key, index: -1})
		}
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			n, err := strconv.Atoi(num)
			if !ok || err != nil || n < 0 {
				return nil, false
			}
			steps = append(steps, pathStep{index: n})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return steps, len(steps) > 0
}

// locate returns the offset in data of the element at path (for a key: the
// key itself), following it as far as data allows.
func locate(data []byte, path string) (int, bool) {
	steps, ok := parsePath(path)
	if !ok {
		return 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	off := 0
	for _, st := range steps {
		tok, err := dec.Token()
		if err != nil {
			return off, off > 0
		}
		d, _ := tok.(json.Delim)
		found := false
		switch {
		case st.index < 0 && d == '{':
			for dec.More() {
				start := skipSpace(data, int(dec.InputOffset()))
				k, err := dec.Token()
				if err != nil {
					return off, off > 0
				}
				if k == st.key {
					off, found = start, true
					break
				}
				if skipValue(dec) != nil {
					return off, off > 0
				}
			}
		case st.index >= 0 && d == '[':
			for i := 0; dec.More(); i++ {
				if i == st.index {
					off, found = skipSpace(data, int(dec.InputOffset())), true
					break
				}
				if skipValue(dec) != nil {
					return off, off > 0
				}
			}
		}
		if !found {
			return off, off > 0
		}
	}
	return off, true
}

func skipValue(dec *json.Decoder) error {
	var v json.RawMessage
	return dec.Decode(&v)
}
