package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"p"}`,
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestRedis","Output":"=== RUN   TestRedis\n"}`,
		`{"Action":"output","Package":"p","Test":"TestRedis","Output":"    main_test.go:37: skipping: no redis-server\n"}`,
		`{"Action":"output","Package":"p","Test":"TestRedis","Output":"--- SKIP: TestRedis (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestRedis"}`,
		`{"Action":"output","Package":"p","Test":"TestBad","Output":"    bad_test.go:9: want 2, got 3\n"}`,
		`{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestBad"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":0.5}`,
		`go: downloading example.com/m v1.0.0`,
	}, "\n")
	var out strings.Builder
	c, err := report(strings.NewReader(in), &out)
	require.NoError(t, err)
	require.Equal(t, counts{pass: 1, skip: 1, fail: 1, pkgFail: 1}, c)
	require.Equal(t, "    skip TestRedis (p): main_test.go:37: skipping: no redis-server\n"+
		"--- FAIL TestBad (p)\n"+
		"    bad_test.go:9: want 2, got 3\n"+
		"--- FAIL: TestBad (0.00s)\n"+
		"FAIL p 0.50s\n"+
		"go: downloading example.com/m v1.0.0\n", out.String())
}

// TestTimeout: a package whose test binary panics while tests run (a
// -timeout) is named as failed with its panic, whether test2json gave the
// panic to the running test or to none, and each test without a result
// counts as failed.
func TestTimeout(t *testing.T) {
	for _, test := range []string{"TestSlow", ""} {
		in := strings.Join([]string{
			`{"Action":"run","Package":"p","Test":"TestFast"}`,
			`{"Action":"pass","Package":"p","Test":"TestFast"}`,
			`{"Action":"run","Package":"p","Test":"TestSlow"}`,
			`{"Action":"output","Package":"p","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}`,
			`{"Action":"output","Package":"p","Test":"` + test + `","Output":"panic: test timed out after 1s\n"}`,
			`{"Action":"output","Package":"p","Test":"` + test + `","Output":"\trunning tests:\n"}`,
			`{"Action":"output","Package":"p","Output":"FAIL\tp\t1.008s\n"}`,
			`{"Action":"fail","Package":"p","Elapsed":1.009}`,
		}, "\n")
		var out strings.Builder
		c, err := report(strings.NewReader(in), &out)
		require.NoError(t, err)
		require.Equal(t, counts{pass: 1, fail: 1, pkgFail: 1}, c, "panic given to %q", test)
		require.Contains(t, out.String(), "--- FAIL TestSlow (p): no result, the package failed while it ran\n")
		require.Contains(t, out.String(), "\trunning tests:\n")
		require.Contains(t, out.String(), "FAIL p 1.01s (panic: test timed out after 1s)\n")
	}
}

// TestRealSkip runs go test -json on a package whose test skips and checks
// the reason reaches the report.
func TestRealSkip(t *testing.T) {
	raw, err := goTestJSON(t, "func TestNeedsServer(t *testing.T) { t.Skip(\"no server here\") }\n", "-timeout", "2m")
	require.NoError(t, err)
	var out strings.Builder
	c, err := report(strings.NewReader(string(raw)), &out)
	require.NoError(t, err)
	require.Equal(t, counts{skip: 1}, c)
	require.Contains(t, out.String(), "skip TestNeedsServer (example.com/m): m_test.go:10: no server here\n")
	require.Contains(t, out.String(), "ok   example.com/m ")
}

// TestRealTimeout runs go test -json -timeout 1s on a package whose test
// sleeps longer: the report names the package, the test and the panic.
func TestRealTimeout(t *testing.T) {
	raw, err := goTestJSON(t, "func TestFast(t *testing.T) {}\n\nfunc TestSlow(t *testing.T) { time.Sleep(time.Minute) }\n",
		"-timeout", "1s")
	require.Error(t, err, "the package fails")
	var out strings.Builder
	c, err := report(strings.NewReader(string(raw)), &out)
	require.NoError(t, err)
	require.Equal(t, counts{pass: 1, fail: 1, pkgFail: 1}, c, "%s", out.String())
	require.Contains(t, out.String(), "--- FAIL TestSlow (example.com/m): no result, the package failed while it ran\n")
	require.Regexp(t, `(?m)^FAIL example.com/m \S+ \(panic: test timed out after 1s\)$`, out.String())
}

// goTestJSON runs go test -json with args on a package of one test file
// whose functions are tests (it imports testing and time).
func goTestJSON(t *testing.T, tests string, args ...string) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	write(t, dir+"/go.mod", "module example.com/m\n\ngo 1.24\n")
	write(t, dir+"/m_test.go", "package m\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nvar _ = time.Second\n\n"+tests)
	cmd := exec.Command("go", append([]string{"test", "-json"}, append(args, "./...")...)...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	return cmd.Output()
}

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}
