package toolguard

import "strings"

const (
	minEcho      = 3       // the shortest query masked: a letter or two is in most texts
	maxEchoQuery = 4 << 10 // bounds the query read for masking
)

// unechoed returns a search tool's result (or error text) with each
// occurrence of the call's query, as the arguments hold it, masked, before
// it is digested: a result that differs only by the query echoed back ("No
// results found for 'golang generics'") is not new (docs/patterns.md,
// "Broad search churn").
func unechoed(result, query string) string {
	if len(query) < minEcho {
		return result
	}
	return strings.ReplaceAll(result, query, "\x00query\x00")
}
