package toolguard

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secretShapes are 13 common ways a secret reaches a search query: a
// pasted URL, header, connection string or config line. secret is the
// part that must not reach the ledger.
var secretShapes = []struct{ name, query, secret string }{
	{"key in a URL query", "geocode https://maps.googleapis.com/maps/api/geocode/json?address=paris&key=AIzaSyD9tSrke72PouQMnMX7a7eZSW0jkFMBWY", "AIzaSyD9tSrke72PouQMnMX7a7eZSW0jkFMBWY"},
	{"api_key in a URL query", "why 403 https://api.example.com/v1/items?limit=10&api_key=letmein2024now", "letmein2024now"},
	{"access_token in a URL query", "graph error https://graph.facebook.com/me?access_token=EAACEdEose0cBAJ3kq&fields=id", "EAACEdEose0cBAJ3kq"},
	{"Slack webhook", "post to https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/Xy7pQ9rTvWzAbCdEfGhKmNpQ fails", "Xy7pQ9rTvWzAbCdEfGhKmNpQ"},
	{"Discord webhook", "https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUv returns 401", "AbCdEfGhIjKlMnOpQrStUv"},
	{"connection string password", "Server=db.internal;Database=prod;User Id=sa;Password=Winter2024!; login failed", "Winter2024"},
	{"Azure AccountKey", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXVxeA==;EndpointSuffix=core.windows.net", "Zm9vYmFyYmF6cXVxeA"},
	{"npm _authToken", "npm E401 //registry.npmjs.org/:_authToken=9a8b7c6d-1234-5678-9abc-def012345678", "9a8b7c6d-1234-5678-9abc-def012345678"},
	{"X-Api-Key header", `curl -H "X-Api-Key: letmein2024now" https://api.example.com`, "letmein2024now"},
	{"SAS signature", "https://acct.blob.core.windows.net/c/b.txt?sv=2021-08-06&sr=b&sp=r&sig=lJ8bF3K9xv0aYw%3D 403", "lJ8bF3K9xv0aYw"},
	{"Telegram bot token", "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe not found", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"},
	{"URL password", "connect postgres://app:S3cretPass@db:5432/prod refused", "S3cretPass"},
	{"password= in a config line", "DB_PASSWORD=hunter2hunter2 not read", "hunter2hunter2"},
}

// TestLedgerPurposeSecretShapes pins issue 29 item 4: with the default
// Policy the ledger's purpose kept 9 of 13 common secret shapes pasted
// into a search query (keys in URL query strings, webhook URLs,
// connection strings, npm tokens). Now it keeps none, and what Entry.Purpose's
// doc promises (the value of password=, token:, api_key= and similar
// names) holds inside URLs and connection strings too.
func TestLedgerPurposeSecretShapes(t *testing.T) {
	kept := 0
	for _, sh := range secretShapes {
		tr := NewTracker(Policy{})
		c := Call{Tool: "web_search", Args: mustJSON(t, map[string]string{"query": sh.query})}
		require.Equal(t, Allow, tr.ShouldSkip(c).Verdict)
		purpose := tr.Ledger()[0].Purpose
		if leaks(purpose, sh.secret) {
			kept++
			t.Errorf("%s: the purpose %q keeps the secret", sh.name, purpose)
		}
	}
	t.Logf("secret shapes kept in the ledger's purpose: %d of %d", kept, len(secretShapes))
}

// leaks reports whether purpose holds a run of 6 or more letters and
// digits of secret, in any case: normalization lowercases and splits
// words.
func leaks(purpose, secret string) bool {
	p := strings.ToLower(purpose)
	for _, run := range strings.FieldsFunc(strings.ToLower(secret), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		if len(run) >= 6 && strings.Contains(p, run) {
			return true
		}
	}
	return false
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestRedactKeepsPlainText: the names that mark a secret mark it only as
// a name with a value: the words of ordinary queries stay.
func TestRedactKeepsPlainText(t *testing.T) {
	for _, s := range []string{
		"sql primary key: what is it",
		"max_tokens=4096 limit",
		"keyword=golang&page=2",
		"https://example.com/docs/api/v1/keys?lang=en",
		"src/main.go:42 panic",
		"the token refresh flow",
		"passage=1 of the book",
		"https://pkg.go.dev/golang.org/x/time/rate#Limiter",
	} {
		assert.Equal(t, s, Redact(s))
	}
}
