package toolguard

import (
	"fmt"
	"testing"
)

// A search tool whose "no results" message repeats the query (issue #30,
// item 7, built from its description; the traces hold no such tool): every
// rewording returns another text, but one that differs only by the query
// echoed back brings nothing new.
func TestEchoedQueryIsNotNew(t *testing.T) {
	search := func(q string) Call { return call("web_search", fmt.Sprintf(`{"query":%q}`, q)) }
	none := func(q string) string { return fmt.Sprintf("No results found for '%s'.", q) }
	qs := []string{"golang generics tutorial", "golang generics tutorials", "tutorial golang generics", "golang generic tutorial"}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"rewordings that all found nothing", []step{
			allow(search(qs[0]), none(qs[0])),
			allow(search(qs[1]), none(qs[1])),
			hint(search(qs[2]), ReasonSimilarQuery),
		}},
		{"a rewording that found something is refinement", []step{
			allow(search(qs[0]), none(qs[0])),
			allow(search(qs[1]), "1. Tutorial: Getting started with generics - go.dev"),
			allow(search(qs[2]), none(qs[2])),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run(t, NewTracker(Policy{}), tt.steps)
		})
	}
	if got := unechoed("found 'ab' in ab", "ab"); got != "found 'ab' in ab" {
		t.Errorf("a query shorter than %d bytes is masked: %q", minEcho, got)
	}
	if got := unechoed("No results found for 'x y z'", "x y z"); got == "No results found for 'x y z'" {
		t.Errorf("the echoed query is not masked")
	}
}
