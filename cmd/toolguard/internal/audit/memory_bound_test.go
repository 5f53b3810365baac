package audit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolguard/toolguard"
)

// firingEpisodeLine is one record of the episode format whose calls repeat, so
// that a hint fires (the text report keeps the first firing).
func firingEpisodeLine(name string, calls int, result string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"source":"s","episode":%q,"label":"failure","calls":[`, name)
	for i := 0; i < calls; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"turn":%d,"id":"c%d","tool":"search","args":{"query":"the same query"},"result":%q}`, i, i, result)
	}
	b.WriteString("]}\n")
	return b.String()
}

// auditFile runs the audit's pipeline on path, as the text report does,
// and returns the report.
func auditFile(t *testing.T, path string, maxEpisode int) *Report {
	t.Helper()
	r := &Report{Lines: "all"}
	ins, errs := expandInputs([]string{path})
	require.Empty(t, errs)
	opts := runOptions{policy: toolguard.Policy{}, maxEpisode: maxEpisode, workers: 2}
	require.True(t, run(ins, opts, Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard}, r))
	return r
}

func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakHeap runs f and returns the largest heap seen while it ran, sampled
// every millisecond, under a small GC target (gcPercent), so that the
// peak measures what is live rather than the collector's slack.
func peakHeap(gcPercent int, f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	runtime.GC()
	peak := heapBytes()
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			mu.Lock()
			peak = max(peak, heapBytes())
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return max(peak, heapBytes())
}

// TestAuditMemoryPerEpisode pins issue 27: the text report's memory does
// not grow with the number of episodes. It kept about 1.2 KB per episode
// in issue 29, then 473–488 bytes (each episode's aggregate); now the
// episodes are gathered into the report's aggregate as they come and
// their lines wait in a temporary file, so four times the episodes keep
// the same heap: the growth stays under 64 KiB in all (well under a byte
// per episode; measured within a few KiB either way, the collector's
// noise). Writing the report reads the lines back one at a time: its
// peak (garbage not yet collected included) stays under 1 MiB above what
// the run kept, whatever the number of episodes.
func TestAuditMemoryPerEpisode(t *testing.T) {
	kept := func(episodes int) (uint64, uint64) {
		path := filepath.Join(t.TempDir(), "eps.jsonl")
		var b bytes.Buffer
		for i := 0; i < episodes; i++ {
			b.WriteString(firingEpisodeLine(fmt.Sprintf("episode-%06d", i), 4, "r"))
		}
		require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
		b = bytes.Buffer{}
		runtime.GC()
		before := heapBytes()
		r := auditFile(t, path, DefaultMaxEpisode)
		defer r.release()
		runtime.GC()
		after := heapBytes()
		s := r.Summary()
		require.Equal(t, episodes, s.Episodes)
		require.Equal(t, episodes, s.WithHint)
		require.Empty(t, r.Episodes)
		peak := peakHeap(5, func() { require.NoError(t, WriteText(io.Discard, r)) })
		runtime.KeepAlive(r)
		return after - min(before, after), peak - min(peak, after)
	}
	const few, many = 20_000, 80_000
	keptFew, writingFew := kept(few)
	keptMany, writingMany := kept(many)
	grew := int64(keptMany) - int64(keptFew)
	t.Logf("text report: %d bytes kept after %d episodes, %d after %d (%+d); writing it, %d and %d more at the peak",
		keptFew, few, keptMany, many, grew, writingFew, writingMany)
	assert.Less(t, grew, int64(64<<10))
	assert.Less(t, keptMany, uint64(1<<20))
	assert.Less(t, writingMany, uint64(1<<20))
}

// TestAuditMemoryLargeRecords pins issue 29 item 10: up to 2 × workers + 2
// units were in flight whatever their size, so records near the
// --max-episode-size cap were decoded and replayed several at once (one
// 1 GiB record took 6.2 GB). Now the bytes in flight past the first unit
// stay under the cap: one such record at a time.
func TestAuditMemoryLargeRecords(t *testing.T) {
	const records, size = 6, 16 << 20
	path := filepath.Join(t.TempDir(), "big.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	result := strings.Repeat("x", 1900)
	for i := 0; i < records; i++ {
		_, err := f.WriteString(firingEpisodeLine(fmt.Sprint("big-", i), size/2000, result))
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	runtime.GC()
	base := heapBytes()
	var r *Report
	peak := peakHeap(20, func() { r = auditFile(t, path, size+(1<<20)) })
	require.Equal(t, records, r.Summary().Episodes)
	grew := float64(peak-base) / float64(size)
	t.Logf("%d records of %d MiB, cap %d MiB, 2 workers: peak heap %.1f times one record", records, size>>20, (size>>20)+1, grew)
	assert.Less(t, grew, 7.0) // measured 5.2–5.6; the collector's timing moves the peak
}

// TestAuditMemoryHugeNames pins that what an episode keeps is bounded
// whatever its input holds: an episode id, a label, a tool's name and a
// call id of 32 KiB each, and arguments and results of 32 KiB in one
// word, are cut (names to maxNameBytes, previews to previewRunes) in
// strings of their own, not substrings that keep the whole text alive.
func TestAuditMemoryHugeNames(t *testing.T) {
	const episodes, size = 200, 32 << 10
	huge := func(c byte, i int) string { return fmt.Sprint(i) + strings.Repeat(string(c), size) }
	path := filepath.Join(t.TempDir(), "huge.jsonl")
	var b bytes.Buffer
	for i := 0; i < episodes; i++ {
		fmt.Fprintf(&b, `{"episode":%q,"label":%q,"calls":[`, huge('e', i), huge('l', i))
		for j := 0; j < 3; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"turn":%d,"id":%q,"tool":%q,"args":{"q":%q},"result":%q}`, j, huge('c', j), huge('t', i), huge('a', i), huge('r', i))
		}
		b.WriteString("]}\n")
	}
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	runtime.GC()
	before := heapBytes()
	r := auditFile(t, path, DefaultMaxEpisode)
	runtime.GC()
	per := float64(heapBytes()-before) / episodes
	require.Equal(t, episodes, r.Summary().Episodes)
	e := &r.agg.detailed[0]
	require.True(t, e.Reached(toolguard.Hint))
	require.NotEmpty(t, e.Firings)
	assert.LessOrEqual(t, len(e.Episode), maxNameBytes+len("…"))
	assert.LessOrEqual(t, len(e.Label), maxNameBytes+len("…"))
	assert.LessOrEqual(t, len(e.Stats.First.Tool), maxNameBytes+len("…"))
	assert.LessOrEqual(t, len(e.Firings[0].CallID), maxNameBytes+len("…"))
	assert.LessOrEqual(t, len(e.Firings[0].Args), 4*previewRunes)
	var out bytes.Buffer
	require.NoError(t, WriteText(&out, r))
	runtime.KeepAlive(r)
	t.Logf("text report: %.0f bytes kept per episode of %d KiB names and previews (%d episodes)", per, size>>10, episodes)
	assert.Less(t, per, 4096.0)
}

// TestTextDetailsFirstSessions: past the sessions the text report
// details, an episode keeps no title nor firings, and the report still
// counts and lists it.
func TestTextDetailsFirstSessions(t *testing.T) {
	const fired = maxFiringEpisodes + 5
	path := filepath.Join(t.TempDir(), "eps.jsonl")
	var b bytes.Buffer
	for i := 0; i < fired; i++ {
		b.WriteString(firingEpisodeLine(fmt.Sprintf("episode-%02d", i), 4, "r"))
	}
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	r := auditFile(t, path, DefaultMaxEpisode)
	require.Equal(t, fired, r.Summary().Episodes)
	require.Len(t, r.agg.detailed, maxFiringEpisodes)
	for i := range r.agg.detailed {
		assert.NotNil(t, r.agg.detailed[i].Firings, "episode %d", i)
	}
	var out bytes.Buffer
	require.NoError(t, WriteText(&out, r))
	text := out.String()
	assert.Contains(t, text, fmt.Sprintf("Firings, by session (%d)", fired))
	assert.Contains(t, text, "  episode-19: looks like a loop")
	assert.NotContains(t, text, "  episode-20: looks like a loop")
	assert.Contains(t, text, "… 5 more sessions")
	assert.Equal(t, 2*maxFiringEpisodes, strings.Count(text, "      setting  MaxRepeats"), "calls 3 and 4 fired")
	assert.Contains(t, text, "episode-24  failure  4      call 3 search: duplicate, hint")
}

// TestTextDetailsAfterFailedFile: once the collector holds the sessions
// the text report details, later episodes are replayed without details;
// when the file that held them fails, its episodes are taken back out and
// the next file's sessions are detailed all the same (replayed again).
func TestTextDetailsAfterFailedFile(t *testing.T) {
	dir := t.TempDir()
	var a, b bytes.Buffer
	for i := 0; i < maxFiringEpisodes+5; i++ {
		a.WriteString(firingEpisodeLine(fmt.Sprintf("a-%02d", i), 4, "r"))
		b.WriteString(firingEpisodeLine(fmt.Sprintf("b-%02d", i), 4, "r"))
	}
	// Past the first chunk, so that the fired episodes are collected
	// before the file fails.
	pad := `{"episode":"pad","calls":[{"tool":"t","result":"` + strings.Repeat("x", 64<<10) + `"}]}` + "\n"
	for a.Len() < 3*chunkSize {
		a.WriteString(pad)
	}
	a.WriteString("{broken\n")
	a.WriteString(firingEpisodeLine("a-last", 4, "r"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.jsonl"), a.Bytes(), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.jsonl"), b.Bytes(), 0o600))
	for range 5 {
		r := &Report{Lines: "all"}
		ins, errs := expandInputs([]string{dir})
		require.Empty(t, errs)
		opts := runOptions{policy: toolguard.Policy{}, maxEpisode: DefaultMaxEpisode, workers: 2}
		require.False(t, run(ins, opts, Env{Stdout: io.Discard, Stderr: io.Discard}, r))
		require.Equal(t, maxFiringEpisodes+5, r.Summary().Episodes)
		require.Len(t, r.agg.detailed, maxFiringEpisodes)
		for i := range r.agg.detailed {
			e := &r.agg.detailed[i]
			require.Equal(t, fmt.Sprintf("b-%02d", i), e.Episode)
			require.NotNil(t, e.Firings, "episode %d", i)
		}
		var out bytes.Buffer
		require.NoError(t, WriteText(&out, r))
		require.Contains(t, out.String(), "b-24     failure  4      call 3 search: duplicate, hint")
		require.NotContains(t, out.String(), "a-00")
		r.release()
	}
}

// TestTextLinesWithoutTempDir: where no temporary file can be made, the
// episode lines are held in memory and the report is the same.
func TestTextLinesWithoutTempDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "eps.jsonl")
	var b bytes.Buffer
	for i := 0; i < 30; i++ {
		b.WriteString(firingEpisodeLine(fmt.Sprintf("episode-%02d", i), 2+i%3, "r"))
	}
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	report := func() string {
		r := auditFile(t, path, DefaultMaxEpisode)
		defer r.release()
		var out bytes.Buffer
		require.NoError(t, WriteText(&out, r))
		return out.String()
	}
	want := report()
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	assert.Equal(t, want, report())
	assert.Contains(t, want, "episode-29  failure  4      call 3 search: duplicate, hint")
}

// TestAuditMemoryPerFile: what grows with the number of files is one
// result per file (its name, format, counts and warnings, for the summary
// and the JSON report): 230 bytes with a 75-byte path, measured.
func TestAuditMemoryPerFile(t *testing.T) {
	const files = 4000
	dir := t.TempDir()
	for i := 0; i < files; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("project-%02d", i%50))
		require.NoError(t, os.MkdirAll(sub, 0o755))
		name := filepath.Join(sub, fmt.Sprintf("%08d-session.jsonl", i))
		require.NoError(t, os.WriteFile(name, []byte(firingEpisodeLine(fmt.Sprint("e", i), 4, "r")), 0o600))
	}
	runtime.GC()
	before := heapBytes()
	r := auditFile(t, dir, DefaultMaxEpisode)
	defer r.release()
	runtime.GC()
	per := (float64(heapBytes()) - float64(before)) / files
	require.Len(t, r.Files, files)
	require.Equal(t, files, r.Summary().Episodes)
	runtime.KeepAlive(r)
	t.Logf("%.0f bytes kept per file (%d files, paths of %d bytes)", per, files, len(r.Files[0].File))
	assert.Less(t, per, 400.0)
}
