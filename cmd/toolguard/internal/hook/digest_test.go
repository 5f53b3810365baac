package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolguard/toolguard"
	"github.com/toolguard/toolguard/internal/canon"
)

// The stand-in carries the core's own shape of the arguments: what the
// failure rule reads of the stand-in is that shape after a prefix every
// stand-in shares. Two cp commands whose globs differ (from the labelled
// trace intercode-bash_vicuna, episode fs_1/15) keep different shapes, as
// in the Tracker; a coarser masking of paths made them one.
func TestStandInShape(t *testing.T) {
	for _, args := range []string{
		`{"command": "cp /testbed/dir1/foobar/* /testbed/dir3/subdir1/subsubdir1/tmp/"}`,
		`{"command": "cp /testbed/dir1/foobar/*/* /testbed/dir3/subdir1/subsubdir1/tmp/"}`,
		`{"command": "grep -n 'x' ./a.py", "timeout": 12}`,
		`["not", "an", "object"]`,
	} {
		si := standIn(json.RawMessage(args))
		assert.NotContains(t, string(si), "testbed", "no particulars kept")
		read := argsShape(si)
		_, rest, ok := strings.Cut(read, " _s: ")
		require.True(t, ok, read)
		assert.Equal(t, argsShape([]byte(args)), rest, args)
	}
	a := argsShape(standIn(json.RawMessage(`{"command": "cp /testbed/dir1/foobar/* /tmp/"}`)))
	b := argsShape(standIn(json.RawMessage(`{"command": "cp /testbed/dir1/foobar/*/* /tmp/"}`)))
	assert.NotEqual(t, a, b)
}

// A failure's token is equal exactly when the Tracker's failure signature
// masks the texts alike; a result's when its noise masking does. Tokens are
// letters, which the Tracker's masking keeps as they are.
func TestStandInTokens(t *testing.T) {
	same := errorToken("open /tmp/a.txt: no such file or directory (line 12)")
	assert.Equal(t, same, errorToken("open /var/b.txt: No such file  or directory (line 7)"))
	assert.NotEqual(t, same, errorToken("open /tmp/a.txt: permission denied (line 12)"))
	r := resultToken("done at 2024-05-20T10:00:00Z in 5 seconds")
	assert.Equal(t, r, resultToken("done at 2025-01-02T11:12:13Z in 7 seconds"))
	assert.NotEqual(t, r, resultToken("failed at 2024-05-20T10:00:00Z in 5 seconds"))
	assert.Empty(t, resultToken(""))
	for _, tok := range []string{same, r, errorToken("")} {
		assert.Regexp(t, `^[a-z]+$`, tok)
		assert.Equal(t, tok, argsShape([]byte(tok)), "masking leaves a token as it is")
	}
}

// The SHA-256 sums the hook keeps hash exactly the text the core's masking
// writes, in one piece or across pieces, and stay the sums earlier versions
// stored (their first 8 bytes pinned: noise masked, then failure masked).
func TestSHASums(t *testing.T) {
	long := strings.Repeat("cp: cannot stat '/testbed/dir1/*foobar/*': No such file or directory at 2024-05-20T10:00:00Z ", 200)
	for _, c := range []struct{ s, noise, failure string }{
		{"", "e3b0c44298fc1c14", "e3b0c44298fc1c14"},
		{"ok", "2689367b205c16ce", "2689367b205c16ce"},
		{"Error: open /tmp/a.txt (line 12)", "7f57237516039e06", "4f7037d61ef8ac58"},
		{"took 5 seconds, id 0123456789abcdef0123", "7324cd9ba6d70a84", "7324cd9ba6d70a84"},
		{long, "643276af66f26d57", "a89776af58d31a61"},
	} {
		for _, err := range []bool{false, true} {
			var b strings.Builder
			canon.Mask(c.s, err, func(p string) { b.WriteString(p) })
			sum := maskedSHA(c.s, err)
			assert.Equal(t, sha256.Sum256([]byte(b.String())), sum, c.s)
			assert.Equal(t, map[bool]string{false: c.noise, true: c.failure}[err], hex.EncodeToString(sum[:8]), c.s)
		}
	}
	args := []byte(`{"command":"grep -n 'x' ./a.py","n":12}`)
	var c canon.Args
	c.Scan(args)
	assert.Equal(t, c.Shape(), argsShape(args))
	assert.Equal(t, argsShape([]byte(`{"command":"grep -n 'y' ./b.py","n":3}`)), argsShape(args))
}

// A model may reuse a call id (the tau-bench airline trace does): the
// result then belongs to the pending call of that id, as in the Tracker,
// and is not dropped as delivered twice.
func TestReusedCallID(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := NewEngine(claudeAgent, toolguard.Policy{}, t.TempDir(), func() time.Time { clock = clock.Add(time.Second); return clock })
	calls := []struct{ args, result string }{
		{`{"id": 1}`, "ok"},
		{`{"id": 2}`, "Error: gift card balance is not enough"},
		{`{"id": 3}`, "Error: gift card balance is not enough"},
		{`{"id": 4}`, "Error: gift card balance is not enough"},
	}
	var got []toolguard.Verdict
	for i, c := range calls {
		id := "call_A"
		if i == 3 {
			id = "call_B"
		}
		a, err := e.Handle(Event{Kind: KindPre, Session: "s", CallID: id, Tool: "update", Args: json.RawMessage(c.args)})
		require.NoError(t, err)
		got = append(got, a.Verdict)
		_, err = e.Handle(Event{Kind: KindPost, Session: "s", CallID: id, Tool: "update", Args: json.RawMessage(c.args),
			Result: c.result, Failed: strings.HasPrefix(c.result, "Error")})
		require.NoError(t, err)
	}
	a, err := e.Handle(Event{Kind: KindPre, Session: "s", CallID: "call_C", Tool: "update", Args: json.RawMessage(`{"id": 5}`)})
	require.NoError(t, err)
	got = append(got, a.Verdict)
	// Three failures alike, each booked: the fourth try gets the hint.
	assert.Equal(t, []toolguard.Verdict{toolguard.Allow, toolguard.Allow, toolguard.Allow, toolguard.Allow, toolguard.Hint}, got)
}
