package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stream is govulncheck's JSON output in its form (protocol v1.0.0): a
// vulnerability called in a dependency and in the standard library, one
// only imported (package level), one only required (module level), and
// the same called vulnerability found again by another path.
const stream = `{
  "config": {"protocol_version": "v1.0.0", "scanner_name": "govulncheck", "go_version": "go1.26.8", "scan_level": "symbol"}
}
{"progress": {"message": "Scanning your code and 120 packages across 9 dependent modules for known vulnerabilities..."}}
{"osv": {"id": "GO-2026-0001", "summary": "a bug"}}
{"finding": {"osv": "GO-2026-0001", "fixed_version": "v0.60.0", "trace": [{"module": "golang.org/x/net", "version": "v0.58.0"}]}}
{"finding": {"osv": "GO-2026-0001", "fixed_version": "v0.60.0", "trace": [{"module": "golang.org/x/net", "version": "v0.58.0", "package": "golang.org/x/net/http2"}]}}
{"finding": {"osv": "GO-2026-0001", "fixed_version": "v0.60.0", "trace": [
  {"module": "golang.org/x/net", "version": "v0.58.0", "package": "golang.org/x/net/http2", "function": "Error", "receiver": "ConnectionError"},
  {"module": "example.com/m", "package": "example.com/m", "function": "Run", "receiver": "*Client", "position": {"filename": "m.go", "line": 67}}
]}}
{"finding": {"osv": "GO-2026-0001", "fixed_version": "v0.60.0", "trace": [
  {"module": "golang.org/x/net", "version": "v0.58.0", "package": "golang.org/x/net/http2", "function": "Dial"},
  {"module": "example.com/m", "package": "example.com/m", "function": "init", "position": {"filename": "m.go", "line": 9}}
]}}
{"finding": {"osv": "GO-2026-0002", "fixed_version": "v1.26.10", "trace": [
  {"module": "stdlib", "version": "v1.26.8", "package": "crypto/x509", "function": "Verify", "receiver": "Certificate"},
  {"module": "example.com/m", "package": "example.com/m", "function": "init", "position": {"filename": "m.go", "line": 9}}
]}}
{"finding": {"osv": "GO-2026-0003", "trace": [{"module": "example.com/old", "version": "v1.0.0", "package": "example.com/old"}]}}
`

func TestReport(t *testing.T) {
	found, err := read(strings.NewReader(stream))
	require.NoError(t, err)
	var out strings.Builder
	deps := summarize(&out, "m", found)
	require.Equal(t, 1, deps)
	require.Equal(t,
		"  GO-2026-0001  dependency golang.org/x/net@v0.58.0, fixed in v0.60.0; called via example.com/m.Client.Run (m.go:67)\n"+
			"  GO-2026-0002  standard library stdlib@v1.26.8, fixed in v1.26.10; called via example.com/m.init (m.go:9)\n"+
			"module m: 1 called vulnerabilities in dependencies, 1 in the standard library\n", out.String())
}

func TestOnlyStandardLibraryOrNone(t *testing.T) {
	for _, in := range []string{"", `{"config": {"protocol_version": "v1.0.0"}}`} {
		found, err := read(strings.NewReader(in))
		require.NoError(t, err)
		var out strings.Builder
		require.Zero(t, summarize(&out, "m", found))
		require.Equal(t, "module m: 0 called vulnerabilities in dependencies, 0 in the standard library\n", out.String())
	}
}

func TestNotJSON(t *testing.T) {
	_, err := read(strings.NewReader("govulncheck: loading packages: exit status 1\n"))
	require.ErrorContains(t, err, "not govulncheck's JSON output")
}
