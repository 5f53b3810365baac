package toolguard

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// redacted replaces a secret in a kept purpose. Normalized as a query it
// reads "redacted".
const redacted = "[REDACTED]"

// redactMaxBytes is the prefix of a text that Redact reads: more
// than normalizeQuery keeps (queryMaxBytes), so that a secret which crosses
// that cut is still seen whole. The rest is dropped.
const redactMaxBytes = queryMaxBytes + 256

// secretPrefixes start the API keys and tokens of common providers: a word
// that starts with one and has at least 8 more characters is a secret.
var secretPrefixes = []string{
	"sk-", "sk_", "pk_live_", "rk_live_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
	"glpat-", "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "AKIA", "ASIA", "AIza", "hf_",
	"npm_", "pypi-", "shpat_", "SG.", "eyJ",
}

// secretNames end the names of secrets ("password=hunter2", "X-Api-Key:
// abc", ";Password=…;", "&api_key=…"), as isSecretName compares them.
var secretNames = []string{
	"password", "passwd", "pwd", "secret", "token", "apikey", "accesskey", "privatekey",
	"accountkey", "secretkey", "credentials", "authorization", "passphrase",
}

// secretParams are the short names that mark a secret only as a
// parameter, "name=value" (a URL's "?key=…", "&sig=…"), never before a
// colon, where they are ordinary words ("primary key: …").
var secretParams = []string{"key", "sig", "signature", "auth", "pass"}

// webhookPaths start the URLs whose rest is a credential.
var webhookPaths = []string{
	"hooks.slack.com/services/", "hooks.slack.com/workflows/", "discord.com/api/webhooks/",
	"discordapp.com/api/webhooks/", ".webhook.office.com/webhookb2/",
}

// secretSchemes precede a credential in a header ("Bearer abc…").
var secretSchemes = []string{"bearer", "basic", "token"}

// next is what the word after the current one may be.
type next uint8

const (
	nextPlain  next = iota
	nextValue       // the value of "name:" or "name=": redacted
	nextScheme      // after "bearer": redacted if it looks like a credential
)

// Redact returns s with the secrets it may hold replaced by [REDACTED], by
// the rules the ledger applies to Entry.Purpose (docs/concepts.md,
// "Redaction"). It reads at most the first 1,280 bytes of s and drops the
// rest. Reports that show a call's arguments or result (the audit command)
// pass them through it. It redacts word by word, a word being a run of bytes
// other than white space and commas (redactWord), and returns s itself when
// it finds nothing.
func Redact(s string) string {
	s = s[:min(len(s), redactMaxBytes)]
	state := nextPlain
	return replaceParts(s, " ,\t\n\r\f\v", func(word string) (red string) {
		red, state = redactWord(word, state)
		return red
	})
}

// replaceParts returns s with each part between the bytes of seps replaced
// by f(part), or s itself when f changes no part.
func replaceParts(s, seps string, f func(string) string) string {
	var b strings.Builder
	last := 0
	for start := 0; start < len(s); {
		end := start + strings.IndexAny(s[start:], seps)
		if end < start {
			end = len(s)
		}
		if red := f(s[start:end]); red != s[start:end] {
			b.WriteString(s[last:start])
			b.WriteString(red)
			last = end
		}
		start = end + 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// redactWord redacts one word, given what the word before it was. It
// returns the word, redacted or not, and what the next word may be.
func redactWord(word string, state next) (string, next) {
	core := strings.Trim(word, `"'()[]{}<>,;`)
	if core == "" {
		return word, state
	}
	scheme := slices.ContainsFunc(secretSchemes, func(sch string) bool {
		return strings.EqualFold(core, sch)
	})
	switch {
	case state == nextValue && scheme: // "Authorization: Bearer abc…"
		return word, nextValue
	case state == nextValue,
		state == nextScheme && len(core) >= 12 && strings.ContainsAny(core, "0123456789+/=_-."):
		return strings.Replace(word, core, redacted, 1), nextPlain
	}
	if k := strings.IndexAny(core, "=:"); k > 0 && k == len(core)-1 && isSecretName(core[:k], false) {
		return word, nextValue // "password: hunter2"
	}
	if red := redactParts(core); red != core {
		return strings.Replace(word, core, red, 1), nextPlain
	}
	if scheme {
		return word, nextScheme
	}
	return word, nextPlain
}

// redactParts redacts the secrets inside one word: the whole word when it
// looks like a key, a URL's user and password, a webhook URL's rest, and
// each part of a path, a query string or a connection string that is a
// secret or a secret's value (redactPart).
func redactParts(core string) string {
	if isSecretToken(core) {
		return redacted
	}
	if i := strings.Index(core, "://"); i >= 0 {
		auth := core[i+3:]
		if k := strings.IndexAny(auth, "/?#"); k >= 0 {
			auth = auth[:k]
		}
		if at := strings.LastIndexByte(auth, '@'); at > 0 {
			core = core[:i+3] + redacted + core[i+3+at:]
		}
	}
	for _, h := range webhookPaths {
		if j := strings.Index(core, h); j >= 0 && len(core) > j+len(h) {
			return core[:j+len(h)] + redacted
		}
	}
	return replaceParts(core, "?&;/#", redactPart)
}

// redactPart redacts one part of a word: a secret, or the value of a
// secret's name ("Password=…", ":_authToken=…", "key=…").
func redactPart(p string) string {
	name, value, eq := strings.Cut(p, "=")
	if !eq {
		name, value, _ = strings.Cut(p, ":")
	}
	value = strings.TrimLeft(value, "=:")
	if value != "" && (isSecretName(name, eq) || isSecretToken(value)) {
		return p[:len(p)-len(value)] + redacted
	}
	if isSecretToken(p) {
		return redacted
	}
	return p
}

// isSecretName reports whether name, lower-cased with only its first 64
// letters and digits, ends with one of secretNames or, for a parameter
// ("name=value"), is one of secretParams.
func isSecretName(name string, param bool) bool {
	key := strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return unicode.ToLower(r)
		}
		return -1
	}, name)
	key = key[:min(len(key), 64)]
	return param && slices.Contains(secretParams, key) ||
		slices.ContainsFunc(secretNames, func(s string) bool { return strings.HasSuffix(key, s) })
}

// isSecretToken reports whether a word looks like a key or a token.
func isSecretToken(w string) bool {
	return slices.ContainsFunc(secretPrefixes, func(p string) bool {
		return len(w) >= len(p)+8 && strings.HasPrefix(w, p)
	}) || len(w) >= 24 && randomLooking(w)
}

// randomLooking reports whether w, of letters, digits and +/=_-. only,
// mixes letters and digits with an entropy of at least 3.5 bits a byte.
func randomLooking(w string) bool {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=_-."
	if strings.Trim(w, chars) != "" || // then IsLetter and IsDigit see ASCII only
		!strings.ContainsFunc(w, unicode.IsLetter) || !strings.ContainsFunc(w, unicode.IsDigit) {
		return false
	}
	var counts [256]int
	for _, c := range []byte(w) {
		counts[c]++
	}
	entropy := 0.0
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(w))
			entropy -= p * math.Log2(p)
		}
	}
	return entropy >= 3.5
}
