package toolguard

import "strings"

// A search tool's result or error text is digested with each occurrence of
// the call's query, as the arguments hold it, masked: a result that differs
// only by the query echoed back ("No results found for 'golang generics'")
// is not new (docs/patterns.md, "Broad search churn").

const (
	minEcho      = 3       // the shortest query masked: a letter or two is in most texts
	maxEchoQuery = 4 << 10 // bounds the query read for masking
)

// unechoed returns result with every occurrence of query replaced by a
// placeholder.
func unechoed(result, query string) string {
	if len(query) < minEcho {
		return result
	}
	return strings.ReplaceAll(result, query, "\x00query\x00")
}
