package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// aider keeps its chats in Markdown, .aider.chat.history.md in the
// repository: "# aider chat started at …" opens a session, "#### " lines
// are what the user typed, "> " lines what aider printed, and the rest is
// the model's reply. Aider has no tool calls: the model edits files with
// SEARCH/REPLACE blocks in its reply, which aider applies. Each block is
// read as a call of the tool "edit" ({"path", "search", "replace"}); the
// "> " lines right after the reply say whether it applied ("Applied edit
// to PATH") or not ("SEARCH/REPLACE block failed to match", "did not
// conform to the edit format"). A reply followed by the user's next line
// instead was cut off: its edits have no result.

// aiderStart opens a session in the history.
const aiderStart = "# aider chat started at "

// isAider reports whether data is an aider chat history.
func isAider(data []byte) bool {
	first := firstNonBlank(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	return bytes.HasPrefix(bytes.TrimSpace(first), []byte(aiderStart))
}

// aiderReader reads a history: one episode per session with an edit.
type aiderReader struct {
	name string
	eps  []Episode
	seen map[string]int

	s       *session
	n       int      // sessions read
	reply   []string // the model's reply being read
	replyAt int      // its first line
	out     []string // aider's lines after it
	user    []string // the user's lines being read
	round   []Call   // the calls of the last reply, waiting for aider's lines
}

func parseAider(name string, data []byte) (Format, []Episode, map[string]int, error) {
	r := &aiderReader{name: name, seen: map[string]int{}}
	line := 0
	for len(data) > 0 {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte("\n"))
		line++
		r.line(line, strings.TrimRight(string(l), "\r"))
	}
	r.endSession()
	return FormatAider, r.eps, r.seen, nil
}

func (r *aiderReader) line(n int, l string) {
	switch {
	case strings.HasPrefix(l, aiderStart):
		r.endSession()
		r.n++
		name := strings.TrimSuffix(path.Base(r.name), ".md") + " " + strings.TrimSpace(strings.TrimPrefix(l, aiderStart))
		r.s = newSession(name)
	case r.s == nil:
		// Before the first session: nothing to read.
	case strings.HasPrefix(l, "#### "):
		r.endReply()
		r.endOut()
		// A reply that aider printed nothing after was cut off: its edits
		// have no result (the "> " lines that follow answer the user's
		// next command, such as /undo).
		r.round = nil
		r.user = append(r.user, strings.TrimSpace(strings.TrimPrefix(l, "#### ")))
	case strings.HasPrefix(l, "> ") || l == ">":
		r.endUser()
		r.endReply()
		r.out = append(r.out, strings.TrimSpace(strings.TrimPrefix(l, ">")))
	default:
		r.endUser()
		r.endOut()
		if len(r.reply) == 0 {
			if strings.TrimSpace(l) == "" {
				return
			}
			r.replyAt = n
		}
		r.reply = append(r.reply, l)
	}
}

// endUser ends the user's message: a turn, unless it is a command.
func (r *aiderReader) endUser() {
	if len(r.user) == 0 {
		return
	}
	text := strings.Join(r.user, "\n")
	r.user = nil
	if strings.HasPrefix(text, "/") {
		r.s.note("commands")
		return
	}
	r.s.note("user messages")
	r.s.userTurn(text)
}

// endReply ends the model's reply: its SEARCH/REPLACE blocks are a round.
func (r *aiderReader) endReply() {
	if len(r.reply) == 0 {
		return
	}
	calls := aiderEdits(r.reply)
	r.reply = nil
	if len(calls) == 0 {
		r.s.note("replies without an edit")
		return
	}
	for i := range calls {
		calls[i].ID = fmt.Sprintf("edit-%d-%d", r.n, len(r.s.ep.Calls)+i+1)
		calls[i].Line = r.replyAt
	}
	r.s.calls("", 0, 0, calls...)
	r.round = calls
}

// endOut ends aider's lines after a reply: they give the result of its
// edits and the usage of the request.
func (r *aiderReader) endOut() {
	if len(r.out) == 0 {
		return
	}
	out := r.out
	r.out = nil
	for _, l := range out {
		if sent, recv, ok := aiderTokens(l); ok {
			r.s.lateUsage(sent, recv, len(r.round) > 0)
		}
	}
	if len(r.round) == 0 {
		return
	}
	text := strings.Join(out, "\n")
	failed := strings.Contains(text, "failed to match") || strings.Contains(text, "did not conform to the edit format")
	for _, c := range r.round {
		var p struct{ Path string }
		_ = json.Unmarshal(c.Args, &p)
		applied := "Applied edit to " + p.Path
		switch {
		case p.Path != "" && strings.Contains(text, applied):
			r.s.result(c.ID, applied, false)
		case failed:
			r.s.result(c.ID, text, true)
		default:
			r.s.result(c.ID, text, false)
		}
	}
	r.round = nil
}

func (r *aiderReader) endSession() {
	if r.s == nil {
		return
	}
	r.endUser()
	r.endReply()
	r.endOut()
	for k, v := range r.s.seen {
		r.seen[k] += v
	}
	if len(r.s.ep.Calls) > 0 {
		r.eps = append(r.eps, r.s.finish())
	}
	r.s = nil
}

// aiderEdits reads the SEARCH/REPLACE blocks of a reply (the older
// ORIGINAL/UPDATED markers too): the file is the line before the block's
// fence (or before the marker).
func aiderEdits(reply []string) []Call {
	var calls []Call
	for i := 0; i < len(reply); i++ {
		l := strings.TrimSpace(reply[i])
		if l != "<<<<<<< SEARCH" && l != "<<<<<<< ORIGINAL" {
			continue
		}
		file := ""
		for j := i - 1; j >= 0 && j >= i-3; j-- {
			t := strings.Trim(strings.TrimSpace(reply[j]), "`*")
			if t != "" && !strings.HasPrefix(strings.TrimSpace(reply[j]), "```") {
				file = t
				break
			}
		}
		var search, replace []string
		k := i + 1
		for ; k < len(reply) && !strings.HasPrefix(strings.TrimSpace(reply[k]), "======="); k++ {
			search = append(search, reply[k])
		}
		for k++; k < len(reply) && !strings.HasPrefix(strings.TrimSpace(reply[k]), ">>>>>>> "); k++ {
			replace = append(replace, reply[k])
		}
		args, _ := json.Marshal(map[string]string{"path": file, "search": strings.Join(search, "\n"), "replace": strings.Join(replace, "\n")})
		calls = append(calls, Call{Tool: "edit", Args: args})
		i = k
	}
	return calls
}

// aiderTokens reads "Tokens: 26,200 sent, 680 received." (or "12k sent").
func aiderTokens(l string) (sent, recv int, ok bool) {
	rest, found := strings.CutPrefix(l, "Tokens: ")
	if !found {
		return 0, 0, false
	}
	num := func(s string) int {
		s = strings.ReplaceAll(strings.TrimSpace(s), ",", "")
		mult := 1.0
		if strings.HasSuffix(s, "k") {
			s, mult = strings.TrimSuffix(s, "k"), 1000
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0
		}
		return int(f * mult)
	}
	a, b, _ := strings.Cut(rest, ",")
	sent = num(strings.TrimSuffix(strings.TrimSpace(a), " sent"))
	b, _, _ = strings.Cut(strings.TrimSpace(b), " received")
	recv = num(b)
	return sent, recv, sent > 0
}
