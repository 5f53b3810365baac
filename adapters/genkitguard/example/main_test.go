package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("GENKIT_ENV", "prod") // no reflection server
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		"answer: It is sunny in Paris.",
		"run stopped: weather abort by duplicate",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
