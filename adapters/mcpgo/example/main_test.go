package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRun runs the program offline. It checks the shape of what the client
// sees, not the exact wording of toolguard's messages.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		"call 1: isError=false verdict=ok\n  contents of notes.txt\n",
		"call 2: isError=false verdict=ok\n  contents of notes.txt\n",
		"call 3: isError=true verdict=hint\n  [loop-detected] Tool 'read_file' was already executed with identical parameters",
		"call 4: isError=true verdict=abort\n  [loop-detected] ",
		"STOP: toolguard has stopped this tool",
		"This call was not executed.",
		"the harness stops the turn\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(got, "call 5") {
		t.Error("the client went on after the abort")
	}
}
