package toolguard

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
)

// simFuzzSeeds are queries the fuzz tests start from.
var simFuzzSeeds = []string{
	"",
	"fix bug",
	"How do I reset my password?",
	"  fix \t\n bug  ",
	"Café à Paris",
	"Cafe\u0301",
	"ÜBER Straße İstanbul",
	"東京の天気",
	"🔥🔥",
	"error 404",
	"delete user",
	"why is my build not working",
	"user_id = 42",
	"\xff\xfebad\xffutf8",
	strings.Repeat("a", queryMaxRunes+1),
	strings.Repeat("a ", queryMaxRunes),
	strings.Repeat("𝒜", queryMaxRunes+1),
	strings.Repeat("!", queryMaxBytes-1) + "é",
}

func FuzzNormalizeQuery(f *testing.F) {
	for _, s := range simFuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := normalizeQuery(s)
		if again := normalizeQuery(got); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, got, again)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q -> %q", s, got)
		}
		if n := utf8.RuneCountInString(got); n > queryMaxRunes {
			t.Fatalf("%d runes, more than %d: %q", n, queryMaxRunes, got)
		}
		if strings.HasPrefix(got, " ") || strings.HasSuffix(got, " ") || strings.Contains(got, "  ") {
			t.Fatalf("stray space: %q -> %q", s, got)
		}
	})
}

func FuzzQuerySimilarity(f *testing.F) {
	for i, a := range simFuzzSeeds {
		for _, b := range simFuzzSeeds[i:] {
			f.Add(a, b)
		}
	}
	f.Add("kubernetes pod restart", "kubernets pod restart")
	f.Add("weather in paris", "weather in london")
	f.Add("delete user", "deactivate user")
	f.Fuzz(func(t *testing.T, a, b string) {
		check := func(a, b string) {
			s := querySimilarity(a, b)
			if !(s >= 0 && s <= 1) {
				t.Fatalf("querySimilarity(%q, %q) = %v, out of [0, 1]", a, b, s)
			}
			if r := querySimilarity(b, a); r != s {
				t.Fatalf("not symmetric: (%q, %q) = %v, reversed %v", a, b, s, r)
			}
		}
		check(a, b) // raw input must not break it either
		na, nb := normalizeQuery(a), normalizeQuery(b)
		check(na, nb)
		// Word order does not count: without a direction word, the query
		// with its words reversed has the same key.
		if !slices.ContainsFunc(strings.Fields(na), func(w string) bool { return simDirections[w] != "" }) {
			if ka, kr := simKeyOf(na), simKeyOf(simReverse(na)); ka.sorted != kr.sorted {
				t.Fatalf("keys of %q and its reverse differ: %q, %q", na, ka.sorted, kr.sorted)
			}
		}
		// The cheap bound simScore rules pairs out with is a lower bound.
		ka, kb := simKeyOf(na), simKeyOf(nb)
		// The floor simScore takes only saves work: it never changes a
		// verdict at that floor.
		for _, floor := range []float64{0.5, simTestThreshold, 0.9} {
			if full, cut := simScore(&ka, &kb, 0), simScore(&ka, &kb, floor); (full >= floor) != (cut >= floor) {
				t.Fatalf("at floor %v: %v without it, %v with it, for %q, %q", floor, full, cut, na, nb)
			}
		}
		lb := simHistBound(&ka, &kb)
		if d := levenshtein.ComputeDistance(ka.text, kb.text); lb > d {
			t.Fatalf("bound %d above the distance %d of %q, %q", lb, d, ka.text, kb.text)
		}
		if d := levenshtein.ComputeDistance(ka.sorted, kb.sorted); lb > d {
			t.Fatalf("bound %d above the distance %d of %q, %q", lb, d, ka.sorted, kb.sorted)
		}
		for _, x := range []string{na, nb} {
			if x != "" && querySimilarity(x, x) != 1 {
				t.Fatalf("querySimilarity(%q, itself) = %v, not 1", x, querySimilarity(x, x))
			}
		}
		// The index agrees with the score it is built on.
		var x queryIndex
		indexAdd(&x, na, Hash{}, 1, 1)
		if want := querySimilarity(na, nb) >= simTestThreshold; indexSimilar(&x, nb, Hash{}, 2, simTestThreshold, true) != want {
			t.Fatalf("index and querySimilarity disagree on %q, %q", na, nb)
		}
	})
}

// simReverse returns the words of s in reverse order, joined by spaces.
func simReverse(s string) string {
	w := strings.Fields(s)
	slices.Reverse(w)
	return strings.Join(w, " ")
}
