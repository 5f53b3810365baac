package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		"answer: 6*7 is 42.",
		"run stopped: toolguard: loop detected: tool \"calculator\" stopped by duplicate",
		"turn 2  calculator abort duplicate skipped",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
