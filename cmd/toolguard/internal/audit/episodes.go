package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// episodeCall is one call of the episode format (testdata/traces/FORMAT.md).
type episodeCall struct {
	Turn     *int            `json:"turn"`
	UserTurn *int            `json:"user_turn"`
	ID       json.RawMessage `json:"id"`
	Tool     *string         `json:"tool"`
	Args     json.RawMessage `json:"args"`
	Result   *text           `json:"result"`
	IsError  *bool           `json:"is_error"`
}

// maxUserTurn bounds user_turn, so that Call.Turn (user_turn + 1) cannot
// overflow; no transcript has a billion user messages.
const maxUserTurn = 1_000_000_000

// parseEpisode reads one line of the episode format. Consecutive calls that
// share "turn" (one model response) and "user_turn" are one round; a call
// without "turn" is a round of its own. "user_turn" (0-based, optional)
// becomes Call.Turn (1-based): either every call of the episode has one,
// never decreasing, or none has, and the episode is one user turn.
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
	var b episodeBuilder
	for i, raw := range calls {
		var c episodeCall
		if err := decodeField(raw, &c, fmt.Sprintf("calls[%d]", i)); err != nil {
			return ep, err
		}
		if err := b.add(&ep, i, &c); err != nil {
			return ep, err
		}
	}
	return ep, nil
}

// episodeLine is a whole record of the episode format, decoded at once.
type episodeLine struct {
	Episode json.RawMessage `json:"episode"`
	Label   *string         `json:"label"`
	Calls   *[]episodeCall  `json:"calls"`
}

// parseEpisodeLine reads one record of the episode format with a single
// decoding. Its errors are terse: the caller asks parseRecord for the
// precise one.
func parseEpisodeLine(data []byte) (Episode, error) {
	var l episodeLine
	if !scanEpisodeLine(data, &l) {
		l = episodeLine{}
		if err := decode(data, &l); err != nil {
			return Episode{}, err
		}
	}
	if l.Calls == nil {
		return Episode{}, errors.New(`no "calls" array`)
	}
	var ep Episode
	name, err := idString(l.Episode, "episode")
	if err != nil {
		return ep, err
	}
	ep.Name = name
	if l.Label != nil {
		ep.Label = *l.Label
	}
	calls := *l.Calls
	ep.Calls = make([]Call, 0, len(calls))
	var b episodeBuilder
	for i := range calls {
		if err := b.add(&ep, i, &calls[i]); err != nil {
			return ep, err
		}
	}
	return ep, nil
}

// episodeBuilder turns the calls of an episode record into Calls.
type episodeBuilder struct {
	round    int
	prev     *int // the turn of the previous call
	userTurn int  // the user_turn of the previous call
	withUser bool // whether the first call has user_turn
}

// add appends the i-th call c to ep.
func (b *episodeBuilder) add(ep *Episode, i int, c *episodeCall) error {
	path := fmt.Sprintf("calls[%d]", i)
	if c.Tool == nil || *c.Tool == "" {
		return fmt.Errorf("%s.tool: missing or empty", path)
	}
	if i == 0 {
		b.withUser = c.UserTurn != nil
	}
	newUser, err := checkUserTurn(c.UserTurn, b.withUser, b.userTurn, path)
	if err != nil {
		return err
	}
	if c.Turn == nil || b.prev == nil || *c.Turn != *b.prev || newUser {
		b.round++
	}
	b.prev = c.Turn
	if c.UserTurn != nil {
		b.userTurn = *c.UserTurn
	}
	id, err := idString(c.ID, path+".id")
	if err != nil {
		return err
	}
	call := Call{Round: b.round, Turn: b.userTurn + 1, ID: id, Tool: *c.Tool}
	if len(c.Args) > 0 && string(c.Args) != "null" {
		call.Args = c.Args
	}
	if c.Result != nil {
		call.Result = string(*c.Result)
	}
	call.Failed = c.IsError != nil && *c.IsError
	ep.Calls = append(ep.Calls, call)
	return nil
}

// checkUserTurn checks the user_turn u of the call at path against the
// calls before it, whose last user_turn is prev, and reports whether it
// starts a new user turn. withUser is whether the episode's first call has
// one: the field is on every call of an episode or on none.
func checkUserTurn(u *int, withUser bool, prev int, path string) (bool, error) {
	switch {
	case u == nil && withUser:
		return false, errors.New(path + ".user_turn: missing, but the episode's first call has one (give it on every call or on none)")
	case u == nil:
		return false, nil
	case !withUser:
		return false, errors.New(path + ".user_turn: present, but the episode's first call has none (give it on every call or on none)")
	case *u < 0:
		return false, fmt.Errorf("%s.user_turn: %d is negative (want a 0-based index)", path, *u)
	case *u > maxUserTurn:
		return false, fmt.Errorf("%s.user_turn: %d is too large (at most %d)", path, *u, maxUserTurn)
	case *u < prev:
		return false, fmt.Errorf("%s.user_turn: %d after %d (user turns never go back)", path, *u, prev)
	}
	return *u != prev, nil
}

// idString reads an identifier that sources give as a string or a number.
func idString(raw json.RawMessage, path string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if s, ok := unquote(raw); ok {
		return s, nil
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
