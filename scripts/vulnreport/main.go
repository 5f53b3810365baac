// Command vulnreport reads the output of `govulncheck -format json` on its
// standard input and prints each vulnerability that the scanned code calls,
// with the module and version it is found in, the version that fixes it and
// the first call that reaches it. It exits with status 1 when a called
// vulnerability is in a dependency (a module floor to raise), and 0 when
// the called ones are all in the standard library (the toolchain's: they
// are listed, and fixed by building with a newer Go) or there are none.
// .ci/run pipes each module's scan through it.
//
//	govulncheck -format json ./... | go run ./scripts/vulnreport -module redisstore
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// message is one object of govulncheck's JSON stream; only findings are
// read (see golang.org/x/vuln/internal/govulncheck).
type message struct {
	Finding *finding `json:"finding"`
}

type finding struct {
	OSV          string  `json:"osv"`
	FixedVersion string  `json:"fixed_version"`
	Trace        []frame `json:"trace"`
}

type frame struct {
	Module   string    `json:"module"`
	Version  string    `json:"version"`
	Package  string    `json:"package"`
	Function string    `json:"function"`
	Receiver string    `json:"receiver"`
	Position *position `json:"position"`
}

type position struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
}

// called is a vulnerability that the code calls, in one module.
type called struct {
	osv, module, version, fixed, via string
}

func main() {
	module := flag.String("module", "", "the scanned module's name for the summary line")
	flag.Parse()
	found, err := read(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulnreport:", err)
		os.Exit(2)
	}
	deps := summarize(os.Stdout, *module, found)
	if deps > 0 {
		os.Exit(1)
	}
}

// read returns the called vulnerabilities of a JSON stream, one per
// vulnerability and module, sorted.
func read(r io.Reader) ([]called, error) {
	seen := map[string]bool{}
	var out []called
	dec := json.NewDecoder(r)
	for {
		var m message
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not govulncheck's JSON output: %w", err)
		}
		f := m.Finding
		// A finding at the symbol level names the function in its first
		// frame; those at the module or package level are not called.
		if f == nil || len(f.Trace) == 0 || f.Trace[0].Function == "" {
			continue
		}
		c := called{osv: f.OSV, module: f.Trace[0].Module, version: f.Trace[0].Version, fixed: f.FixedVersion}
		key := c.osv + " " + c.module
		if seen[key] {
			continue
		}
		seen[key] = true
		c.via = via(f.Trace)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].module != out[j].module {
			return out[i].module < out[j].module
		}
		return out[i].osv < out[j].osv
	})
	return out, nil
}

// via names the call in the scanned code that reaches the vulnerability:
// the last frame of the trace (the trace runs from the vulnerable function
// to the code's own).
func via(trace []frame) string {
	f := trace[len(trace)-1]
	name := f.Function
	if f.Receiver != "" {
		name = strings.TrimPrefix(f.Receiver, "*") + "." + name
	}
	if f.Position != nil {
		return fmt.Sprintf("%s.%s (%s:%d)", f.Package, name, f.Position.Filename, f.Position.Line)
	}
	return f.Package + "." + name
}

// summarize prints the called vulnerabilities and a summary line, and returns
// how many are in dependencies.
func summarize(w io.Writer, module string, found []called) int {
	deps, std := 0, 0
	for _, c := range found {
		where := "dependency"
		if c.module == "stdlib" {
			where = "standard library"
			std++
		} else {
			deps++
		}
		fixed := c.fixed
		if fixed == "" {
			fixed = "no fixed version"
		}
		fmt.Fprintf(w, "  %s  %s %s@%s, fixed in %s; called via %s\n", c.osv, where, c.module, c.version, fixed, c.via)
	}
	fmt.Fprintf(w, "module %s: %d called vulnerabilities in dependencies, %d in the standard library\n", module, deps, std)
	return deps
}
