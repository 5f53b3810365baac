package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"html"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard"
)

func fx(name string) string { return filepath.Join(fixtures, name) }

type result struct {
	status         int
	stdout, stderr string
}

func runMain(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	status := Main(args, Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut})
	return result{status, out.String(), errOut.String()}
}

func TestMainExitStatus(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		stdout string // substring
		stderr string // substring
	}{
		{"clean run", []string{fx("episodes.jsonl")}, ExitOK, "click-loop", ""},
		{"fail on hint, with a hint", []string{"--fail-on", "hint", fx("openai.json")}, ExitFailOn, "duplicate, hint", ""},
		{"fail on hint, with an abort", []string{"--fail-on=hint", fx("episodes.jsonl")}, ExitFailOn, "", ""},
		{"fail on abort, with an abort", []string{"--fail-on", "abort", fx("episodes.jsonl")}, ExitFailOn, "", ""},
		{"fail on abort, hint only", []string{"--fail-on", "abort", fx("openai.json")}, ExitOK, "", ""},
		{"fail on hint, clean", []string{"--fail-on", "hint", fx("anthropic_array.json")}, ExitOK, "clean", ""},
		{"fail on with a preset that never fires", []string{"--preset", "turn-budget", "--fail-on", "hint", fx("episodes.jsonl")}, ExitOK, "policy: preset turn-budget", ""},
		{"flags after the files", []string{fx("episodes.jsonl"), "--format", "json"}, ExitOK, `"decisions": [`, ""},
		{"a bad file among good ones", []string{fx("bad/wrong_types.jsonl"), fx("episodes.jsonl"), fx("anthropic.json")}, ExitBadInput,
			"fix-test", "bad/wrong_types.jsonl: line 3: calls[1].tool: want a string, got number"},
		// A last line cut off (a session being written) is read around.
		{"a cut last line", []string{fx("bad/truncated.jsonl")}, ExitOK,
			"Files read with a warning (1)", "bad/truncated.jsonl: line 2: the last line is cut off (a session still being written?); read up to line 1"},
		{"a cut last line and fail-on", []string{"--fail-on", "hint", fx("bad/truncated.jsonl"), fx("episodes.jsonl")}, ExitFailOn,
			"click-loop", "read up to line 1"},
		{"an empty file", []string{fx("bad/empty.jsonl")}, ExitOK, "1 without a tool call", ""},
		{"a bad file wins over fail-on", []string{"--fail-on", "hint", fx("episodes.jsonl"), fx("bad/orphan_tool.json")}, ExitBadInput,
			"click-loop", `line 27: messages[3].tool_call_id`},
		{"a missing file", []string{"nonexistent.jsonl", fx("episodes.jsonl")}, ExitBadInput, "click-loop", "nonexistent.jsonl: no such file or directory"},
		// A folder is walked: its broken files are reported, the file that
		// is not a transcript is passed over.
		{"a folder", []string{fixtures + "/bad"}, ExitBadInput, "", "bad/wrong_types.jsonl: line 3"},
		{"-- ends the flags", []string{"--", "--format"}, ExitBadInput, "", "toolguard audit: --format: no such file"},
		{"no files", nil, ExitBadInput, "", "no input"},
		{"unknown flag", []string{"--frobnicate", fx("episodes.jsonl")}, ExitBadInput, "", "flag provided but not defined"},
		{"bad format", []string{"--format", "xml", fx("episodes.jsonl")}, ExitBadInput, "", `--format "xml": want text, json or html`},
		{"bad fail-on", []string{"--fail-on", "allow", fx("episodes.jsonl")}, ExitBadInput, "", `want hint or abort`},
		{"unknown preset", []string{"--preset", "nope", fx("episodes.jsonl")}, ExitBadInput, "", `unknown preset "nope"`},
		{"policy without a loader", []string{"--policy", "p.yaml", fx("episodes.jsonl")}, ExitBadInput, "", "not available"},
		{"stdin twice", []string{"-", "-"}, ExitBadInput, "", "more than once"},
		{"help", []string{"-h"}, ExitOK, "usage: toolguard audit [flags] FILE|FOLDER...", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, "", tt.args...)
			if r.status != tt.status {
				t.Errorf("status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.status, tt.status, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, r.stdout)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, r.stderr)
			}
			if tt.stderr == "" && r.stderr != "" {
				t.Errorf("unexpected stderr:\n%s", r.stderr)
			}
		})
	}
}

func TestMainStdin(t *testing.T) {
	data := readFixture(t, "anthropic.json")
	for _, format := range []string{"text", "json", "html"} {
		r := runMain(t, string(data), "--format", format, "-", fx("episodes.jsonl"))
		name := StdinName
		if format == "html" {
			name = html.EscapeString(name)
		}
		if r.status != ExitOK || !strings.Contains(r.stdout, name) || !strings.Contains(r.stdout, "fix-test") {
			t.Errorf("%s: status %d\n%s\n%s", format, r.status, r.stdout, r.stderr)
		}
	}
	r := runMain(t, "{\"calls\": [", "-")
	if r.status != ExitBadInput || !strings.Contains(r.stderr, "toolguard audit: <stdin>: line 1: truncated JSON") {
		t.Errorf("status %d, stderr %q", r.status, r.stderr)
	}
}

func TestMainJSONIsValid(t *testing.T) {
	r := runMain(t, "", "--format", "json", fx("episodes.jsonl"), fx("bad/mixed.jsonl"))
	if r.status != ExitBadInput {
		t.Errorf("status %d", r.status)
	}
	var doc struct {
		Files []struct {
			File, Error string
		}
		Decisions []map[string]any
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(doc.Files) != 2 || doc.Files[1].Error == "" || len(doc.Decisions) != 13 {
		t.Errorf("files %+v, %d decisions", doc.Files, len(doc.Decisions))
	}
}

func TestMainPolicyFile(t *testing.T) {
	var gotBase *toolguard.Policy
	var gotPath string
	load := func(base *toolguard.Policy, path string) (toolguard.Policy, error) {
		gotBase, gotPath = base, path
		if path == "broken.yaml" {
			return toolguard.Policy{}, errors.New("quotafile: broken.yaml:3: tool_quota.Bash: negative limit")
		}
		p := toolguard.Policy{MaxRepeats: 1}
		if base != nil {
			p = *base
			p.MaxRepeats = 1
		}
		return p, nil
	}
	run := func(args ...string) result {
		var out, errOut bytes.Buffer
		st := Main(args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, PolicyFile: load})
		return result{st, out.String(), errOut.String()}
	}

	r := run("--policy", "quota.yaml", fx("openai.jsonl"))
	if r.status != ExitOK || gotBase != nil || gotPath != "quota.yaml" || !strings.Contains(r.stdout, "policy: file quota.yaml") {
		t.Errorf("status %d base %v path %q\n%s", r.status, gotBase, gotPath, r.stdout)
	}
	// MaxRepeats 1: the second identical call fires.
	if !strings.Contains(r.stdout, "call 2 get_weather: duplicate, hint") {
		t.Errorf("the file's policy was not used:\n%s", r.stdout)
	}

	r = run("--preset", "loop-detection", "--policy", "quota.yaml", fx("openai.jsonl"))
	if r.status != ExitOK || gotBase == nil || gotBase.MaxRepeats != 3 || !strings.Contains(r.stdout, "policy: preset loop-detection with file quota.yaml") {
		t.Errorf("status %d base %+v\n%s\n%s", r.status, gotBase, r.stdout, r.stderr)
	}

	r = run("--policy", "broken.yaml", fx("openai.jsonl"))
	if r.status != ExitBadInput || !strings.Contains(r.stderr, "toolguard audit: --policy: quotafile: broken.yaml:3") || r.stdout != "" {
		t.Errorf("status %d\n%s\n%s", r.status, r.stdout, r.stderr)
	}
}

// chunkReader returns its data a few bytes at a time.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.n, len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// fakeClock advances by step on every reading.
func fakeClock(step time.Duration) func() time.Time {
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

func TestMainProgress(t *testing.T) {
	data := readFixture(t, "episodes.jsonl")
	for _, terminal := range []bool{false, true} {
		var out, errOut bytes.Buffer
		st := Main([]string{"-"}, Env{
			Stdin: &chunkReader{data: data, n: 512}, Stdout: &out, Stderr: &errOut,
			Terminal: terminal, Now: fakeClock(200 * time.Millisecond),
		})
		if st != ExitOK {
			t.Fatalf("status %d: %s", st, errOut.String())
		}
		if !terminal && errOut.Len() != 0 {
			t.Errorf("progress drawn on a non-terminal: %q", errOut.String())
		}
		if terminal {
			s := errOut.String()
			if !strings.Contains(s, "\rreading <stdin>  0.0 MiB") || !strings.HasSuffix(s, "\r\x1b[K") {
				t.Errorf("progress = %q", s)
			}
		}
	}
}

func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "traces.jsonl", 4<<20, fakeClock(time.Second))
	p.add(1 << 20)
	if got := p.line(); !strings.HasPrefix(got, "reading traces.jsonl [=======>                      ]  25%  1.0/4.0 MiB") {
		t.Errorf("line = %q", got)
	}
	p.add(3 << 20)
	if got := p.line(); !strings.Contains(got, "[==============================] 100%  4.0/4.0 MiB") {
		t.Errorf("line = %q", got)
	}
	p.add(1 << 20) // more than announced
	if got := p.line(); !strings.Contains(got, "100%") {
		t.Errorf("line = %q", got)
	}

	// Fast reads draw nothing.
	b.Reset()
	q := newProgress(&b, "x", 10, fakeClock(time.Millisecond))
	q.add(5)
	q.add(5)
	q.finish()
	if b.Len() != 0 {
		t.Errorf("drawn for a fast read: %q", b.String())
	}

	// Long names are cut from the left.
	r := newProgress(&b, strings.Repeat("d/", 40)+"file.jsonl", 0, fakeClock(time.Second))
	if got := r.line(); !strings.HasPrefix(got, "reading …") || !strings.Contains(got, "file.jsonl  0.0 MiB") {
		t.Errorf("line = %q", got)
	}
}
