// Command testreport reads the output of `go test -json` on its standard
// input and prints what a reader needs: each package's result, every
// skipped test with the reason it gave, the whole output of every failed
// test, and build errors. scripts/test.sh pipes each module's tests
// through it, so a skipped test is never hidden behind an "ok".
//
//	go test -json ./... | go run ./scripts/testreport -module redisstore
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
	Elapsed    float64
}

type counts struct{ pass, skip, fail int }

func main() {
	module := flag.String("module", "", "the module's name for the summary line")
	flag.Parse()
	c, err := report(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	fmt.Printf("module %s: %d tests passed, %d skipped, %d failed\n", *module, c.pass, c.skip, c.fail)
}

// report prints the report of the events read from r to w and returns the
// counts of top-level and sub tests.
func report(r io.Reader, w io.Writer) (counts, error) {
	var c counts
	output := map[string][]string{} // package + "\x00" + test → its output lines
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, string(line)) // not an event: pass it through
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "build-fail":
			fmt.Fprintf(w, "FAIL %s [build failed]\n", e.ImportPath)
		case "output":
			if e.Test == "" {
				if isPackageNoise(e.Output) {
					continue
				}
			}
			output[key] = append(output[key], e.Output)
		case "pass", "skip", "fail":
			if e.Test == "" {
				printPackage(w, e, output[key])
				delete(output, key)
				continue
			}
			switch e.Action {
			case "pass":
				c.pass++
			case "skip":
				c.skip++
				fmt.Fprintf(w, "    skip %s (%s): %s\n", e.Test, e.Package, reason(output[key]))
			case "fail":
				c.fail++
				fmt.Fprintf(w, "--- FAIL %s (%s)\n", e.Test, e.Package)
				for _, l := range output[key] {
					fmt.Fprint(w, l)
				}
			}
			delete(output, key)
		}
	}
	return c, sc.Err()
}

// printPackage prints a package's result line, and its own output when it
// failed (a panic or TestMain's message is not a test's).
func printPackage(w io.Writer, e event, out []string) {
	switch e.Action {
	case "pass":
		fmt.Fprintf(w, "ok   %s %.2fs\n", e.Package, e.Elapsed)
	case "skip":
		fmt.Fprintf(w, "?    %s [no test files]\n", e.Package)
	case "fail":
		for _, l := range out {
			fmt.Fprint(w, l)
		}
		fmt.Fprintf(w, "FAIL %s %.2fs\n", e.Package, e.Elapsed)
	}
}

// isPackageNoise tells the summary lines go test prints for a package,
// which the report prints in its own form.
func isPackageNoise(s string) bool {
	t := strings.TrimSpace(s)
	return t == "PASS" || t == "FAIL" || strings.HasPrefix(t, "ok ") ||
		strings.HasPrefix(t, "FAIL\t") || strings.HasPrefix(t, "?") || t == "testing: warning: no tests to run"
}

// reason is what a skipped test said: its output without the RUN and SKIP
// lines, on one line.
func reason(out []string) string {
	var parts []string
	for _, l := range out {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " / ")
}
