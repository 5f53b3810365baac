package mcpproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/mcpguard"
)

// What a turn and a conversation are for the proxy. A stdio proxy sees
// neither a user's message nor a new chat: a desktop host starts the
// server once and keeps it for every chat. So:
//
//   - Calls without a conversation id belong to the proxy's one implicit
//     conversation. An idle gap (--idle-reset: no call sent or waiting for
//     that long) ends it: the next call opens a new one, with a fresh
//     Tracker (turn state, failure chains and session quotas start over).
//     A proxy cannot tell the next chat from the next message of the same
//     chat, and merging two chats is what refuses calls wrongly, while a
//     loop's calls come seconds apart: the gap is read as a new chat.
//   - A client that sends a conversation id in a tools/call's _meta
//     (MetaConversation) gets one conversation per id: its own Tracker, whose
//     session quotas count that conversation. There an idle gap ends the
//     turn (Tracker.Reset), not the conversation.
//   - An initialize request (a client connecting again) ends every
//     conversation.
//
// At most maxConversations conversations are kept; the one idle longest is
// ended to open another, so memory stays bounded however many chats pass.

// MetaConversation is the _meta key of a tools/call that names its
// conversation: a string or a number. The MCP adapters read the same key.
const MetaConversation = mcpguard.MetaConversation

// DefaultIdleReset is the default of --idle-reset.
const DefaultIdleReset = 60 * time.Second

// maxConversations bounds the conversations with an id kept at once.
const maxConversations = 256

// maxKey is the longest conversation id kept as it is; a longer one is
// kept as its SHA-256.
const maxKey = 128

// conversation is one conversation's Tracker and its clock.
type conversation struct {
	key      string // "" for the implicit conversation
	tracker  *toolguard.Tracker
	last     time.Time // the last call sent or answered
	inflight int       // calls sent and not answered
	calls    int       // calls checked in this turn
}

// conversations are the proxy's conversations. The proxy's mutex guards
// them.
type conversations struct {
	idle     time.Duration // 0: no idle reset
	sessions *toolguard.Sessions
	byKey    map[string]*conversation
	changed  bool // the policy changed (read-only hints): remake sessions when none is open
	// Counters for the summary.
	opened, turns int
}

// conversationKey returns the conversation id of a tools/call's _meta, or
// "" when it names none.
func conversationKey(meta map[string]json.RawMessage) string {
	raw, ok := meta[MetaConversation]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return ""
		}
		s = "#" + n.String()
	} else if s == "" {
		return ""
	} else {
		s = "$" + s
	}
	if len(s) > maxKey {
		sum := sha256.Sum256([]byte(s))
		s = "@" + hex.EncodeToString(sum[:])
	}
	return s
}

// get returns the conversation of key at now, opening it, or starting a
// new turn or conversation after an idle gap.
func (cs *conversations) get(key string, now time.Time, policy func() toolguard.Policy) *conversation {
	if cs.byKey == nil {
		cs.byKey = make(map[string]*conversation)
	}
	c := cs.byKey[key]
	idle := c != nil && cs.idle > 0 && c.inflight == 0 && c.calls > 0 && now.Sub(c.last) >= cs.idle
	switch {
	case idle && key == "":
		cs.end(c)
		c = nil
	case idle:
		c.tracker.Reset()
		c.calls = 0
		cs.turns++
	}
	if c == nil {
		if cs.sessions == nil || cs.changed && len(cs.byKey) == 0 {
			cs.sessions, cs.changed = toolguard.NewSessions(policy()), false
		}
		if len(cs.byKey) >= maxConversations {
			cs.end(cs.oldest())
		}
		c = &conversation{key: key, tracker: cs.sessions.NewTracker()}
		cs.byKey[key] = c
		cs.opened++
		cs.turns++
	}
	c.last = now
	c.calls++
	return c
}

// oldest returns the conversation idle longest, those with calls waiting
// last.
func (cs *conversations) oldest() *conversation {
	var old *conversation
	for _, c := range cs.byKey {
		if old == nil || (c.inflight == 0) != (old.inflight == 0) && c.inflight == 0 ||
			(c.inflight == 0) == (old.inflight == 0) && c.last.Before(old.last) {
			old = c
		}
	}
	return old
}

// end ends a conversation. Its calls still waiting are answered to the
// client as usual and booked nowhere.
func (cs *conversations) end(c *conversation) {
	if c == nil {
		return
	}
	delete(cs.byKey, c.key)
	cs.sessions.Release(c.tracker)
}

// reset ends every conversation (a new initialize); the next call opens
// new ones under a policy rebuilt with the read-only hints known then.
func (cs *conversations) reset() {
	for _, c := range cs.byKey {
		cs.end(c)
	}
	cs.sessions = nil
}

// policyLocked is the policy of new conversations: the proxy's, with the
// read-only hints learned so far.
func (px *proxy) policyLocked() toolguard.Policy {
	return mcpguard.ReadOnly(px.policy, px.readOnly...)
}
