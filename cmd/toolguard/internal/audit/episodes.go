package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// episodeCall is one call of the episode format (testdata/traces/FORMAT.md).
type episodeCall struct {
	Turn    *int            `json:"turn"`
	ID      json.RawMessage `json:"id"`
	Tool    *string         `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Result  *string         `json:"result"`
	IsError *bool           `json:"is_error"`
}

// parseEpisode reads one line of the episode format. The episode is one
// user turn; calls that share "turn" (one model response) are one round. A
// call without "turn" is a round of its own.
func parseEpisode(keys map[string]json.RawMessage) (Episode, error) {
	var ep Episode
	name, err := idString(keys["episode"], "episode")
	if err != nil {
		return ep, err
	}
	ep.Name = name
	if ep.Label, err = optString(keys, "label"); err != nil {
		return ep, err
	}
	var calls []json.RawMessage
	if raw := keys["calls"]; string(raw) != "null" {
		if err := decodeField(raw, &calls, "calls"); err != nil {
			return ep, err
		}
	}
	ep.Calls = make([]Call, 0, len(calls))
	round := 0
	var prev *int // the turn of the previous call
	for i, raw := range calls {
		path := fmt.Sprintf("calls[%d]", i)
		var c episodeCall
		if err := decodeField(raw, &c, path); err != nil {
			return ep, err
		}
		if c.Tool == nil || *c.Tool == "" {
			return ep, fmt.Errorf("%s.tool: missing or empty", path)
		}
		if c.Turn == nil || prev == nil || *c.Turn != *prev {
			round++
		}
		prev = c.Turn
		id, err := idString(c.ID, path+".id")
		if err != nil {
			return ep, err
		}
		call := Call{Round: round, Turn: 1, ID: id, Tool: *c.Tool}
		if len(c.Args) > 0 && string(c.Args) != "null" {
			call.Args = c.Args
		}
		if c.Result != nil {
			call.Result = *c.Result
		}
		call.Failed = c.IsError != nil && *c.IsError
		ep.Calls = append(ep.Calls, call)
	}
	return ep, nil
}

// idString reads an identifier that sources give as a string or a number.
func idString(raw json.RawMessage, path string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if _, err := strconv.ParseFloat(string(n), 64); err == nil {
			return string(n), nil
		}
	}
	return "", errors.New(path + ": want a string, got " + jsonKind(raw))
}

// jsonKind names the JSON type of raw: "object", "array", "string",
// "number", "true or false" or "null".
func jsonKind(raw json.RawMessage) string {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return "object"
		case '[':
			return "array"
		case '"':
			return "string"
		case 't', 'f':
			return "true or false"
		case 'n':
			return "null"
		}
		return "number"
	}
	return "nothing"
}
