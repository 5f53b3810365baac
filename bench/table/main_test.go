package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkTraceStream/floor-2         	 4014362	       300.0 ns/op	     110 B/op	       1 allocs/op
BenchmarkTraceStream/floor-2         	 4039988	       280.0 ns/op	     110 B/op	       1 allocs/op
BenchmarkTraceStream/floor-2         	 4021904	       290.0 ns/op	     110 B/op	       1 allocs/op
BenchmarkTraceStream/toolguard-2     	  222873	      2900 ns/op	    1165 B/op	       3 allocs/op
BenchmarkTraceStream/primitives-2    	  448647	      1500 ns/op	       0 B/op	       0 allocs/op
BenchmarkTraceStream/reference-2     	       1	 9000000000 ns/op	     14500 ns/call
BenchmarkExactPath-2                 	  592202	      1500 ns/op	     143 B/op	       1 allocs/op
BenchmarkGrowth/search/100-2         	  100000	      1000 ns/op
BenchmarkGrowth/search/10000-2       	  100000	      1500 ns/op
BenchmarkLargeArgs/sha256-2          	    2000	   1000000 ns/op	1048.01 MB/s
BenchmarkLargeArgs/toolguard-2       	     500	   3500000 ns/op	 239.53 MB/s	     560 B/op	       1 allocs/op
BenchmarkParallel/serial-2           	  100000	      1200 ns/op
BenchmarkParallel/parallel-2         	  100000	      1000 ns/op
PASS
`

func TestTable(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := median(res, "TraceStream/floor", "ns/op"); m != 290 {
		t.Fatalf("median of the floor = %v, want 290", m)
	}
	var b strings.Builder
	write(&b, res)
	out := b.String()
	for _, want := range []string{
		// One round: the first floor run (300 ns) against the toolguard run.
		"| trace stream vs floor | 2.90 µs vs 290 ns per call | 9.67× | ≤ 8× |",
		"| trace stream, primitives only (key, digest, clock, map) | 1.50 µs per call | 5.00× | (information) |",
		"| CPython reference vs toolguard | 14.50 µs vs 2.90 µs per call | 5.00× faster | ≥ 20× |",
		"| exact path | 1.50 µs, 1 allocs |",
		"| growth search 100 → 10 000 | 1.00 µs → 1.50 µs | 1.50× | ≤ 2× |",
		"| 1 MB argument vs SHA-256 | 3.50 ms vs 1.00 ms | 3.50× | ≈ 3× |",
		"| RunParallel parallel vs serial | 1.00 µs vs 1.20 µs per op | 1.20× throughput | ≥ 1× |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestParseBadValue(t *testing.T) {
	if _, err := parse(strings.NewReader("BenchmarkX-2 10 abc ns/op\n")); err == nil {
		t.Fatal("want an error for a value that is not a number")
	}
}

// TestRounds checks that ratios pair the k-th runs of two benchmarks, and
// report the median and the range of the rounds.
func TestRounds(t *testing.T) {
	in := `BenchmarkLargeArgs/sha256-2 10 1000000 ns/op
BenchmarkLargeArgs/toolguard-2 10 3000000 ns/op
BenchmarkLargeArgs/sha256-2 10 2000000 ns/op
BenchmarkLargeArgs/toolguard-2 10 5000000 ns/op
BenchmarkLargeArgs/sha256-2 10 1000000 ns/op
BenchmarkLargeArgs/toolguard-2 10 4000000 ns/op
BenchmarkParallel/serial-2 10 1000 ns/op
BenchmarkParallel/parallel-2 10 500 ns/op
BenchmarkParallel/serial-2 10 2000 ns/op
BenchmarkParallel/parallel-2 10 2500 ns/op
`
	res, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	med, lo, hi, n := ratio(res, "LargeArgs/toolguard", "ns/op", "LargeArgs/sha256", "ns/op")
	if med != 3 || lo != 2.5 || hi != 4 || n != 3 {
		t.Fatalf("ratio = %v %v %v %v, want 3 2.5 4 3", med, lo, hi, n)
	}
	var b strings.Builder
	write(&b, res)
	for _, want := range []string{
		// Medians 4 ms and 1 ms, but the rounds' ratios are 3, 2.5 and 4.
		"| 1 MB argument vs SHA-256 | 4.00 ms vs 1.00 ms | 3.00× (2.50×–4.00×, 3 rounds) | ≈ 3× |",
		// Throughput: serial/parallel per round, 2 and 0.8.
		"| RunParallel parallel vs serial | 1.50 µs vs 1.50 µs per op | 1.40× (0.80×–2.00×, 2 rounds) throughput | ≥ 1× |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
