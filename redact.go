package toolguard

import (
	"math"
	"strings"
)

// redacted replaces a secret in a kept purpose. Normalized as a query it
// reads "redacted".
const redacted = "[REDACTED]"

// redactMaxBytes is the prefix of a text that redactSecrets reads: more
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

// secretNames are argument or header names whose value is a secret, as in
// "password=hunter2", "api_key: abc" or "Authorization: Bearer abc".
var secretNames = []string{
	"password", "passwd", "pwd", "secret", "token", "api_key", "apikey", "api-key",
	"access_key", "access_token", "refresh_token", "private_key", "client_secret",
	"authorization", "credentials",
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

// redactSecrets returns s with the secrets it may hold replaced by
// [REDACTED], for the purpose the ledger keeps (see Entry.Purpose). A
// word (a run of bytes other than white space and commas) is, once the quotes and
// brackets around it are stripped, redacted when it
//   - starts with a provider's key prefix (secretPrefixes) and has at least
//     8 more characters;
//   - is the value of "name=value" or "name:value", or follows "name:",
//     where name is a secret's name (secretNames: "password", "token" …);
//   - follows "bearer", "basic" or "token" and is 12 or more characters
//     with a digit or one of "+/=_-.";
//   - is 24 or more characters of letters, digits and "+/=_-." with at
//     least one letter and one digit and about 3.5 bits of entropy per
//     character or more (random keys and tokens, not words);
//
// and a URL's user and password ("https://user:pass@host") are redacted.
// It reads at most redactMaxBytes of s. It returns s itself when it finds
// nothing.
func redactSecrets(s string) string {
	if len(s) > redactMaxBytes {
		s = s[:redactMaxBytes]
	}
	var b strings.Builder
	last, state := 0, nextPlain
	for i := 0; i < len(s); {
		if isSpace(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
		word := s[i:j]
		var red string
		red, state = redactWord(word, state)
		if red != word {
			if b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:i])
			b.WriteString(red)
			last = j
		}
		i = j
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// isSpace reports whether c separates words: white space, and the comma
// that separates argument names.
func isSpace(c byte) bool {
	return c == ' ' || c == ',' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// redactWord redacts one word, given what the word before it was. It
// returns the word, redacted or not, and what the next word may be.
func redactWord(word string, state next) (string, next) {
	core := strings.Trim(word, `"'()[]{}<>,;`)
	if core == "" {
		return word, state
	}
	scheme := false
	for _, sch := range secretSchemes {
		scheme = scheme || strings.EqualFold(core, sch)
	}
	switch {
	case state == nextValue && scheme: // "Authorization: Bearer abc…"
		return word, nextValue
	case state == nextValue:
		return strings.Replace(word, core, redacted, 1), nextPlain
	case state == nextScheme && len(core) >= 12 && strings.ContainsAny(core, "0123456789+/=_-."):
		return strings.Replace(word, core, redacted, 1), nextPlain
	}
	if i := strings.Index(core, "://"); i >= 0 {
		auth := core[i+3:]
		if k := strings.IndexAny(auth, "/?#"); k >= 0 {
			auth = auth[:k]
		}
		if at := strings.LastIndexByte(auth, '@'); at > 0 {
			return strings.Replace(word, core[:i+3]+auth[:at], core[:i+3]+redacted, 1), nextPlain
		}
		return word, nextPlain
	}
	if k := strings.IndexAny(core, "=:"); k > 0 && isSecretName(core[:k]) {
		if value := strings.TrimLeft(core[k+1:], "=:"); value != "" {
			return strings.Replace(word, core, core[:k+1]+redacted, 1), nextPlain
		}
		return word, nextValue // "password: hunter2"
	}
	if isSecretToken(core) {
		return strings.Replace(word, core, redacted, 1), nextPlain
	}
	if scheme {
		return word, nextScheme
	}
	return word, nextPlain
}

func isSecretName(s string) bool {
	s = strings.ToLower(strings.Trim(s, `"'`))
	for _, n := range secretNames {
		if s == n {
			return true
		}
	}
	return false
}

// isSecretToken reports whether a word looks like a key or a token.
func isSecretToken(w string) bool {
	for _, p := range secretPrefixes {
		if len(w) >= len(p)+8 && strings.HasPrefix(w, p) {
			return true
		}
	}
	if len(w) < 24 {
		return false
	}
	var counts [256]int
	letters, digits := 0, 0
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			letters++
		case '0' <= c && c <= '9':
			digits++
		case strings.IndexByte("+/=_-.", c) >= 0:
		default:
			return false
		}
		counts[c]++
	}
	if letters == 0 || digits == 0 {
		return false
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

// Redact returns s with the secrets it may hold replaced by [REDACTED], by
// the rules the ledger applies to Entry.Purpose: provider key prefixes,
// the value after password=, token: and similar names, the credential
// after bearer, basic or token, a URL's user and password, and long
// random-looking strings. It reads at most the first 1,280 bytes of s and
// drops the rest. Reports that show a call's arguments or result (the
// audit command) pass them through it.
func Redact(s string) string { return redactSecrets(s) }
