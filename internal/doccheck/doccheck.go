// Package doccheck finds the Go code in the repository's documentation, so
// that its test can compile every snippet (and run the programs that need
// nothing but the core): a snippet that does not work as pasted fails the
// tests.
//
// The snippets are every ```go block of the Markdown files (README.md,
// docs/*.md, each module's README.md; testdata is left out) and the code
// blocks of the root package's doc comment (doc.go). A Markdown block must
// be a complete Go file. A doc.go block is a fragment: it is compiled as the
// body of a function that declares the names doc.go's text gives it
// (docPreamble in the test).
package doccheck

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Snippet is one block of Go code in a documentation file.
type Snippet struct {
	File string // relative to the repository root, with forward slashes
	Line int    // the line of the block's first line of code
	Code string
}

// Markdown returns the ```go blocks of a Markdown text, in order. line is
// the 1-based line of each block's first code line.
func Markdown(file string, text []byte) []Snippet {
	var (
		out   []Snippet
		in    bool
		start int
		code  strings.Builder
		fence string
	)
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if !in {
			if f, info, ok := openFence(trimmed); ok && info == "go" {
				in, start, fence = true, n+1, f
				code.Reset()
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			out = append(out, Snippet{File: file, Line: start, Code: code.String()})
			in = false
			continue
		}
		code.WriteString(line)
		code.WriteByte('\n')
	}
	return out
}

// openFence reports whether line opens a fenced block, with its fence
// (``` or ~~~, possibly longer) and the first word of its info string.
func openFence(line string) (fence, info string, ok bool) {
	for _, c := range []string{"```", "~~~"} {
		if strings.HasPrefix(line, c) {
			n := len(line) - len(strings.TrimLeft(line, c[:1]))
			rest := strings.Fields(line[n:])
			if len(rest) > 0 {
				info = rest[0]
			}
			return line[:n], info, true
		}
	}
	return "", "", false
}

// DocComment returns the code blocks of the package doc comment of the Go
// file at path (file is its name in the results).
func DocComment(file, path string) ([]Snippet, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		return nil, err
	}
	if f.Doc == nil {
		return nil, nil
	}
	var out []Snippet
	// A code block's lines are found in the comment's own lines, so each
	// snippet knows where it is.
	lines := commentLines(fset, f.Doc)
	var p comment.Parser
	for _, b := range p.Parse(f.Doc.Text()).Content {
		code, ok := b.(*comment.Code)
		if !ok {
			continue
		}
		first := strings.SplitN(code.Text, "\n", 2)[0]
		line := 0
		for _, l := range lines {
			if strings.TrimSpace(l.text) == strings.TrimSpace(first) {
				line = l.n
				break
			}
		}
		out = append(out, Snippet{File: file, Line: line, Code: code.Text})
	}
	return out, nil
}

type numbered struct {
	n    int
	text string
}

func commentLines(fset *token.FileSet, g *ast.CommentGroup) []numbered {
	var out []numbered
	for _, c := range g.List {
		out = append(out, numbered{fset.Position(c.Pos()).Line, strings.TrimPrefix(c.Text, "//")})
	}
	return out
}

// Files returns the documentation files under root whose Go code is
// checked: every Markdown file but those in testdata, vendor, node_modules
// and hidden folders, and the root's doc.go.
func Files(root string) (markdown []string, goDoc []string, err error) {
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, _ := filepath.Rel(root, path)
			markdown = append(markdown, filepath.ToSlash(rel))
		}
		return nil
	})
	if _, statErr := os.Stat(filepath.Join(root, "doc.go")); statErr == nil {
		goDoc = append(goDoc, "doc.go")
	}
	return markdown, goDoc, err
}

// literalRE finds a composite literal of the core's configuration types
// written inline: in a Markdown code span, or alone on a line of a Go
// comment.
var literalRE = regexp.MustCompile("(?:`|^\\s*//\\s+)((?:toolguard\\.|store\\.)?(?:Policy|Quota|ToolPolicy|SharedQuota|Breaker)\\{[^`]*\\})(?:`|\\s*$)")

// Literals returns the composite literals of the core's configuration
// types that a text writes inline (`Policy{SessionLimit: 30}` or
// `store.Breaker{Cooldown: -1}` in Markdown, or a comment line of Go), each
// made into a Go file that declares it: a literal that does not compile as
// written fails the tests. SharedQuota and Breaker are the store
// package's; the other types the core's.
func Literals(file string, text []byte) []Snippet {
	var out []Snippet
	for n, line := range strings.Split(string(text), "\n") {
		for _, m := range literalRE.FindAllStringSubmatch(line, -1) {
			lit := m[1]
			switch {
			case strings.HasPrefix(lit, "toolguard."), strings.HasPrefix(lit, "store."):
			case strings.HasPrefix(lit, "SharedQuota{"), strings.HasPrefix(lit, "Breaker{"):
				lit = "store." + lit
			default:
				lit = "toolguard." + lit
			}
			var imports []string
			if strings.Contains(lit, "toolguard.") {
				imports = append(imports, `"github.com/toolguard/toolguard"`)
			}
			if strings.Contains(lit, "store.") {
				imports = append(imports, `"github.com/toolguard/toolguard/store"`)
			}
			// One line, so that an error's position is the literal's.
			code := "package main; import " + strings.Join(imports, "; import ") + "; var _ = " + lit + "; func main() {}\n"
			out = append(out, Snippet{File: file, Line: n + 1, Code: code})
		}
	}
	return out
}
