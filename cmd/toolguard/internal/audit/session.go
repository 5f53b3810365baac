package audit

import (
	"fmt"
	"sort"
	"strings"
)

// session builds one Episode from the records of a coding-agent transcript
// or a stream of API items, as they are read: user input starts a turn, a
// model response with calls is a round, a result completes the call with
// its id. It also keeps the model's usage per response, from which
// finish derives the cost of each result.
type session struct {
	ep      Episode
	pending map[string][]int // call id → calls without a result yet, oldest first
	turn    int
	round   int
	// turnCalls reports a call since the turn started: input with no call
	// since the last one (two records of one user message) is one turn.
	turnCalls bool
	lastKey   string // the response key of the last round ("" for none)

	rounds []roundUsage // per round (index round-1)
	usage  bool         // some response recorded its usage

	// What the reader saw, for the error of a file without calls.
	seen map[string]int
	// orphans counts results whose call the transcript does not hold
	// (cut off by a compaction or a rewind); they are left out.
	orphans int
	// line is the line of the record being read: the line of its calls.
	line int
}

// roundUsage is the usage of the response that asked for a round's calls
// and the prompt of the next response, which read their results.
type roundUsage struct {
	prompt, output, next int // tokens; 0 when not recorded
}

func newSession(name string) *session {
	return &session{ep: Episode{Name: name}, pending: map[string][]int{}, seen: map[string]int{}}
}

// note counts a kind of record for the "no calls" error.
func (s *session) note(kind string) { s.seen[kind]++ }

// userTurn starts a new user turn, unless no call was made since the
// last one started. The first user text that is not the harness's own
// markup (it starts with "<") becomes the episode's title.
func (s *session) userTurn(text string) {
	if s.ep.Title == "" {
		s.ep.Title = titleOf(text)
	}
	if s.turn == 0 || s.turnCalls {
		s.turn++
		s.turnCalls = false
	}
}

// lateUsage books usage that the transcript writes after the response's
// calls (Codex's token_count): it is the usage of the last round when that
// round has none yet, and otherwise of a response without calls.
func (s *session) lateUsage(prompt, output int, forLastRound bool) {
	if n := len(s.rounds); forLastRound && n > 0 && s.rounds[n-1].prompt == 0 && prompt > 0 {
		s.usage = true
		s.rounds[n-1].prompt, s.rounds[n-1].output = prompt, output
		if n > 1 && s.rounds[n-2].next == 0 {
			s.rounds[n-2].next = prompt
		}
		return
	}
	s.response(prompt)
}

// response books the usage of a model response that asked for no call:
// its prompt is the "next" of the round before it.
func (s *session) response(prompt int) {
	if prompt <= 0 {
		return
	}
	s.usage = true
	if n := len(s.rounds); n > 0 && s.rounds[n-1].next == 0 {
		s.rounds[n-1].next = prompt
	}
}

// calls books the calls of one model response. key identifies the
// response: calls with the same non-empty key as the previous round join
// it (Claude Code writes one line per content block of a response).
// prompt and output are the response's usage (0 when not recorded).
func (s *session) calls(key string, prompt, output int, calls ...Call) {
	if len(calls) == 0 {
		return
	}
	if !s.sameResponse(key, prompt, output) {
		if prompt > 0 {
			s.response(prompt)
		}
		s.round++
		s.rounds = append(s.rounds, roundUsage{prompt: prompt, output: output})
	}
	s.lastKey = key
	if s.turn == 0 {
		s.turn = 1
	}
	s.turnCalls = true
	for _, c := range calls {
		c.Round, c.Turn = s.round, s.turn
		if c.Line == 0 {
			c.Line = s.line
		}
		if c.ID != "" {
			s.pending[c.ID] = append(s.pending[c.ID], len(s.ep.Calls))
		}
		s.ep.Calls = append(s.ep.Calls, c)
	}
}

// sameResponse reports whether key names the response of the last round
// and, if so, books the usage given as that response's: Claude Code writes
// one line per content block, each with the usage at that point of the
// stream, so the last line's is the response's.
func (s *session) sameResponse(key string, prompt, output int) bool {
	if key == "" || key != s.lastKey || s.round == 0 {
		return false
	}
	u := &s.rounds[len(s.rounds)-1]
	if prompt > 0 {
		u.prompt = prompt
	}
	if output > 0 {
		u.output = output
	}
	return true
}

// result completes the oldest call with this id that has none yet. A
// result for no known call is counted and left out.
func (s *session) result(id, text string, failed bool) {
	q := s.pending[id]
	if id == "" || len(q) == 0 {
		s.orphans++
		return
	}
	s.pending[id] = q[1:]
	c := &s.ep.Calls[q[0]]
	c.Result, c.Failed = text, c.Failed || failed
}

// failLookBack bounds how far back fail looks for a completed call.
const failLookBack = 256

// fail marks the call with this id as failed, whether its result has come
// (among the last failLookBack calls) or not yet (Codex writes
// patch_apply_end before or after the call's output).
func (s *session) fail(id string) {
	if id == "" {
		return
	}
	if q := s.pending[id]; len(q) > 0 {
		s.ep.Calls[q[0]].Failed = true
		return
	}
	for i := len(s.ep.Calls) - 1; i >= max(0, len(s.ep.Calls)-failLookBack); i-- {
		if s.ep.Calls[i].ID == id {
			s.ep.Calls[i].Failed = true
			return
		}
	}
}

// finish returns the episode with the cost of every call: tokens when the
// transcript records usage, characters otherwise (see costs in
// docs/audit.md).
func (s *session) finish() Episode {
	ep := s.ep
	ep.Tokens = s.usage
	for start := 0; start < len(ep.Calls); {
		end := start + 1
		for end < len(ep.Calls) && ep.Calls[end].Round == ep.Calls[start].Round {
			end++
		}
		round := ep.Calls[start:end]
		var u roundUsage
		if r := round[0].Round; r-1 < len(s.rounds) {
			u = s.rounds[r-1]
		}
		spread(round, u, ep.Tokens)
		start = end
	}
	return ep
}

// spread gives each call of a round its cost. With usage, the tokens the
// round's results added to the next prompt (the next prompt less this
// response's prompt and output) are shared among the calls in proportion
// to their characters; a round whose next prompt is not recorded (the
// last one) counts characters / 4. Without usage a cost is characters.
func spread(round []Call, u roundUsage, tokens bool) {
	chars := make([]int, len(round))
	total := 0
	for i := range round {
		chars[i] = countChars(round[i].Result)
		total += chars[i]
	}
	if !tokens {
		for i := range round {
			round[i].Cost = chars[i]
		}
		return
	}
	if u.prompt == 0 || u.next == 0 {
		for i := range round {
			round[i].Cost = (chars[i] + 3) / 4
		}
		return
	}
	added := max(0, u.next-u.prompt-u.output)
	for i := range round {
		switch {
		case total > 0:
			round[i].Cost = int(int64(added) * int64(chars[i]) / int64(total))
		default:
			round[i].Cost = added / len(round)
		}
	}
}

// noCalls describes a file in which the reader found no call, by what it
// found instead; unknown reports records of a kind the reader does not
// know, which may be calls of a shape it cannot read.
func noCalls(seen map[string]int) (found string, unknown bool) {
	kinds := make([]string, 0, len(seen))
	for k := range seen {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", seen[k], k))
		unknown = unknown || strings.HasPrefix(k, "unrecognized ")
	}
	if len(parts) == 0 {
		return "nothing", unknown
	}
	return strings.Join(parts, ", "), unknown
}
