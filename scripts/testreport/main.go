// Command testreport reads the output of `go test -json` on its standard
// input and prints what a reader needs: each package's result, every
// skipped test with the reason it gave, the whole output of every failed
// test, and build errors. scripts/test.sh pipes each module's tests
// through it, so a skipped test is never hidden behind an "ok". A package
// that fails while tests still run (a -timeout's panic, a crash) is named
// with its panic, and each test left without a result counts as failed,
// with its output.
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
	"slices"
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

// counts are the tests that passed, were skipped and failed, and the
// packages that failed.
type counts struct{ pass, skip, fail, pkgFail int }

func main() {
	module := flag.String("module", "", "the module's name for the summary line")
	flag.Parse()
	c, err := report(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	fmt.Printf("module %s: %d tests passed, %d skipped, %d failed; %d packages failed\n",
		*module, c.pass, c.skip, c.fail, c.pkgFail)
}

// report prints the report of the events read from r to w and returns the
// counts of top-level and sub tests.
func report(r io.Reader, w io.Writer) (counts, error) {
	var c counts
	output := map[string][]string{}  // package + "\x00" + test → its output lines
	running := map[string][]string{} // package → its tests that started and have no result
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
		case "run":
			running[e.Package] = append(running[e.Package], e.Test)
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
				out := output[key]
				why := panicOf(out)
				if e.Action == "fail" {
					c.pkgFail++
					// Tests without a result: the package died while they
					// ran. Their output holds the panic (test2json gives it
					// to the last test that started, or to none).
					for _, test := range running[e.Package] {
						k := e.Package + "\x00" + test
						c.fail++
						fmt.Fprintf(w, "--- FAIL %s (%s): no result, the package failed while it ran\n", test, e.Package)
						for _, l := range output[k] {
							fmt.Fprint(w, l)
						}
						if why == "" {
							why = panicOf(output[k])
						}
						delete(output, k)
					}
				}
				delete(running, e.Package)
				printPackage(w, e, out, why)
				delete(output, key)
				continue
			}
			running[e.Package] = slices.DeleteFunc(running[e.Package], func(t string) bool { return t == e.Test })
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
// failed (a panic or TestMain's message is not a test's); why is the panic
// that ended it, if any.
func printPackage(w io.Writer, e event, out []string, why string) {
	switch e.Action {
	case "pass":
		fmt.Fprintf(w, "ok   %s %.2fs\n", e.Package, e.Elapsed)
	case "skip":
		fmt.Fprintf(w, "?    %s [no test files]\n", e.Package)
	case "fail":
		for _, l := range out {
			fmt.Fprint(w, l)
		}
		fmt.Fprintf(w, "FAIL %s %.2fs%s\n", e.Package, e.Elapsed, why)
	}
}

// panicOf returns the panic that ended a package's test binary, for its
// FAIL line: " (panic: test timed out after 10m0s)", or "".
func panicOf(out []string) string {
	for _, l := range out {
		if strings.HasPrefix(l, "panic: ") {
			return " (" + strings.TrimSpace(l) + ")"
		}
	}
	return ""
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
