package toolguard

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
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
		// Word order does not count; direction does.
		{"pod restart kubernetes", "kubernetes pod restart", true, "reordered words"},
		{"java null pointer exception fix", "how to fix null pointer exception java", true, "reordered, stop words added; 'to' after a stop word is no direction"},
		{"weather in Paris today", "Paris weather today", true, "reordered, a stop word dropped"},
		{"rust borrow checker error", "borrow checker error in rust", true, "a word moved"},
		{"error borow checker rust", "rust borrow checker error", true, "reordered, with a typo"},
		{"from paris to london flights", "flights from paris to london", true, "a direction marks its word wherever it stands"},
		{"cheap flights to london from paris", "flights from paris to london cheap", true, "both directions kept, the words moved"},
		{"convert usd to eur", "usd to eur convert", true, "the same direction"},
		{"python vs go performance", "go vs python performance", true, "'vs' is no direction: both sides play one role"},
		{"convert usd to eur", "convert eur to usd", false, "reordering can reverse the question"},
		{"flights from paris to london", "flights from london to paris", false, "reordering can reverse the question"},
		{"flights to paris", "flights from paris", false, "another direction"},
		{"flights from paris", "paris flights", false, "a direction on one side only"},
		{"is python faster than go", "is go faster than python", false, "'than' is a direction"},
		{"copy files from server to laptop", "copy files to server from laptop", false, "directions swapped"},
		{"usd to eur", "eur usd to", false, "'to' at the end marks nothing: a word on one side only"},
		{"weather today in paris", "london weather today", false, "reordered, another city"},
		{"nginx error 404", "error 500 nginx", false, "reordered, another number"},
		{"restart pod 3 kubernetes", "kubernetes pod 4 restart", false, "reordered, another number"},
		{"user account delete", "deactivate user account", false, "reordered, another destructive verb"},
		{"drop table users", "users table", false, "reordered, a destructive verb dropped"},
		{"working build not why", "why is my build working", false, "reordered, a negation dropped"},
		{"where is the mountain Trivor located?", "where is the mountain The Crown located?", false, "another entity"},
		{"trivor mountain located", "where is the mountain Trivor located?", true, "reordered, a question word added"},
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
		in, text, sorted string
	}{
		{"how to fix the bug", "fix bug", "bug fix"},
		{"how to", "how to", "how to"}, // all stop words: all kept
		{"café à paris", "cafe paris", "cafe paris"},
		{"łódź", "lodz", "lodz"},
		{"straße", "straße", "straße"},
		{"fix  bug", "fix bug", "bug fix"}, // not normalized: split at white space
		{"", "", ""},
		// Directions mark the next word that is not a stop word.
		{"convert usd to eur", "convert usd to:eur", "convert to:eur usd"},
		{"flights from the airport to hotel", "flights from:airport to:hotel", "flights from:airport to:hotel"},
		{"python faster than go", "python faster than:go", "faster python than:go"},
		{"to london", "to:london", "to:london"},                                 // first: a direction
		{"how to fix it", "fix it", "fix it"},                                   // after a stop word: an infinitive
		{"where does it come from", "where it come from", "come from it where"}, // nothing to mark
		{"usd to", "usd", "usd"},            // nothing to mark, a stop word
		{"from to eur", "to:eur", "to:eur"}, // the later direction wins
		{"go vs python", "go vs python", "go python vs"},
	}
	for _, tt := range tests {
		k := simKeyOf(tt.in)
		assert.Equal(t, tt.text, k.text, "key of %q", tt.in)
		assert.Equal(t, tt.sorted, k.sorted, "sorted key of %q", tt.in)
		assert.Equal(t, utf8.RuneCountInString(k.text), k.runes, "runes of %q", tt.in)
	}
	del, kill, neg := simAgree["delete"], simAgree["kill"], simAgree["not"]
	assert.Equal(t, 3, bits.OnesCount32(del|kill|neg), "three groups, one bit each")
	assert.Equal(t, del, simKeyOf("deleting old logs").agree)
	assert.Equal(t, kill|neg, simKeyOf("dont kill it").agree)
	assert.Equal(t, del, simKeyOf("users to delete").agree, "a marked word is still a verb")
	// Numbers one digit apart, last or first, take different bits.
	for _, p := range [][2]string{{"12", "13"}, {"404", "405"}, {"v1.2.3", "v1.2.4"}, {"2024", "3024"}} {
		a0, a1 := simWordBits([]byte(p[0]))
		b0, b1 := simWordBits([]byte(p[1]))
		assert.False(t, a0 == b0 && a1 == b1, "%q and %q", p[0], p[1])
	}
}

func TestSimHistBound(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "cab", 0},        // a permutation: no bound
		{"abc", "abd", 1},        // one substitution
		{"abc", "abcde", 2},      // two insertions
		{"kitten", "sitting", 3}, // k, e against s, i, g: the distance itself
		{"aaaa", "b", 4},
		{strings.Repeat("a", 256), "b", 255}, // a count stops at 255: one below the distance
	}
	for _, tt := range tests {
		ka, kb := simKeyOf(tt.a), simKeyOf(tt.b)
		got := simHistBound(&ka, &kb)
		assert.Equal(t, tt.want, got, "%q %q", tt.a, tt.b)
		assert.LessOrEqual(t, got, levenshtein.ComputeDistance(tt.a, tt.b), "a lower bound")
		assert.Equal(t, got, simHistBound(&kb, &ka), "symmetric")
	}
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
		querySimilarity("404 error nginx", "500 error nginx")
	}), "keys are the queries, rejected by the number check")
	assert.Equal(t, 2.0, testing.AllocsPerRun(100, func() {
		querySimilarity("error 404 nginx", "error 500 nginx")
	}), "sorted keys differ from their queries")
	// Short keys with no stop words and words in order: the keys are the
	// queries, and the Levenshtein rune slices of 32 runes or fewer stay on
	// the stack.
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		querySimilarity("kubernetes pod restart", "kubernets pod restart")
	}), "keys are the queries")
	// A key without the stop words of its query is a new string, and so
	// are its words sorted when they are out of order: "fix bug" and "bug
	// fix" for "fix the bug", "bug fix" for "fix bug".
	assert.Equal(t, 3.0, testing.AllocsPerRun(100, func() {
		querySimilarity("fix the bug", "fix bug")
	}), "keys that differ from their queries")
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

// indexAdd records the query q, normalized, in x.
func indexAdd(x *queryIndex, q string, scope Hash, round, seq uint64) {
	q = normalizeQuery(q)
	k := simKeyOf(q)
	x.addKey(q, &k, scope, round, seq)
}

// indexSimilar is similarKey of the query q, normalized.
func indexSimilar(x *queryIndex, q string, scope Hash, round uint64, threshold float64, blind bool) bool {
	q = normalizeQuery(q)
	k := simKeyOf(q)
	return x.similarKey(q, &k, scope, round, threshold, blind)
}

func TestQueryIndexRounds(t *testing.T) {
	var x queryIndex
	var all Hash
	blind := func(q string, round uint64) bool { return indexSimilar(&x, q, all, round, 0.75, true) }
	assert.False(t, blind("fix bug", 1), "empty index")

	indexAdd(&x, "fix the bug", all, 1, 1)
	assert.False(t, blind("fix the bug", 1), "same round, same query")
	assert.False(t, blind("fix bug", 1), "same round, similar query")
	assert.False(t, blind("fix bug", 0), "an entry from a later round")
	assert.True(t, blind("fix the bug", 2), "earlier round, same query")
	assert.True(t, blind("fix bug", 2), "earlier round, similar query")
	assert.False(t, blind("weather in paris", 2), "earlier round, different query")

	// Adding a query again keeps one entry and its earliest round.
	indexAdd(&x, "fix the bug", all, 5, 2)
	indexAdd(&x, "fix the bug", all, 0, 3)
	assert.Len(t, x.entries, 1)
	assert.True(t, blind("fix bug", 1))

	// Queries without a word are not recorded and match nothing.
	indexAdd(&x, "", all, 1, 4)
	assert.Len(t, x.entries, 1)
	assert.False(t, indexSimilar(&x, "", all, 9, 0, true))
}

// TestQueryIndexRules runs the index through steps: queries asked (add),
// settled with their results (settle), and checked (want), in both modes.
func TestQueryIndexRules(t *testing.T) {
	page1, page2 := Hash{1}, Hash{2}
	type step struct {
		op     string // "add", "ok", "fail" (settle) or "check"
		query  string
		scope  Hash
		round  uint64
		seq    uint64 // add: the call; ok, fail: the call settled
		result string // ok: its result
		want   bool   // check: similar in the default mode
		blind  bool   // check: similar in the result-blind mode
	}
	add := func(q string, scope Hash, round, seq uint64) step {
		return step{op: "add", query: q, scope: scope, round: round, seq: seq}
	}
	ok := func(seq uint64, result string) step { return step{op: "ok", seq: seq, result: result} }
	failed := func(seq uint64) step { return step{op: "fail", seq: seq} }
	check := func(q string, scope Hash, round uint64, want, blind bool) step {
		return step{op: "check", query: q, scope: scope, round: round, want: want, blind: blind}
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a reworded query in the same round is a distinct question", []step{
			add("fix the bug", page1, 1, 1), add("bug fix", page1, 1, 2),
			ok(1, "nothing"), ok(2, "nothing"), // the second brought nothing new
			check("fix bug", page1, 1, false, false),
			check("fix bug", page1, 2, true, true),
		}},
		{"the same round never matches, even settled without a new fact", []step{
			add("java null pointer exception fix", page1, 3, 1), ok(1, "r"),
			add("null pointer java", page1, 4, 2), ok(2, "r"),
			check("how to fix null pointer exception java", page1, 3, false, false),
		}},
		{"another scope never matches", []step{
			add("kubernetes pod restart", page1, 1, 1), ok(1, "r"),
			add("kubernetes restart", page1, 2, 2), ok(2, "r"),
			check("pod restart kubernetes", page2, 3, false, false),
			check("kubernetes pod restart", page2, 3, false, false),
			check("pod restart kubernetes", page1, 3, true, true),
		}},
		{"refinement after a new fact is allowed (result-blind: it fires); a third similar query after nothing new fires", []step{
			add("java null pointer exception fix", page1, 1, 1), ok(1, "stack overflow answer"),
			check("how to fix null pointer exception java", page1, 2, false, true),
			add("how to fix null pointer exception java", page1, 2, 2), ok(2, "stack overflow answer"),
			check("fix java null pointer exception", page1, 3, true, true),
		}},
		{"a new fact each time never fires", []step{
			add("weather in paris today", page1, 1, 1), ok(1, "sunny"),
			add("paris weather today", page1, 2, 2), ok(2, "sunny, 21°C"),
			check("today weather paris", page1, 3, false, true),
		}},
		{"a result seen before is nothing new, whichever query returned it", []step{
			add("rust borrow checker error", page1, 1, 1), ok(1, "A"),
			add("python asyncio timeout", page1, 2, 2), ok(2, "B"),
			add("borrow checker error rust", page1, 3, 3), ok(3, "B"),
			check("rust borow checker eror", page1, 4, true, true),
		}},
		{"a failed query brought nothing new", []step{
			add("kubectl get pods", page1, 1, 1), failed(1),
			check("kubectl get pod", page1, 2, true, true),
		}},
		{"a pending query counts as a new fact", []step{
			add("kubectl get pods", page1, 1, 1),
			check("kubectl get pod", page1, 2, false, true),
			check("kubectl get pods", page1, 2, false, true),
		}},
		{"a query asked again waits for its new outcome", []step{
			add("kubectl get pods", page1, 1, 1), ok(1, "r"),
			add("kubectl get pod", page1, 2, 2), ok(2, "r"),
			check("kubectl get pods", page1, 3, true, true),
			add("kubectl get pod", page1, 3, 3),
			check("get pods kubectl", page1, 4, false, true), // one found something, one waits
			ok(3, "s"),
			add("kubectl get pods", page1, 4, 4),
			check("get pods kubectl", page1, 5, false, true), // both wait or found something
			ok(4, "r"),
			check("get pods kubectl", page1, 5, true, true),
		}},
		{"a reordered query that reverses a direction is another question", []step{
			add("convert usd to eur", page1, 1, 1), ok(1, "r"),
			add("usd to eur convert", page1, 2, 2), ok(2, "r"),
			check("convert eur to usd", page1, 3, false, false),
			check("convert usd to eur rate", page1, 3, true, true),
		}},
		{"the results of calls without a query count", []step{
			add("kubectl get pods", page1, 1, 1), ok(1, "r"),
			ok(99, "s"), failed(98), // no query: their results only
			check("kubectl get pod", page1, 2, false, true),
			add("kubectl get pod", page1, 2, 2), ok(2, "s"),
			check("get pods kubectl", page1, 3, true, true),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var x queryIndex
			for i, s := range tt.steps {
				switch s.op {
				case "add":
					indexAdd(&x, s.query, s.scope, s.round, s.seq)
				case "ok":
					x.settle(s.seq, false, digestResult(s.result))
				case "fail":
					x.settle(s.seq, true, Hash{})
				case "check":
					assert.Equal(t, s.want, indexSimilar(&x, s.query, s.scope, s.round, simTestThreshold, false),
						"step %d: %q in round %d", i, s.query, s.round)
					assert.Equal(t, s.blind, indexSimilar(&x, s.query, s.scope, s.round, simTestThreshold, true),
						"step %d, blind: %q in round %d", i, s.query, s.round)
				}
			}
		})
	}
}

func TestQueryIndexThreshold(t *testing.T) {
	var x queryIndex
	var all Hash
	indexAdd(&x, "weather in paris", all, 1, 1)
	x.settle(1, false, digestResult("rain"))
	indexAdd(&x, "weather in rome", all, 1, 2)
	x.settle(2, false, digestResult("rain"))
	for _, blind := range []bool{false, true} {
		assert.True(t, indexSimilar(&x, "kubernetes pod restart", all, 2, 0, blind), "threshold 0: any earlier query")
		assert.True(t, indexSimilar(&x, "weather in rome", all, 2, 1, blind), "threshold 1: same key")
		assert.False(t, indexSimilar(&x, "weather in rome", all, 2, 1.01, blind), "above 1: nothing")
		assert.False(t, indexSimilar(&x, "weather in rome", all, 2, math.NaN(), blind), "NaN: nothing")
	}
}

func TestQueryIndexWindow(t *testing.T) {
	var x queryIndex
	var all Hash
	seq := uint64(0)
	add := func(q string) {
		seq++
		indexAdd(&x, q, all, 1, seq)
	}
	similar := func(q string) bool { return indexSimilar(&x, q, all, 2, 0.75, true) }
	add("kubernetes pod restart")
	for i := range queryIndexWindow - 1 {
		add(simBenchQuery(i))
	}
	assert.True(t, similar("kubernets pod restart"), "still in the window")

	// One more distinct query pushes it out of the fuzzy window; it still
	// matches exactly.
	add(simBenchQuery(queryIndexWindow))
	assert.False(t, similar("kubernets pod restart"), "out of the window")
	assert.True(t, similar("kubernetes pod restart"), "exact match beyond the window")

	// Repeating a query does not move it back into the window.
	add("kubernetes pod restart")
	assert.False(t, similar("kubernets pod restart"))

	// Past queryIndexCap distinct queries, the oldest is forgotten.
	for i := queryIndexWindow + 1; i < queryIndexCap; i++ {
		add(simBenchQuery(i))
	}
	assert.True(t, similar("kubernetes pod restart"), "the oldest of queryIndexCap")
	add(simBenchQuery(queryIndexCap))
	assert.False(t, similar("kubernetes pod restart"), "forgotten")
	assert.True(t, similar(simBenchQuery(1)), "the second oldest remains")
	assert.Len(t, x.entries, queryIndexCap)
}

func TestQueryIndexBounded(t *testing.T) {
	var x queryIndex
	for i := range 10_000 {
		indexAdd(&x, simBenchQuery(i), Hash{byte(i)}, uint64(i), uint64(i))
		x.settle(uint64(i), false, digestResult(simBenchQuery(i)))
	}
	assert.Len(t, x.entries, queryIndexCap)
	assert.LessOrEqual(t, len(x.results), queryIndexCap)

	// A query that was never normalized is bounded too.
	q := strings.Repeat("word ", 100_000)
	k := simKeyOf(q)
	x.addKey(q, &k, Hash{}, 1, 10_001)
	assert.LessOrEqual(t, len(x.ring(1).query), queryMaxBytes)
}

// TestQueryIndexResultsStartOver checks that past queryIndexCap distinct
// results the index forgets them: a result seen before the start over is
// new again.
func TestQueryIndexResultsStartOver(t *testing.T) {
	for _, overflow := range []bool{false, true} {
		var x queryIndex
		indexAdd(&x, "kubectl get pods", Hash{}, 1, 1)
		x.settle(1, false, digestResult("pods"))
		for i := range queryIndexCap - 1 {
			x.settle(uint64(100+i), false, digestResult(fmt.Sprint(i))) // calls without a query
		}
		assert.Len(t, x.results, queryIndexCap)
		if overflow {
			x.settle(99, false, digestResult("one too many"))
			assert.Len(t, x.results, 1)
		}
		indexAdd(&x, "kubectl get pods", Hash{}, 2, 2)
		x.settle(2, false, digestResult("pods"))
		assert.Equal(t, !overflow, indexSimilar(&x, "kubectl get pod", Hash{}, 3, simTestThreshold, false),
			"overflow %v: the result seen before counts as new only after the start over", overflow)
	}
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
		indexAdd(&x, simBenchQuery(i), Hash{}, 1, uint64(i))
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
		k := simKeyOf(q)
		if x.similarKey(q, &k, Hash{}, 2, simTestThreshold, true) {
			b.Fatalf("%q: unexpected match", q)
		}
		x.addKey(q, &k, Hash{}, 2, uint64(n+i))
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

// TestMemorySearchSession measures the heap that an open session holds
// after seven search calls, each a different question with its own result,
// against one that made seven calls of another tool: the difference is
// what the similar-query index and the rolling window keep for searches.
func TestMemorySearchSession(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("heap measurement")
	}
	questions := [...]string{
		"how to restart a kubernetes pod %d",
		"kubectl rollout status deployment %d",
		"why is my pod stuck in CrashLoopBackOff after upgrade %d",
		"readiness probe failed connection refused %d",
		"helm rollback to previous release %d",
		"increase memory limit for container in deployment %d",
		"kubernetes events for namespace staging %d",
	}
	ss := NewSessions(Policy{})
	episode := func(tool, arg string, i int) func() *Tracker {
		return func() *Tracker {
			tr := ss.NewTracker()
			for j, q := range questions {
				args := fmt.Sprintf(`{%q: %q}`, arg, fmt.Sprintf(q, i))
				c := Call{Tool: tool, Args: []byte(args)}
				if d := tr.ShouldSkip(c); d.Verdict != Allow {
					t.Fatalf("call %d refused: %+v", j, d)
				}
				tr.Record(c, Outcome{Result: fmt.Sprintf("result %d of session %d", j, i)})
			}
			return tr
		}
	}
	const n = 4 << 10
	held := func(tool, arg string) float64 {
		trackers := make([]*Tracker, n)
		for i := range trackers {
			trackers[i] = episode(tool, arg, i)()
		}
		var with, without runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&with)
		clear(trackers)
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&without)
		runtime.KeepAlive(trackers)
		return float64(int64(with.HeapAlloc)-int64(without.HeapAlloc)) / n
	}
	held("web_search", "query") // the tool policies, resolved once
	held("read_file", "path")
	search, other := held("web_search", "query"), held("read_file", "path")
	t.Logf("seven search calls: %.0f bytes per open session; seven read_file calls: %.0f bytes; searches keep %.0f bytes more",
		search, other, search-other)
	// Measured when pinned: 3 337 bytes more (5 289 when the window and the
	// query index each held a copy of every key, and the index two maps).
	assert.LessOrEqual(t, search-other, 3600.0, "the state kept for searches grew back")
}

// querySimilarity is the score of two normalized queries (see simScore).
func querySimilarity(a, b string) float64 {
	ka := simKeyOf(a)
	if a == b {
		return simScore(&ka, &ka, 0) // 1, unless the key has no word
	}
	kb := simKeyOf(b)
	return simScore(&ka, &kb, 0)
}
