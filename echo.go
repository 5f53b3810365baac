package toolguard

import "strings"

// A search tool's result that differs from another only by the call's own
// query echoed back ("No results found for 'golang generics'") is not new
// information. Before a search tool's result or error text is digested,
// each occurrence of the query, exactly as the arguments hold it, becomes
// one placeholder. A call's own key always holds the same query, so only
// comparisons across queries (the similar-query and window rules, a
// failure chain of tweaked arguments) see a difference.

// minEcho is the shortest query masked: a query of a letter or two occurs
// in most texts without being an echo.
const minEcho = 3

// maxEchoQuery bounds the query read for masking.
const maxEchoQuery = 4 << 10

// unechoed returns result with every occurrence of query replaced by a
// placeholder.
func unechoed(result, query string) string {
	if len(query) < minEcho || !strings.Contains(result, query) {
		return result
	}
	return strings.ReplaceAll(result, query, "\x00query\x00")
}
