package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolguard/toolguard"
)

// The throughput measure of docs/audit.md: one benchmark run holds, side
// by side, the decode-only floor on one core (every record decoded once
// into its format's record type, nothing else) and the audit on every core
// (read, decode, replay, aggregate), over the same corpus generated from
// the fixtures:
//
//	go test ./internal/audit -run '^$' -bench Throughput -benchtime 5x
//
// TestGenerateCorpus writes a larger corpus for the command itself (see
// docs/audit.md, "Speed and memory").

// corpusSources are the fixtures a corpus is made of: the bundled traces
// (the episode format) and every session transcript.
func corpusSources(t testing.TB) []string {
	t.Helper()
	traces, _ := filepath.Glob(filepath.Join(tracesDir, "*.jsonl"))
	var files []string
	files = append(files, traces...)
	err := filepath.WalkDir(sessions, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".json")) &&
			!strings.Contains(p, "agent-50243ee8") {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(traces) == 0 {
		t.Fatalf("corpus sources: %v (%d traces)", err, len(traces))
	}
	return files
}

// writeCorpus writes copies of the sources under dir until it holds at
// least size bytes: the traces are appended to one large episodes file
// (with fresh episode names), the sessions copied as files of their own in
// one folder per project. It returns the bytes written.
func writeCorpus(t testing.TB, dir string, size int64) int64 {
	t.Helper()
	var traces, others [][]byte
	var names []string
	for _, f := range corpusSources(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(f, tracesDir) {
			traces = append(traces, data)
		} else {
			others = append(others, data)
			names = append(names, filepath.Base(f))
		}
	}
	ep, err := os.Create(filepath.Join(dir, "episodes.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	var written int64
	for copyN := 0; written < size; copyN++ {
		// Half of the bytes in the episodes file, half in session files.
		if written < size/2 || copyN%2 == 0 {
			for _, data := range traces {
				data = bytes.ReplaceAll(data, []byte(`"episode": "`), fmt.Appendf(nil, `"episode": "c%d-`, copyN))
				n, err := ep.Write(data)
				if err != nil {
					t.Fatal(err)
				}
				written += int64(n)
			}
			continue
		}
		sub := filepath.Join(dir, "sessions", fmt.Sprintf("project-%d", copyN%50))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, data := range others {
			name := fmt.Sprintf("%d-%s", copyN, names[i])
			if strings.HasSuffix(name, ".json") {
				name = "session-" + name // folders read .json files named session-*
			}
			if err := os.WriteFile(filepath.Join(sub, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
			written += int64(len(data))
		}
	}
	return written
}

// decodeFloor decodes every record of the corpus once into its format's
// record type, on the calling goroutine: the least any reader must do.
func decodeFloor(t testing.TB, files []string) (records int) { return floorDecode(t, files, false) }

// floorDecode is decodeFloor, or with generic the floor: every
// record decoded into a map[string]any (an array into a []any) with
// encoding/json, which a reader that knows no format would do.
func floorDecode(t testing.TB, files []string, generic bool) (records int) {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		recs, perr := splitRecords(data, false)
		if perr != nil {
			t.Fatalf("%s: %v", f, perr)
		}
		det, err := detect(recs[0].data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if det.array {
			if recs, err = arrayRecords(recs[0]); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		for _, rec := range recs {
			if generic {
				var v any = &map[string]any{}
				if rec.data[0] == '[' {
					v = &[]any{}
				}
				if err := json.Unmarshal(rec.data, v); err != nil {
					t.Fatalf("%s:%d: %v", f, rec.line, err)
				}
				records++
				continue
			}
			var v any
			switch det.format {
			case FormatEpisodes:
				v = &episodeLine{}
			case FormatClaudeCode:
				v = &claudeRecord{}
			case FormatCodex:
				v = &codexLine{}
			case FormatGemini:
				v = &geminiRecord{}
			case FormatResponses:
				v = &responsesRecord{}
			case FormatChatCompletion:
				v = &completionRecord{}
			case FormatOTLP:
				v = &otlpRecord{}
			case FormatATIF:
				v = &atifDoc{}
			case FormatCopilot:
				v = &copilotEvent{}
			case FormatOpenHands:
				v = &openhandsEvent{}
			case FormatCline:
				v = &clineMessage{}
			case FormatGoose:
				v = &gooseLine{}
			case FormatOpencode:
				v = &opencodeExport{}
			default:
				v = &struct {
					Messages []chatMessage `json:"messages"`
				}{}
				if rec.data[0] == '[' {
					v = &[]chatMessage{}
				}
			}
			if err := json.Unmarshal(rec.data, v); err != nil {
				t.Fatalf("%s:%d: %v", f, rec.line, err)
			}
			records++
		}
	}
	return records
}

func corpusFiles(t testing.TB, dir string) []string {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func BenchmarkThroughput(b *testing.B) {
	// The command's collector target, for the floors as for the audit.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(auditGCPercent))
	}
	dir := b.TempDir()
	size := writeCorpus(b, dir, 64<<20)
	files := corpusFiles(b, dir)
	// Each floor's time per run, wall and CPU, for the audit's ratios.
	type floor struct {
		name      string
		generic   bool
		wall, cpu float64
	}
	floors := []*floor{{name: "any", generic: true}, {name: "typed"}}
	for _, fl := range floors {
		b.Run("floor-"+fl.name+"-1-core", func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			b.SetBytes(size)
			start, cpu := time.Now(), cpuTime()
			for b.Loop() {
				floorDecode(b, files, fl.generic)
			}
			fl.wall = float64(time.Since(start)) / float64(b.N)
			fl.cpu = float64(cpuTime()-cpu) / float64(b.N)
		})
	}
	audit := func(b *testing.B) {
		b.SetBytes(size)
		start, cpu := time.Now(), cpuTime()
		defer func() {
			// Side by side with each floor: its time over the audit's, so
			// that 1.5 means the audit reads 1.5 times as fast as the
			// one-core decode ("x-any", "x-typed": wall clock; "cpu-x-any",
			// "cpu-x-typed": CPU time, which a busy machine does not skew).
			if b.N == 0 {
				return
			}
			wall, used := float64(time.Since(start))/float64(b.N), float64(cpuTime()-cpu)/float64(b.N)
			for _, fl := range floors {
				if fl.wall > 0 {
					b.ReportMetric(fl.wall/wall, "x-"+fl.name)
					b.ReportMetric(fl.cpu/used, "cpu-x-"+fl.name)
				}
			}
		}()
		for b.Loop() {
			r := &Report{}
			env := Env{Stderr: io.Discard, Now: time.Now}
			ins, _ := expandInputs([]string{dir})
			opts := runOptions{policy: toolguard.Policy{}, maxEpisode: DefaultMaxEpisode, workers: runtime.GOMAXPROCS(0)}
			if !run(ins, opts, env, r) {
				b.Fatal("a corpus file failed")
			}
			if err := WriteText(io.Discard, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("audit-1-core", func(b *testing.B) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		audit(b)
	})
	b.Run(fmt.Sprintf("audit-%d-cores", runtime.GOMAXPROCS(0)), audit)
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestGenerateCorpus writes a corpus of TOOLGUARD_CORPUS_MB megabytes
// (default 1100) into the folder TOOLGUARD_CORPUS names; without it the
// test is skipped. With TOOLGUARD_CORPUS_EPISODES=N it writes instead
// many.jsonl, N small episodes that each fire (those of
// TestAuditMemoryPerEpisode).
func TestGenerateCorpus(t *testing.T) {
	dir := os.Getenv("TOOLGUARD_CORPUS")
	if dir == "" {
		t.Skip("set TOOLGUARD_CORPUS to a folder to write a corpus into")
	}
	mb := int64(1100)
	if s := os.Getenv("TOOLGUARD_CORPUS_MB"); s != "" {
		if _, err := fmt.Sscan(s, &mb); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if s := os.Getenv("TOOLGUARD_CORPUS_EPISODES"); s != "" {
		var episodes int
		if _, err := fmt.Sscan(s, &episodes); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, "many.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		for i := 0; i < episodes; i++ {
			w.WriteString(firingEpisodeLine(fmt.Sprintf("episode-%07d", i), 4, "r"))
		}
		if err := errors.Join(w.Flush(), f.Close()); err != nil {
			t.Fatal(err)
		}
		return
	}
	n := writeCorpus(t, dir, mb<<20)
	t.Logf("wrote %d bytes in %d files", n, len(corpusFiles(t, dir)))
}

// TestCorpusDecodes checks the benchmark's corpus on a small size: every
// file of it is audited without an error.
func TestCorpusDecodes(t *testing.T) {
	// Every source decodes into its format's record type (the floor
	// knows each format).
	decodeFloor(t, corpusSources(t))
	dir := t.TempDir()
	writeCorpus(t, dir, 4<<20)
	if n := decodeFloor(t, corpusFiles(t, dir)); n == 0 {
		t.Fatal("no record decoded")
	}
	r := &Report{}
	var errOut bytes.Buffer
	ins, _ := expandInputs([]string{dir})
	if !run(ins, runOptions{maxEpisode: DefaultMaxEpisode, workers: 2}, Env{Stderr: &errOut, Now: time.Now}, r) {
		t.Fatalf("the corpus has files that fail:\n%s", errOut.String())
	}
}
