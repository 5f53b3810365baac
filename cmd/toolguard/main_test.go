package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func run2(stdin string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	st := run(args, strings.NewReader(stdin), &out, &errOut, false)
	return st, out.String(), errOut.String()
}

func TestRun(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		stdout string
		stderr string
	}{
		{"no command", nil, 2, "", "usage: toolguard COMMAND"},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"help", []string{"help"}, 0, "audit ", ""},
		{"audit", []string{"audit", "testdata/episodes.jsonl"}, 0, "click-loop", ""},
		{"audit fail-on", []string{"audit", "--fail-on", "abort", "testdata/episodes.jsonl"}, 1, "click-loop", ""},
		// The quota file limits get_weather to 2 calls per session.
		{"policy file", []string{"audit", "--policy", "testdata/quota.yaml", "testdata/openai.jsonl"}, 0,
			"call 3 get_weather: tool_limit, hint", ""},
		{"policy file over a preset", []string{"audit", "--preset", "loop-detection", "--policy", "testdata/quota.yaml", "testdata/openai.jsonl"}, 0,
			"policy: preset loop-detection with file testdata/quota.yaml", ""},
		{"missing policy file", []string{"audit", "--policy", "testdata/none.yaml", "testdata/openai.jsonl"}, 2, "", "--policy: quotafile:"},
		{"missing policy file over a preset", []string{"audit", "--preset", "quota-rule", "--policy", "testdata/none.yaml", "testdata/openai.jsonl"}, 2, "", "--policy: quotafile:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, out, errOut := run2("", tt.args...)
			if st != tt.status || !strings.Contains(out, tt.stdout) || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("status %d (want %d)\nstdout:\n%s\nstderr:\n%s", st, tt.status, out, errOut)
			}
		})
	}
}

func TestRunStdin(t *testing.T) {
	data, err := os.ReadFile("testdata/openai.json")
	if err != nil {
		t.Fatal(err)
	}
	st, out, errOut := run2(string(data), "audit", "--fail-on", "hint", "-")
	if st != 1 || !strings.Contains(out, "<stdin>") {
		t.Errorf("status %d\n%s\n%s", st, out, errOut)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Errorf("a regular file is not a terminal")
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Errorf("%s is a character device, not a terminal", os.DevNull)
	}
}
