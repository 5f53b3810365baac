// Command table reads the output of the core benchmarks (go test -bench,
// any -count, any number of runs) on standard input and prints the
// performance targets as a Markdown table: the median of every benchmark
// and the ratios the targets are stated in.
//
// A ratio is taken round by round: the k-th measurement of one benchmark
// against the k-th of the other, then the median and the range of those.
// Run the benchmarks in rounds (a loop of -count 1 runs), so that the two
// sides of a ratio are measured a few seconds apart rather than minutes:
//
//	for i in 1 2 3 4 5; do go test -run '^$' -bench 'TraceStream|ExactPath|Parallel|Growth|LargeArgs|NewTracker' -count 1 .; done | tee /tmp/bench.txt
//	go run ./bench/table < /tmp/bench.txt
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

func main() {
	res, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(1)
	}
	if len(res) == 0 {
		fmt.Fprintln(os.Stderr, "table: no benchmark lines on standard input")
		os.Exit(1)
	}
	write(os.Stdout, res)
}

// result holds every measurement of one benchmark, by unit ("ns/op",
// "allocs/op", "ns/call", ...).
type result map[string][]float64

// parse reads benchmark lines such as
//
//	BenchmarkTraceStream/floor-2   4014362   293.6 ns/op   110 B/op   1 allocs/op
//
// and groups the values by benchmark name (without the -N suffix) and unit.
func parse(r io.Reader) (map[string]result, error) {
	res := make(map[string]result)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		if res[name] == nil {
			res[name] = make(result)
		}
		// After the iteration count come value/unit pairs.
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: value %q: %v", f[0], f[i], err)
			}
			res[name][f[i+1]] = append(res[name][f[i+1]], v)
		}
	}
	return res, sc.Err()
}

// median returns the median of the values of name in unit, and whether
// there are any.
func median(res map[string]result, name, unit string) (float64, bool) {
	vs := append([]float64(nil), res[name][unit]...)
	if len(vs) == 0 {
		return 0, false
	}
	sort.Float64s(vs)
	return sortedMedian(vs), true
}

// sortedMedian returns the median of vs, sorted and not empty.
func sortedMedian(vs []float64) float64 {
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}

// ratio returns the median, the smallest and the largest of the round-by-
// round ratios num[k]/den[k] of two benchmarks, each in its unit, and the
// number of rounds; 0 rounds if either has no values.
func ratio(res map[string]result, num, numUnit, den, denUnit string) (med, lo, hi float64, n int) {
	a, b := res[num][numUnit], res[den][denUnit]
	var rs []float64
	for k := range min(len(a), len(b)) {
		if b[k] != 0 {
			rs = append(rs, a[k]/b[k])
		}
	}
	if len(rs) == 0 {
		return 0, 0, 0, 0
	}
	sort.Float64s(rs)
	return sortedMedian(rs), rs[0], rs[len(rs)-1], len(rs)
}

func write(w io.Writer, res map[string]result) {
	ns := func(name string) (float64, bool) { return median(res, name, "ns/op") }
	// rt formats the round-by-round ratio num/den.
	rt := func(num, den, numUnit, denUnit string) string {
		med, lo, hi, n := ratio(res, num, numUnit, den, denUnit)
		if n == 0 {
			return ""
		}
		if n == 1 {
			return times(med)
		}
		return fmt.Sprintf("%s (%s–%s, %d rounds)", times(med), times(lo), times(hi), n)
	}
	fmt.Fprintln(w, "| target | measured (medians) | ratio (median of rounds, range) | goal |")
	fmt.Fprintln(w, "|---|---|---|---|")
	row := func(target, measured, ratio, goal string) {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", target, measured, ratio, goal)
	}
	floor, okF := ns("TraceStream/floor")
	tg, okT := ns("TraceStream/toolguard")
	if okF && okT {
		row("trace stream vs floor", fmt.Sprintf("%s vs %s per call", dur(tg), dur(floor)), rt("TraceStream/toolguard", "TraceStream/floor", "ns/op", "ns/op"), "≤ 8×")
	}
	if pr, ok := ns("TraceStream/primitives"); ok && okF {
		row("trace stream, primitives only (key, digest, clock, map)", fmt.Sprintf("%s per call", dur(pr)), rt("TraceStream/primitives", "TraceStream/floor", "ns/op", "ns/op"), "(information)")
	}
	if s, ok := ns("TraceStream/toolguard+session"); ok && okF {
		row("trace stream, NewTracker timed too", fmt.Sprintf("%s per call", dur(s)), rt("TraceStream/toolguard+session", "TraceStream/floor", "ns/op", "ns/op"), "(information)")
	}
	if ref, ok := median(res, "TraceStream/reference", "ns/call"); ok && okT {
		row("CPython reference vs toolguard", fmt.Sprintf("%s vs %s per call", dur(ref), dur(tg)), rt("TraceStream/reference", "TraceStream/toolguard", "ns/call", "ns/op")+" faster", "≥ 20×")
	}
	if a, ok := median(res, "ExactPath", "allocs/op"); ok {
		e, _ := ns("ExactPath")
		row("exact path", fmt.Sprintf("%s, %g allocs", dur(e), a), "", "≤ 2 allocs")
	}
	for _, kind := range []string{"search", "distinct", "cycle"} {
		small, ok1 := ns("Growth/" + kind + "/100")
		large, ok2 := ns("Growth/" + kind + "/10000")
		if ok1 && ok2 {
			row("growth "+kind+" 100 → 10 000", dur(small)+" → "+dur(large), rt("Growth/"+kind+"/10000", "Growth/"+kind+"/100", "ns/op", "ns/op"), "≤ 2×")
		}
	}
	sha, ok1 := ns("LargeArgs/sha256")
	big, ok2 := ns("LargeArgs/toolguard")
	if ok1 && ok2 {
		row("1 MB argument vs SHA-256", dur(big)+" vs "+dur(sha), rt("LargeArgs/toolguard", "LargeArgs/sha256", "ns/op", "ns/op"), "≈ 3×")
	}
	for _, v := range []string{"validate", "json.Valid"} {
		if x, ok := ns("LargeArgs/" + v); ok && ok1 {
			row("1 MB, "+v+" only vs SHA-256", dur(x)+" vs "+dur(sha), rt("LargeArgs/"+v, "LargeArgs/sha256", "ns/op", "ns/op"), "(information)")
		}
	}
	for _, p := range [][2]string{{"serial", "parallel"}, {"serial-trace", "parallel-trace"}, {"serial", "parallel-sessions"}, {"control-serial", "control-parallel"}} {
		s, ok1 := ns("Parallel/" + p[0])
		q, ok2 := ns("Parallel/" + p[1])
		if ok1 && ok2 {
			row("RunParallel "+p[1]+" vs "+p[0], dur(q)+" vs "+dur(s)+" per op", rt("Parallel/"+p[0], "Parallel/"+p[1], "ns/op", "ns/op")+" throughput", "≥ 1×")
		}
	}
	if n, ok := ns("NewTracker"); ok {
		a, _ := median(res, "NewTracker", "allocs/op")
		row("NewTracker", fmt.Sprintf("%s, %g allocs", dur(n), a), "", "(information)")
	}
}

// dur formats nanoseconds for the table.
func dur(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e5:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func times(r float64) string { return fmt.Sprintf("%.2f×", r) }
