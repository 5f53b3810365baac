package hook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	segjson "github.com/segmentio/encoding/json"
	"github.com/toolguard/toolguard"
)

// A command hook is a new process for every event, and Claude Code runs the
// hooks of parallel calls at once. The state of a session is its event log,
// one JSON line per event (record), under the session's folder. An
// invocation takes the log's lock (flock, which the kernel releases when a
// process dies, kill -9 included), reads the log, feeds it to a new Tracker
// in order, decides the new event with that Tracker, appends the event's
// line in one write, and lets go. So the decisions are those of one
// in-process Tracker fed the same events in the same order, parallel
// invocations are serialized, and a process killed at any point leaves
// either no line (nothing counted: the event never happened for the guard)
// or a whole one; a torn last line (a write cut short) is dropped by the
// next invocation before it appends.
//
// Lines hold stand-ins of the arguments and results (see digest.go), never
// the raw ones.

// record is one line of a session log.
type record struct {
	K    string          `json:"k"`              // "pre", "post", "reset" or "turn" (the first turn's id)
	T    int64           `json:"t"`              // unix nanoseconds
	R    uint64          `json:"r,omitempty"`    // pre: the round
	ID   string          `json:"id,omitempty"`   // the model's call id
	Tool string          `json:"tool,omitempty"` // pre, post
	A    json.RawMessage `json:"a,omitempty"`    // pre, post: stand-in arguments
	O    string          `json:"o,omitempty"`    // post: the result's stand-in
	F    bool            `json:"f,omitempty"`    // post: the call failed
	Turn string          `json:"turn,omitempty"` // reset: the agent's turn id
	// A pre line also keeps the decision, for `hook log` and for the stop
	// channels that act on a later repeat.
	V   toolguard.Verdict `json:"v,omitempty"`
	Why toolguard.Reason  `json:"why,omitempty"`
	Msg string            `json:"msg,omitempty"`
}

// Engine decides the events of one agent's sessions, keeping each session's
// state under its state folder.
type Engine struct {
	agent  *agent
	policy toolguard.Policy
	dir    string // the sessions folder
	now    func() time.Time
	// keep is how long a session untouched is kept.
	keep time.Duration
	// maxLog bounds the session log read (maxLog for a hook process).
	maxLog int64

	// resident engines (toolguard serve) keep each session's replayed
	// state between events, under mu, and replay only when the log
	// changed underneath (another process appended to it).
	mu    sync.Mutex
	cache map[string]*cached
}

// maxCached bounds the sessions a resident engine keeps replayed.
const maxCached = 4096

type cached struct {
	s    *session
	size int64
}

// DefaultKeep is how long an untouched session's state is kept.
const DefaultKeep = 7 * 24 * time.Hour

// roundGap is how close two checks of one session must be, with no result
// between them and the first refused, to count as one model response. A
// model answers a refusal in more than this; an agent starts the hooks of
// one response's calls together.
const roundGap = 250 * time.Millisecond

// maxLog bounds a session log: about 70,000 calls, which take about 350 ms
// to replay. Past it the hook lets every call of the session run and says
// why in errors.log; `toolguard serve`, which replays a log once, has no
// such cost.
const maxLog = 16 << 20

// NewEngine returns an engine for agent a under state folder dir (the
// toolguard folder in the user's state directory).
func NewEngine(a *agent, p toolguard.Policy, dir string, now func() time.Time) *Engine {
	if now == nil {
		now = time.Now
	}
	return &Engine{agent: a, policy: p, dir: filepath.Join(dir, "sessions"), now: now, keep: DefaultKeep, maxLog: maxLog}
}

var safeID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,80}$`)

// sessionDir is the folder of a session: the agent's name and the session
// id, or its hash when the id is not a plain name.
func (e *Engine) sessionDir(session string) string {
	return filepath.Join(e.dir, e.agent.name+"-"+e.sessionKey(session))
}

// sessionKey is the session id as a folder name: the id itself, or the
// hash of an id that is not a plain name.
func (e *Engine) sessionKey(session string) string {
	if safeID.MatchString(session) && strings.Trim(session, ".") != "" {
		return session
	}
	h := sha256.Sum256([]byte(session))
	return "h" + hex.EncodeToString(h[:16])
}

// session is a session's state rebuilt from its log.
type session struct {
	t       *toolguard.Tracker
	clock   time.Time
	recs    int
	last    record // the last line read or appended
	round   uint64
	roundCx context.Context
	turn    string
	aborts  int // Abort decisions in this turn
	phase   toolguard.Phase
	pending []record // allowed pre lines not yet recorded, oldest first
	posted  map[string]bool
	refused map[string]bool // call ids refused: a result for one is not booked
}

// Handle decides one event and returns the answer. An error means the
// state could not be read or written; the caller lets the call run.
func (e *Engine) Handle(ev Event) (Answer, error) {
	switch ev.Kind {
	case KindPre, KindPost, KindPrompt, KindStop, KindTools:
	default:
		return Answer{}, nil
	}
	if ev.Kind == KindTools && e.policy.MaxCallsPerTurn < 0 {
		return Answer{}, nil // no budget: the tools are always offered
	}
	if ev.Session == "" {
		ev.Session = "no-session"
	}
	dir := e.sessionDir(ev.Session)
	fresh := false
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		fresh = true
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Answer{}, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return Answer{}, err
	}
	defer f.Close()
	if e.cache != nil {
		// Resident (toolguard serve): one request at a time in here, and
		// the file lock against hook processes where the system has one.
		e.mu.Lock()
		defer e.mu.Unlock()
	}
	if err := lockFile(f); err != nil && e.cache == nil {
		return Answer{}, fmt.Errorf("locking the session: %w", err)
	}
	var s *session
	var size int64
	if e.cache != nil {
		if c := e.cache[dir]; c != nil {
			if st, err := f.Stat(); err == nil && st.Size() == c.size {
				s, size = c.s, c.size
			}
		}
		delete(e.cache, dir) // until the append succeeds
	}
	if s == nil {
		if s, size, err = e.load(f); err != nil {
			return Answer{}, err
		}
	}
	var history []byte
	if size == 0 && ev.Kind != KindStop && ev.Kind != KindTools {
		if history, err = e.rebuild(s, ev); err != nil {
			return Answer{}, err
		}
	}
	a, out := e.apply(s, ev)
	out = append(history, out...)
	if len(out) > 0 {
		if _, err := f.WriteAt(out, size); err != nil {
			return Answer{}, fmt.Errorf("writing the session log: %w", err)
		}
	}
	if e.cache != nil {
		if len(e.cache) >= maxCached {
			clear(e.cache) // replayed from their logs when they come back
		}
		e.cache[dir] = &cached{s: s, size: size + int64(len(out))}
	}
	if fresh {
		e.cleanup(dir)
	}
	return a, nil
}

// load reads the session log and replays it. A torn last line is cut off.
func (e *Engine) load(f *os.File) (*session, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := st.Size()
	if size > e.maxLog {
		return nil, 0, fmt.Errorf("the session log is over %d MiB: too long to replay at every call; the guard lets this session's calls run (toolguard serve keeps long sessions in memory)", e.maxLog>>20)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), data); err != nil {
		return nil, 0, err
	}
	if end := bytes.LastIndexByte(data, '\n') + 1; end < len(data) {
		data = data[:end]
		if err := f.Truncate(int64(end)); err != nil {
			return nil, 0, err
		}
		size = int64(end)
	}
	s := e.newSession()
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data[:i]
		data = data[i+1:]
		var r record
		if segjson.Unmarshal(line, &r) != nil {
			continue // not ours; never written whole by a hook
		}
		e.replay(s, r)
	}
	return s, size, nil
}

func (e *Engine) newSession() *session {
	s := &session{posted: map[string]bool{}, refused: map[string]bool{}}
	p := e.policy
	p.Now = func() time.Time { return s.clock }
	p.OnEvent, p.Logger = nil, nil
	s.t = toolguard.NewTracker(p)
	return s
}

// replay feeds one line to the session's Tracker and returns the decision
// of a pre line.
func (e *Engine) replay(s *session, r record) toolguard.Decision {
	s.clock = time.Unix(0, r.T)
	s.recs++
	var d toolguard.Decision
	switch r.K {
	case "reset":
		s.t.Reset()
		s.turn, s.aborts, s.pending = r.Turn, 0, nil
		s.phase = toolguard.PhaseNormal
	case "turn":
		s.turn = r.Turn
	case "pre":
		if r.R != s.round || s.roundCx == nil {
			s.round, s.roundCx = r.R, s.t.WithRound(context.Background())
		}
		d = s.t.ShouldSkipContext(s.roundCx, toolguard.Call{ID: r.ID, Tool: r.Tool, Args: r.A})
		switch d.Verdict {
		case toolguard.Allow:
			s.pending = append(s.pending, r)
		case toolguard.Abort:
			s.aborts++
		}
		if d.Verdict != toolguard.Allow && r.ID != "" {
			s.refused[r.ID] = true
		}
		s.phase = d.Phase
	case "post":
		if r.ID != "" {
			s.posted[r.ID] = true
		}
		if p, ok := s.take(r); ok && r.A == nil {
			r.Tool, r.A = p.Tool, p.A // a line with a call id leaves them to its pre line
		}
		o := toolguard.Outcome{Result: r.O}
		if r.F {
			o.Err = errors.New(r.O)
		}
		s.phase = s.t.Record(toolguard.Call{ID: r.ID, Tool: r.Tool, Args: r.A}, o)
	}
	s.last = r
	return d
}

// rebuild replays the calls of ev's transcript into a new session (see
// transcript.go) and returns their log lines. As in `toolguard audit`, a
// call the rules would have refused is not recorded.
func (e *Engine) rebuild(s *session, ev Event) ([]byte, error) {
	recs, err := e.fromTranscript(ev, e.now())
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	var out []byte
	skip := map[int]bool{}
	for i, r := range recs {
		if skip[i] {
			continue
		}
		d := e.replay(s, r)
		if r.K == "pre" {
			r.V, r.Why, r.Msg = d.Verdict, d.Reason, d.Message
			s.last = r
			if d.Verdict != toolguard.Allow && i+1 < len(recs) && recs[i+1].K == "post" {
				skip[i+1] = true
			}
		}
		line, err := encodeLine(r)
		if err != nil {
			return nil, err
		}
		out = append(out, line...)
	}
	return out, nil
}

// take removes the pending call a post line records: by call id, or else
// the oldest one with the same tool and arguments.
func (s *session) take(r record) (record, bool) {
	for i, p := range s.pending {
		// A result that names no call (the gateway's) is the oldest call's.
		if r.ID != "" && p.ID == r.ID || r.ID == "" && (r.Tool == "" || p.Tool == r.Tool && bytes.Equal(p.A, r.A)) {
			s.pending = append(s.pending[:i:i], s.pending[i+1:]...)
			return p, true
		}
	}
	return record{}, false
}

// hasPending reports whether a call id names a pending call.
func (s *session) hasPending(id string) bool {
	if id == "" {
		return false
	}
	for _, p := range s.pending {
		if p.ID == id {
			return true
		}
	}
	return false
}

// apply decides ev against the replayed session and returns the answer and
// the lines to append.
func (e *Engine) apply(s *session, ev Event) (Answer, []byte) {
	now := e.now()
	if t := now.UnixNano(); t <= s.last.T {
		now = time.Unix(0, s.last.T+1) // the log's clock never goes back
	}
	var out []byte
	add := func(r record) toolguard.Decision {
		r.T = now.UnixNano()
		d := e.replay(s, r)
		if r.K == "pre" {
			r.V, r.Why = d.Verdict, d.Reason
			if d.Verdict != toolguard.Allow {
				r.Msg = d.Message
			}
			s.last = r // with its decision, as the next load reads it
		}
		if line, err := encodeLine(r); err == nil {
			out = append(out, line...)
		}
		return d
	}
	if e.agent.idleTurn > 0 && s.recs > 0 && s.last.K != "reset" && ev.Kind == KindPre &&
		now.Sub(time.Unix(0, s.last.T)) > e.agent.idleTurn {
		add(record{K: "reset"})
	}
	if ev.TurnID != "" && ev.TurnID != s.turn && (ev.Kind == KindPre || ev.Kind == KindPrompt) {
		if s.recs > 0 || ev.Kind == KindPrompt {
			add(record{K: "reset", Turn: ev.TurnID})
		} else {
			add(record{K: "turn", Turn: ev.TurnID}) // the first turn's id
		}
	} else if ev.Kind == KindPrompt && (s.recs > 0 && s.last.K != "reset") {
		add(record{K: "reset", Turn: ev.TurnID})
	}
	switch ev.Kind {
	case KindPre:
		if e.agent.resultBlind {
			for _, p := range append([]record(nil), s.pending...) {
				add(record{K: "post", ID: p.ID, Tool: p.Tool, A: p.A})
			}
		}
		r := record{K: "pre", ID: ev.CallID, Tool: ev.Tool, A: standIn(ev.Args)}
		r.R = s.round
		// Calls checked one after the other with no result between are
		// one model response's: its hooks start together. A refused call
		// has no result to wait for, so after one only a call checked
		// within roundGap joins it, and never the refused call itself
		// again (a model that insists answers the refusal).
		refusedAgain := s.last.V != toolguard.Allow && s.last.Tool == r.Tool && bytes.Equal(s.last.A, r.A)
		sameRound := s.last.K == "pre" && !e.agent.resultBlind && !refusedAgain &&
			(s.last.V == toolguard.Allow || now.Sub(time.Unix(0, s.last.T)) < roundGap)
		if !sameRound || s.roundCx == nil {
			r.R = s.round + 1
		}
		earlier := s.aborts
		d := add(r)
		if d.Verdict == toolguard.Allow {
			return Answer{}, out
		}
		return Answer{
			Verdict: d.Verdict, Reason: d.Reason,
			Message: e.refusal(d),
			Stop:    d.Verdict == toolguard.Abort,
			Aborts:  earlier,
		}, out
	case KindPost:
		// Delivered twice, or the call was refused; but a model may reuse
		// a call id, and then the id names its pending call, as it does
		// for the Tracker.
		if ev.CallID != "" && !s.hasPending(ev.CallID) && (s.posted[ev.CallID] || s.refused[ev.CallID]) {
			return Answer{}, out
		}
		res := e.agent.maskAgentNoise(ev.Result)
		o := resultToken(res)
		if ev.Failed {
			o = errorToken(res)
		}
		r := record{K: "post", ID: ev.CallID, O: o, F: ev.Failed}
		if !s.hasPending(ev.CallID) {
			r.Tool, r.A = ev.Tool, standIn(ev.Args)
		}
		add(r)
	case KindStop:
		if s.aborts > 0 {
			return Answer{Verdict: toolguard.Abort, Stop: true, Message: e.stopText()}, out
		}
	case KindTools:
		if s.phase >= toolguard.PhaseWindDown {
			return Answer{NoTools: true}, out
		}
	}
	return Answer{}, out
}

func (e *Engine) stopText() string {
	return "toolguard stopped this run: the model kept repeating a call it had been told was a loop. " +
		"See `toolguard hook log` for why."
}

// refusal is the text the model (and, on a stop, the user) reads.
func (e *Engine) refusal(d toolguard.Decision) string {
	msg := d.Message
	if msg == "" && d.Err != nil {
		msg = d.Err.Error()
	}
	return msg + "\n(toolguard: this call was not run. To let a tool repeat, set TOOLGUARD_EXEMPT=TOOL; " +
		"to switch the guard off, TOOLGUARD_HOOK=off or `toolguard hook uninstall --agent " + e.agent.name + "`.)"
}

// cleanup removes the state of sessions untouched for longer than keep,
// except the current one.
func (e *Engine) cleanup(current string) {
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		return
	}
	// Modification times come from the system clock: so does the cut.
	cut := time.Now().Add(-e.keep)
	for _, de := range ents {
		p := filepath.Join(e.dir, de.Name())
		if p == current || !de.IsDir() {
			continue
		}
		st, err := os.Stat(filepath.Join(p, "log"))
		if err == nil && st.ModTime().After(cut) {
			continue
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if info, err := de.Info(); err == nil && info.ModTime().After(cut) {
			continue
		}
		_ = os.RemoveAll(p)
	}
}
