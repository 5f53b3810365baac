package toolguard

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedactSecrets(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"how to reset my password", "how to reset my password"},
		{"why does sk-proj-4f9aQ2xLmN7bV1cD8eR3tY6u fail", "why does [REDACTED] fail"},
		{"token ghp_16C7e42F292c6912E7710c838347Ae178B4a invalid", "token [REDACTED] invalid"},
		{"curl -H 'Authorization: Bearer abc.def-123_456'", "curl -H 'Authorization: Bearer [REDACTED]'"},
		{"Bearer eyJhbGciOiJIUzI1NiJ9x", "Bearer [REDACTED]"},
		{"basic authentication example", "basic authentication example"},
		{"login with password=hunter2 please", "login with password=[REDACTED] please"},
		{"api_key: s3cr3t", "api_key: [REDACTED]"},
		{"fetch https://admin:hunter2@db.example.com/x", "fetch https://[REDACTED]@db.example.com/x"},
		{"AKIAIOSFODNN7EXAMPLE leaked", "[REDACTED] leaked"},
		{"key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY0", "key [REDACTED]"},
		{"internationalization_guidelines", "internationalization_guidelines"},
		{"the token refresh flow", "the token refresh flow"},
		{"release v1.2.3 notes", "release v1.2.3 notes"},
	} {
		assert.Equal(t, tc.want, Redact(tc.in), tc.in)
	}
	long := strings.Repeat("word ", 1000)
	assert.Equal(t, long[:redactMaxBytes], Redact(long), "reads a bounded prefix")
}

// TestLedgerPurposeHasNoSecrets pins issue 16 item 5: a key pasted into a
// search query was kept, lower-cased, in the default ledger.
func TestLedgerPurposeHasNoSecrets(t *testing.T) {
	tr := NewTracker(Policy{})
	secret := "sk-proj-4f9aQ2xLmN7bV1cD8eR3tY6u"
	calls := []Call{
		{Tool: "web_search", Args: json.RawMessage(`{"query":"why is ` + secret + ` rejected"}`)},
		{Tool: "web_search", Args: json.RawMessage(`{"query":"connect https://admin:hunter2secret@db.internal/x"}`)},
		{Tool: "run", Args: json.RawMessage(`{"` + secret + `":1,"cmd":"x"}`)},
	}
	for _, c := range calls {
		require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
		tr.Record(c, Outcome{Result: "r"})
	}
	l := tr.Ledger()
	require.Len(t, l, 3)
	for _, e := range l {
		p := strings.ToLower(e.Purpose)
		assert.NotContains(t, p, "4f9aq2xlmn7bv1cd8er3ty6u", e.Purpose)
		assert.NotContains(t, p, "hunter2", e.Purpose)
	}
	assert.Equal(t, "why is redacted rejected", l[0].Purpose)
	assert.Equal(t, "cmd,[REDACTED]", l[2].Purpose)
}

// TestRedact: the exported Redact is the ledger's redaction.
func TestRedact(t *testing.T) {
	in := "curl -H 'Authorization: Bearer Zx81Qw72Er63Ty54Ui45Op36As27' https://admin:s3cr3tPa55@example.com password=hunter2hunter2"
	got := Redact(in)
	for _, secret := range []string{"Zx81Qw72Er63Ty54Ui45Op36As27", "s3cr3tPa55", "hunter2hunter2"} {
		if strings.Contains(got, secret) {
			t.Errorf("Redact(%q) = %q: %s left", in, got, secret)
		}
	}
}
