package toolguard

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simTestThreshold is the threshold the pair table is judged at.
const simTestThreshold = 0.75

func TestQuerySimilarityPairs(t *testing.T) {
	tests := []struct {
		a, b    string
		similar bool
		why     string
	}{
		// Rewordings.
		{"fix bug", "fix the bug", true, "a stop word added"},
		{"How do I reset my password?", "how do i reset my password", true, "case and punctuation only"},
		{"how to restart a kubernetes pod", "restart kubernetes pod", true, "question words and articles are stop words"},
		{"what is the capital of france", "capital of france", true, "the same question, terser"},
		{"how to install docker on ubuntu", "install docker ubuntu", true, "stop words only"},
		{"delete user account", "delete the user account", true, "same destructive verb, a stop word added"},
		{"kill process 1234", "kill the process 1234", true, "same verb, same number"},
		{"restart  nginx\tserver", "restart nginx server!!", true, "white space and punctuation only"},
		{"best pizza in new york", "best pizza new york city", true, "one word added to a long query"},
		{"user_id column", "user id column", true, "an underscore is a word rune, one edit"},
		// Typos and inflections.
		{"kubernetes pod restart", "kubernets pod restart", true, "a typo"},
		{"rust borrow checker error", "rust borow checker eror", true, "two typos"},
		{"python asyncio timeout example", "python asyncio timeout examples", true, "a plural"},
		{"kubectl get pods", "kubectl get pod", true, "a singular"},
		{"configure nginx", "configuring nginx", true, "same stem"},
		{"delete user", "deleted user", true, "an inflection of the same destructive verb"},
		// Different entities.
		{"weather in paris", "weather in london", false, "a different city"},
		{"how to configure logging for service alpha in staging", "how to configure logging for service beta in staging", false, "a different service in a long query"},
		{"restart service", "restart server", false, "a different object, close in spelling"},
		{"buy car", "buy card", false, "short words one letter apart are different words"},
		{"where was einstein born", "when was einstein born", false, "question words that pick the answer are kept"},
		{"how to install docker on ubuntu", "install docker on debian", false, "a different distribution"},
		{"golang http client timeout", "go http client timeout", true, "an abbreviation that begins the word"},
		{"go tool call guard", "golang tool call guard", true, "an abbreviation in a longer query"},
		{"js array map", "java array map", false, "a short word that does not begin the other"},
		// Destructive words and negations.
		{"delete user", "deactivate user", false, "different destructive verbs"},
		{"remove user", "delete user", false, "different destructive verbs, even if synonyms"},
		{"drop table users", "truncate table users", false, "different destructive verbs"},
		{"reset password", "password", false, "a destructive verb on one side only"},
		{"why is my build not working", "why is my build working", false, "a negation on one side only"},
		// Numbers.
		{"error 404", "error 500", false, "different numbers"},
		{"error 4041 nginx", "error 4042 nginx", false, "one digit apart is still a different number"},
		{"release notes v1.2.3", "release notes v1.2.4", false, "a different version"},
		{"python 3", "python3", false, "numbers compare as whole words"},
		// Word order.
		{"pod restart kubernetes", "kubernetes pod restart", false, "reordered words score low"},
		{"convert usd to eur", "convert eur to usd", false, "reordering can reverse the question"},
		{"flights from paris to london", "flights from london to paris", false, "reordering can reverse the question"},
		// Non-ASCII.
		{"Café à Paris", "cafe a paris", true, "Latin diacritics fold, and a folded 'a' is a stop word"},
		{"Straße Berlin", "strasse berlin", false, "'ß' is not folded"},
		{"東京 天気", "東京 天気 明日", false, "a word added to a two-word query"},
		{"ÜBER UNS", "über uns", true, "Unicode case only"},
		// Empty queries.
		{"🔥🔥", "🔥🔥", false, "emoji only: normalizes to nothing"},
		{"🔥", "😀", false, "emoji only"},
		{"", "", false, "an empty query says nothing"},
		{"?!", "fix bug", false, "empty against non-empty"},
		{"the", "the", true, "identical, though only a stop word"},
		{"the", "a", false, "all stop words are kept when nothing else is"},
	}
	require.GreaterOrEqual(t, len(tests), 30)
	for _, tt := range tests {
		t.Run(tt.a+"|"+tt.b, func(t *testing.T) {
			a, b := normalizeQuery(tt.a), normalizeQuery(tt.b)
			s := querySimilarity(a, b)
			assert.Equal(t, tt.similar, s >= simTestThreshold, "score %.3f: %s", s, tt.why)
			assert.Equal(t, s, querySimilarity(b, a), "symmetric")
			assert.True(t, s >= 0 && s <= 1, "score %v out of [0, 1]", s)
		})
	}
}

func TestQuerySimilarityEdges(t *testing.T) {
	assert.Equal(t, 1.0, querySimilarity("fix bug", "fix bug"), "identical")
	assert.Equal(t, 1.0, querySimilarity("fix bug", "fix the bug"), "identical keys")
	assert.Equal(t, 0.0, querySimilarity("", "fix bug"), "empty against non-empty")
	assert.Equal(t, 0.0, querySimilarity("fix bug", ""), "non-empty against empty")
	assert.Equal(t, 0.0, querySimilarity("", ""), "two empty queries")
	assert.Equal(t, 0.0, querySimilarity("   ", "   "), "white space only")
	// The ratio itself: one substitution in 22 runes.
	assert.InDelta(t, 1-1.0/22, querySimilarity("kubernetes pod restart", "kubernetes pod restert"), 1e-12)
	// Not normalized, invalid UTF-8: no panic, still in range.
	s := querySimilarity("\xff\xfe abc", "\xff abc")
	assert.True(t, s >= 0 && s <= 1)
}

func TestSimKeyOf(t *testing.T) {
	tests := []struct {
		in, text string
	}{
		{"how to fix the bug", "fix bug"},
		{"how to", "how to"}, // all stop words: all kept
		{"café à paris", "cafe paris"},
		{"łódź", "lodz"},
		{"straße", "straße"},
		{"fix  bug", "fix bug"}, // not normalized: split at white space
		{"", ""},
	}
	for _, tt := range tests {
		k := simKeyOf(tt.in)
		assert.Equal(t, tt.text, k.text, "key of %q", tt.in)
		assert.Equal(t, utf8.RuneCountInString(k.text), k.runes, "runes of %q", tt.in)
	}
	assert.Equal(t, simDelete, simKeyOf("deleting old logs").agree)
	assert.Equal(t, simKill|simNegation, simKeyOf("dont kill it").agree)
	assert.NotZero(t, simKeyOf("error 404").numbers)
	assert.Zero(t, simKeyOf("error four").numbers)
}

func TestSimClose(t *testing.T) {
	tests := []struct {
		x, y  string
		close bool
	}{
		{"pod", "pods", true},
		{"config", "configuration", true},
		{"configure", "configuring", true},
		{"kubernetes", "kubernets", true},
		{"car", "card", false},
		{"paris", "london", false},
		{"service", "server", false},
		{"go", "golang", true},
		{"py", "python", true},
		{"pod", "podcast", true}, // the ratio of the queries decides
		{"tool", "toolcall", true},
		{"go", "gone", false},
		{"rome", "nome", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.close, simClose(tt.x, tt.y), "%q %q", tt.x, tt.y)
		assert.Equal(t, tt.close, simClose(tt.y, tt.x), "%q %q", tt.y, tt.x)
	}
}

func TestQuerySimilarityAllocs(t *testing.T) {
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		querySimilarity("kubernetes pod restart", "kubernetes pod restart")
	}), "identical queries")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		querySimilarity("error 404 nginx", "error 500 nginx")
	}), "rejected by the number check")
	// Short keys with no stop words: the keys are the queries, and the
	// Levenshtein rune slices of 32 runes or fewer stay on the stack.
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		querySimilarity("kubernetes pod restart", "kubernets pod restart")
	}), "keys are the queries")
	// A key without the stop words of its query is a new string.
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() {
		querySimilarity("fix the bug", "fix bug")
	}), "one key differs from its query")
}

func TestNormalizeQuery(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"fix bug", "fix bug"},
		{"How do I reset my password?", "how do i reset my password"},
		{"  fix \t\n bug  ", "fix bug"},
		{"fix\u00a0bug\u3000now", "fix bug now"}, // no-break and ideographic spaces
		{"foo-bar, baz.qux!", "foobar bazqux"},   // punctuation is dropped, not spaced
		{"user_id = 42", "user_id 42"},
		{"C++ vs C#", "c vs c"},
		{"ÜBER Straße", "über straße"},
		{"Cafe\u0301", "cafe"}, // a combining mark is dropped
		{"Café", "café"},       // a precomposed letter is kept
		{"東京の天気", "東京の天気"},
		{"İstanbul", "istanbul"},
		{"١٢٣ ٤", "١٢٣ ٤"}, // Arabic-Indic digits are digits
		{"🔥 fire 🔥", "fire"},
		{"🔥🔥", ""},
		{"a\u200bb", "ab"}, // a zero-width space is not white space
		{"\xff\xfebad\xffutf8", "badutf8"},
		{"... !!! ???", ""},
	}
	for _, tt := range tests {
		got := normalizeQuery(tt.in)
		assert.Equal(t, tt.want, got, "normalizeQuery(%q)", tt.in)
		assert.Equal(t, got, normalizeQuery(got), "idempotent on %q", tt.in)
	}
}

func TestNormalizeQueryCut(t *testing.T) {
	// One long word is cut inside it.
	got := normalizeQuery(strings.Repeat("a", 1000))
	assert.Equal(t, strings.Repeat("a", queryMaxRunes), got)

	// The cut never leaves a trailing space.
	got = normalizeQuery(strings.Repeat("a ", 200))
	assert.Equal(t, queryMaxRunes-1, utf8.RuneCountInString(got))
	assert.False(t, strings.HasSuffix(got, " "))
	// Nor half a word: "ab" 85 times is 254 runes, and " a" would fit.
	got = normalizeQuery(strings.Repeat("ab ", 200))
	assert.Equal(t, queryMaxRunes-2, utf8.RuneCountInString(got))
	assert.True(t, strings.HasSuffix(got, " ab ab"), "cut between words")
	got = normalizeQuery(strings.Repeat("x", queryMaxRunes-2) + " abc")
	assert.Equal(t, strings.Repeat("x", queryMaxRunes-2), got)

	// Four-byte letters: the cut is in runes, and a normalized query fits in
	// the prefix normalizeQuery reads.
	wide := strings.Repeat("𝒜", 1000) // U+1D49C, a letter without a lowercase
	got = normalizeQuery(wide)
	assert.Equal(t, queryMaxRunes, utf8.RuneCountInString(got))
	assert.Equal(t, queryMaxBytes, len(got))
	assert.Equal(t, got, normalizeQuery(got))

	// Only a prefix is read: text after it does not count.
	got = normalizeQuery(strings.Repeat("!", queryMaxBytes) + "hidden")
	assert.Equal(t, "", got)

	// The prefix is not cut inside a rune: a rune that does not fit whole is
	// not read.
	got = normalizeQuery(strings.Repeat("!", queryMaxBytes-2) + "é and more")
	assert.Equal(t, "é", got)
	got = normalizeQuery(strings.Repeat("!", queryMaxBytes-1) + "é and more")
	assert.Equal(t, "", got)
}

func TestNormalizeQueryEveryRune(t *testing.T) {
	// Lowercasing never changes whether a rune is kept, and is idempotent,
	// so every single-rune query normalizes idempotently.
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		got := normalizeQuery(string(r))
		if normalizeQuery(got) != got || utf8.RuneCountInString(got) > 1 {
			t.Fatalf("normalizeQuery(%U) = %q, not idempotent", r, got)
		}
	}
}

func TestQueryHugeInputs(t *testing.T) {
	base := strings.Repeat("how to restart the kubernetes pod in namespace prod ", 6000)
	// Two 300 KB queries that differ only after the cut, and two that
	// differ by a typo before it, which makes for a full 256-rune distance.
	a, b := base+"alpha", base+"beta"
	c, d := "kubernetes "+base, "kubernets "+base
	require.Greater(t, len(a), 300_000)

	start := time.Now()
	na, nb := normalizeQuery(a), normalizeQuery(b)
	nc, nd := normalizeQuery(c), normalizeQuery(d)
	sab, scd := querySimilarity(na, nb), querySimilarity(nc, nd)
	raw := querySimilarity(c, d) // not normalized: cut as well
	elapsed := time.Since(start)

	for _, n := range []string{na, nb, nc, nd} {
		assert.LessOrEqual(t, utf8.RuneCountInString(n), queryMaxRunes)
		assert.Greater(t, utf8.RuneCountInString(n), queryMaxRunes-10)
	}
	assert.Equal(t, na, nb, "the difference is past the cut")
	assert.Equal(t, 1.0, sab)
	assert.Greater(t, scd, 0.95)
	assert.Less(t, scd, 1.0)
	assert.Equal(t, scd, raw)
	assert.LessOrEqual(t, simKeyOf(c).runes, queryMaxRunes)
	assert.Less(t, elapsed, 50*time.Millisecond, "bounded work")
}

func TestQueryIndexRounds(t *testing.T) {
	var x queryIndex
	assert.False(t, x.similar("fix bug", 1, 0.75), "empty index")

	x.add("fix the bug", 1)
	assert.False(t, x.similar("fix the bug", 1, 0.75), "same round, same query")
	assert.False(t, x.similar("fix bug", 1, 0.75), "same round, similar query")
	assert.False(t, x.similar("fix bug", 0, 0.75), "an entry from a later round")
	assert.True(t, x.similar("fix the bug", 2, 0.75), "earlier round, same query")
	assert.True(t, x.similar("fix bug", 2, 0.75), "earlier round, similar query")
	assert.False(t, x.similar("weather in paris", 2, 0.75), "earlier round, different query")

	// Adding a query again keeps one entry and its earliest round.
	x.add("fix the bug", 5)
	x.add("fix the bug", 0)
	assert.Len(t, x.entries, 1)
	assert.True(t, x.similar("fix bug", 1, 0.75))

	// Queries without a word are not recorded and match nothing.
	x.add("", 1)
	assert.Len(t, x.entries, 1)
	assert.False(t, x.similar("", 9, 0))
}

func TestQueryIndexThreshold(t *testing.T) {
	var x queryIndex
	x.add("weather in paris", 1)
	assert.True(t, x.similar("kubernetes pod restart", 2, 0), "threshold 0: any earlier query")
	assert.True(t, x.similar("weather in paris", 2, 1), "threshold 1: same key")
	assert.False(t, x.similar("weather in paris", 2, 1.01), "above 1: nothing")
	assert.False(t, x.similar("weather in paris", 2, math.NaN()), "NaN: nothing")
}

func TestQueryIndexReset(t *testing.T) {
	var x queryIndex
	x.add("fix bug", 1)
	x.reset()
	assert.False(t, x.similar("fix bug", 2, 0.75))
	assert.Empty(t, x.entries)
	assert.Empty(t, x.at)
	x.add("fix bug", 3)
	assert.True(t, x.similar("fix the bug", 4, 0.75), "usable after reset")
}

func TestQueryIndexWindow(t *testing.T) {
	var x queryIndex
	x.add("kubernetes pod restart", 1)
	for i := range queryIndexWindow - 1 {
		x.add(simBenchQuery(i), 1)
	}
	assert.True(t, x.similar("kubernets pod restart", 2, 0.75), "still in the window")

	// One more distinct query pushes it out of the fuzzy window; it still
	// matches exactly.
	x.add(simBenchQuery(queryIndexWindow), 1)
	assert.False(t, x.similar("kubernets pod restart", 2, 0.75), "out of the window")
	assert.True(t, x.similar("kubernetes pod restart", 2, 0.75), "exact match beyond the window")

	// Repeating a query does not move it back into the window.
	x.add("kubernetes pod restart", 1)
	assert.False(t, x.similar("kubernets pod restart", 2, 0.75))

	// Past queryIndexCap distinct queries, the oldest is forgotten.
	for i := queryIndexWindow + 1; i < queryIndexCap; i++ {
		x.add(simBenchQuery(i), 1)
	}
	assert.True(t, x.similar("kubernetes pod restart", 2, 0.75), "the oldest of queryIndexCap")
	x.add(simBenchQuery(queryIndexCap), 1)
	assert.False(t, x.similar("kubernetes pod restart", 2, 0.75), "forgotten")
	assert.True(t, x.similar(simBenchQuery(1), 2, 0.75), "the second oldest remains")
	assert.Len(t, x.entries, queryIndexCap)
	assert.Len(t, x.at, queryIndexCap)
}

func TestQueryIndexBounded(t *testing.T) {
	var x queryIndex
	for i := range 10_000 {
		x.add(simBenchQuery(i), uint64(i))
	}
	assert.Len(t, x.entries, queryIndexCap)
	assert.Len(t, x.at, queryIndexCap)

	// A query that was never normalized is bounded too.
	x.add(strings.Repeat("word ", 100_000), 1)
	e := x.entries[(x.next-1+queryIndexCap)%queryIndexCap]
	assert.LessOrEqual(t, len(e.query), queryMaxBytes)
}

// simBenchWords are the words simBenchQuery builds distinct queries from.
var simBenchWords = [...][]string{
	{"configure", "enable", "monitor", "debug", "deploy", "upgrade", "secure", "scale"},
	{"feature", "logging", "cache", "queue", "gateway", "database", "scheduler", "metrics"},
	{"alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"},
	{"staging", "production", "development", "testing"},
	{"europe", "asia", "america", "africa", "oceania", "arctic", "pacific", "atlantic"},
	{"today", "tomorrow", "hourly", "daily", "weekly", "monthly", "yearly", "forever"},
}

// simBenchQuery returns the i-th of 131072 distinct normalized queries such
// as "how to configure feature 1234 in service alpha staging europe today":
// even ones hold a number, odd ones differ from their neighbours in words
// only.
func simBenchQuery(i int) string {
	var w [len(simBenchWords)]string
	n := i
	for j, ws := range simBenchWords {
		w[j] = ws[n%len(ws)]
		n /= len(ws)
	}
	if i%2 == 0 {
		return fmt.Sprintf("how to %s %s %d in service %s %s %s %s", w[0], w[1], i, w[2], w[3], w[4], w[5])
	}
	return fmt.Sprintf("how to %s %s in service %s %s %s %s", w[0], w[1], w[2], w[3], w[4], w[5])
}

// simBenchIndex measures similar followed by add of a new query, on an
// index first filled with n distinct queries. The new queries are the same
// whatever n is; none is similar to another, and there are more than
// queryIndexCap, so each is forgotten before it comes round again. The
// index then keeps
// growing, up to queryIndexCap; what the cost depends on is the window of
// the last queryIndexWindow queries, full in both benchmarks.
func simBenchIndex(b *testing.B, n int) {
	var x queryIndex
	for i := range n {
		x.add(simBenchQuery(i), 1)
	}
	const probes = 4096
	queries := make([]string, probes)
	for i := range queries {
		queries[i] = simBenchQuery(50_000 + i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := queries[i%probes]
		if x.similar(q, 2, simTestThreshold) {
			b.Fatalf("%q: unexpected match", q)
		}
		x.add(q, 2)
	}
}

func BenchmarkQueryIndex100(b *testing.B)   { simBenchIndex(b, 100) }
func BenchmarkQueryIndex10000(b *testing.B) { simBenchIndex(b, 10_000) }

func BenchmarkQuerySimilarity(b *testing.B) {
	pairs := [][2]string{
		{"kubernetes pod restart", "kubernets pod restart"},
		{"how to restart a kubernetes pod", "restart kubernetes pod"},
		{"weather in paris", "weather in london"},
		{"café à paris", "cafe a paris"},
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p := pairs[i%len(pairs)]
		querySimilarity(p[0], p[1])
	}
}

// BenchmarkQuerySimilarityLongest compares two cut queries that pass every
// check, so that the Levenshtein distance runs over the longest keys.
func BenchmarkQuerySimilarityLongest(b *testing.B) {
	rest := strings.Repeat(" restart pod namespace prod", 20)
	a := normalizeQuery("kubernetes" + rest)
	c := normalizeQuery("kubernets" + rest)
	if simKeyOf(a).runes < queryMaxRunes-10 || querySimilarity(a, c) < 0.9 {
		b.Fatal("not the longest comparison")
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		querySimilarity(a, c)
	}
}

func BenchmarkNormalizeQuery(b *testing.B) {
	q := "How do I reset my password? (Ubuntu 24.04, GNOME)"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		normalizeQuery(q)
	}
}
