package audit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The runs pasted in docs/audit.md are the command's real output: each
// ```text block whose first line is "$ toolguard audit ARGS" is run here,
// from the repository root, and must match. "2>&1" at the end puts standard
// error (written first) before standard output. -update-docs rewrites the
// blocks with the output of the day.

const docsFile = "../../../../docs/audit.md"

var updateDocs = flag.Bool("update-docs", false, "TestDocsRuns: rewrite the runs pasted in "+docsFile)

var runBlock = regexp.MustCompile("(?s)```text\n\\$ toolguard audit ([^\n]*)\n(.*?)```")

func TestDocsRuns(t *testing.T) {
	doc, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	blocks := runBlock.FindAllSubmatchIndex(doc, -1)
	if len(blocks) < 3 {
		t.Fatalf("%d pasted runs in %s; want the fixture runs", len(blocks), docsFile)
	}
	var out bytes.Buffer
	last := 0
	for _, m := range blocks {
		cmd := string(doc[m[2]:m[3]])
		got := docsRun(t, cmd)
		want := string(doc[m[4]:m[5]])
		if got != want && !*updateDocs {
			t.Errorf("docs/audit.md: the run of `toolguard audit %s` has drifted; run go test ./internal/audit -run TestDocsRuns -update-docs\n--- pasted\n%s--- real\n%s", cmd, want, got)
		}
		out.Write(doc[last:m[4]])
		out.WriteString(got)
		last = m[5]
	}
	out.Write(doc[last:])
	if *updateDocs {
		if err := os.WriteFile(filepath.Join("docs", "audit.md"), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// docsRun runs one pasted command line and returns what it prints.
func docsRun(t *testing.T, cmd string) string {
	t.Helper()
	fields := strings.Fields(cmd)
	both := len(fields) > 0 && fields[len(fields)-1] == "2>&1"
	if both {
		fields = fields[:len(fields)-1]
	}
	var args []string
	for _, f := range fields {
		if strings.ContainsAny(f, "*?[") {
			matches, err := filepath.Glob(f)
			if err != nil || len(matches) == 0 {
				t.Fatalf("%s: no match (%v)", f, err)
			}
			args = append(args, matches...)
			continue
		}
		args = append(args, f)
	}
	var stdout, stderr bytes.Buffer
	Main(args, Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
	if both {
		return stderr.String() + stdout.String()
	}
	return stdout.String()
}
