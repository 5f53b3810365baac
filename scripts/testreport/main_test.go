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
	require.Equal(t, counts{pass: 1, skip: 1, fail: 1}, c)
	require.Equal(t, "    skip TestRedis (p): main_test.go:37: skipping: no redis-server\n"+
		"--- FAIL TestBad (p)\n"+
		"    bad_test.go:9: want 2, got 3\n"+
		"--- FAIL: TestBad (0.00s)\n"+
		"FAIL p 0.50s\n"+
		"go: downloading example.com/m v1.0.0\n", out.String())
}

// TestRealSkip runs go test -json on a package whose test skips and checks
// the reason reaches the report.
func TestRealSkip(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test in a child process")
	}
	dir := t.TempDir()
	write(t, dir+"/go.mod", "module example.com/skip\n\ngo 1.24\n")
	write(t, dir+"/skip_test.go", "package skip\n\nimport \"testing\"\n\nfunc TestNeedsServer(t *testing.T) { t.Skip(\"no server here\") }\n")
	cmd := exec.Command("go", "test", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	raw, err := cmd.Output()
	require.NoError(t, err)
	var out strings.Builder
	c, err := report(strings.NewReader(string(raw)), &out)
	require.NoError(t, err)
	require.Equal(t, counts{skip: 1}, c)
	require.Contains(t, out.String(), "skip TestNeedsServer (example.com/skip): skip_test.go:5: no server here\n")
	require.Contains(t, out.String(), "ok   example.com/skip ")
}

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}
