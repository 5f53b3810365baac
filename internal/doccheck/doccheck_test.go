package doccheck

import (
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"go/version"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const rootPath = "github.com/toolguard/toolguard"

// docPreamble is what a doc.go fragment may use without declaring it: the
// call the harness is about to run, its context, and the function that runs
// it (the executor given to Tracker.Run).
const docPreamble = `
var (
	call toolguard.Call
	ctx  = context.Background()
)

func run(context.Context, toolguard.Call) (string, error) { return "", nil }
`

// fragmentImports are the packages a doc.go fragment may name; each is
// imported when the fragment mentions it.
var fragmentImports = map[string]string{
	"toolguard": rootPath,
	"context":   "context",
	"errors":    "errors",
	"fmt":       "fmt",
	"json":      "encoding/json",
	"slog":      "log/slog",
	"time":      "time",
}

// runTimeout bounds each program run: the core's programs finish in
// milliseconds.
const runTimeout = 20 * time.Second

func TestMarkdownBlocks(t *testing.T) {
	text := "# T\n\n```go\npackage main\n```\n\n```\nnot go\n```\n\n````go\npackage p\n\nvar x = 1\n````\n~~~go\npackage q\n~~~\n"
	got := Markdown("x.md", []byte(text))
	require.Equal(t, []Snippet{
		{File: "x.md", Line: 4, Code: "package main\n"},
		{File: "x.md", Line: 12, Code: "package p\n\nvar x = 1\n"},
		{File: "x.md", Line: 17, Code: "package q\n"},
	}, got)
}

func TestDocCommentBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.go")
	src := "// Package p is an example.\n//\n//\tx := 1\n//\t_ = x\n//\n// More text.\npackage p\n"
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	got, err := DocComment("doc.go", path)
	require.NoError(t, err)
	require.Equal(t, []Snippet{{File: "doc.go", Line: 3, Code: "x := 1\n_ = x\n"}}, got)
}

// module is one module of the repository.
type module struct {
	dir, path, goLine string
	requires          map[string]string // in-repository module path → version
}

var requireLine = regexp.MustCompile(`^\s*(?:require\s+)?(` + regexp.QuoteMeta(rootPath) + `(?:/\S+)?)\s+(v\S+)`)

// modules reads every go.mod of the repository.
func modules(t *testing.T, root string) map[string]*module {
	t.Helper()
	mods := map[string]*module{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		m := &module{dir: filepath.Dir(path), requires: map[string]string{}}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 2 && f[0] == "module":
				m.path = f[1]
			case len(f) == 2 && f[0] == "go":
				m.goLine = f[1]
			default:
				if s := requireLine.FindStringSubmatch(line); s != nil && !strings.Contains(line, "=>") {
					m.requires[s[1]] = s[2]
				}
			}
		}
		mods[m.path] = m
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, mods, rootPath)
	return mods
}

// repository returns the repository's root, absolute, and its modules,
// with absolute folders.
func repository(t *testing.T) (string, map[string]*module) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	return root, modules(t, root)
}

// owner returns the module of the repository that holds the package, or
// nil for a package from elsewhere.
func owner(mods map[string]*module, pkg string) *module {
	var best *module
	for p, m := range mods {
		if (pkg == p || strings.HasPrefix(pkg, p+"/")) && (best == nil || len(p) > len(best.path)) {
			best = m
		}
	}
	return best
}

// snippet is a Snippet made into a Go file, with what it needs.
type snippet struct {
	Snippet
	src     string
	isMain  bool
	runs    bool               // a program that needs only the standard library and the core
	modules map[string]*module // the repository's modules it needs, transitively
}

func prepare(t *testing.T, root string, mods map[string]*module, s Snippet, fragment bool) (*snippet, error) {
	t.Helper()
	var src string
	abs := filepath.Join(root, filepath.FromSlash(s.File))
	if fragment {
		var imports []string
		for name, path := range fragmentImports {
			if regexp.MustCompile(`\b` + name + `\.`).MatchString(s.Code) {
				imports = append(imports, strconv.Quote(path))
			}
		}
		for _, path := range []string{rootPath, "context"} { // the preamble's
			if !strings.Contains(strings.Join(imports, " "), strconv.Quote(path)) {
				imports = append(imports, strconv.Quote(path))
			}
		}
		sort.Strings(imports)
		src = "package main\n\nimport (\n\t" + strings.Join(imports, "\n\t") + "\n)\n" + docPreamble +
			"\nfunc main() {\n" + fmt.Sprintf("//line %s:%d\n", abs, s.Line) + s.Code + "}\n"
	} else {
		src = fmt.Sprintf("//line %s:%d\n", abs, s.Line) + s.Code
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.ImportsOnly)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: not a complete Go file (package clause and imports): %v",
			s.File, s.Line, strings.ReplaceAll(err.Error(), root+string(filepath.Separator), ""))
	}
	out := &snippet{Snippet: s, src: src, isMain: f.Name.Name == "main", modules: map[string]*module{}}
	out.runs = out.isMain && !fragment
	var queue []*module
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		m := owner(mods, p)
		if m == nil {
			if first := strings.SplitN(p, "/", 2)[0]; strings.Contains(first, ".") {
				out.runs = false // a third-party package: compile only
			}
			continue
		}
		if m.path != rootPath || strings.Contains(p, "/internal") {
			out.runs = false
		}
		queue = append(queue, m)
	}
	queue = append(queue, mods[rootPath])
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		if out.modules[m.path] != nil {
			continue
		}
		out.modules[m.path] = m
		for p := range m.requires {
			if r := mods[p]; r != nil {
				queue = append(queue, r)
			}
		}
	}
	return out, nil
}

// workFile is a go.work for a folder of snippets that need the modules:
// the repository's modules as they are in the tree.
func workFile(mods map[string]*module) string {
	goLine := "1.24"
	var uses, replaces []string
	for _, m := range mods {
		if version.Compare("go"+m.goLine, "go"+goLine) > 0 {
			goLine = m.goLine
		}
		uses = append(uses, "\t"+m.dir)
		for p, v := range m.requires {
			if r := mods[p]; r != nil {
				replaces = append(replaces, fmt.Sprintf("\t%s %s => %s", p, v, r.dir))
			}
		}
	}
	sort.Strings(uses)
	sort.Strings(replaces)
	replaces = dedupe(replaces)
	w := "go " + goLine + "\n\nuse (\n\t.\n" + strings.Join(uses, "\n") + "\n)\n"
	if len(replaces) > 0 {
		w += "\nreplace (\n" + strings.Join(replaces, "\n") + "\n)\n"
	}
	return w
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func goCmd(ctx context.Context, dir, work string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	// -trimpath: a compiled dependency's cache key is its module@version,
	// so the builds of .ci/run's go vet and release check serve here too.
	cmd.Env = append(os.Environ(), "GOWORK="+work, "GOFLAGS=-buildvcs=false -trimpath")
	return cmd
}

// TestSnippets compiles every snippet of the documentation, and runs each
// program that needs only the standard library and the core. With -short
// it checks the snippets that need the core alone; those of the other
// modules, which compile their frameworks' SDKs, are skipped.
func TestSnippets(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	root, mods := repository(t)

	markdown, goDocs, err := Files(root)
	require.NoError(t, err)
	var all []*snippet
	for _, name := range markdown {
		data, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		if name == "CHANGELOG.md" {
			data = unreleased(data)
		}
		for _, s := range Markdown(name, data) {
			p, err := prepare(t, root, mods, s, false)
			if err != nil {
				t.Error(err)
				continue
			}
			all = append(all, p)
		}
		all = append(all, literals(t, root, mods, name, data)...)
	}
	// The inline literals of the core's comments.
	goFiles, err := filepath.Glob(filepath.Join(root, "*.go"))
	require.NoError(t, err)
	for _, path := range goFiles {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		all = append(all, literals(t, root, mods, filepath.Base(path), data)...)
	}
	for _, name := range goDocs {
		snips, err := DocComment(name, filepath.Join(root, name))
		require.NoError(t, err)
		for _, s := range snips {
			p, err := prepare(t, root, mods, s, true)
			require.NoError(t, err)
			all = append(all, p)
		}
	}
	require.NotEmpty(t, all)
	t.Logf("%d snippets in %d Markdown files and %d doc comments", len(all), len(markdown), len(goDocs))

	// Snippets that need the same modules are built together, in a
	// workspace of those modules only (so a module that cannot share a
	// workspace with the others is still checked).
	groups := map[string][]*snippet{}
	for _, s := range all {
		var keys []string
		for p := range s.modules {
			keys = append(keys, p)
		}
		sort.Strings(keys)
		k := strings.Join(keys, " ")
		groups[k] = append(groups[k], s)
	}
	var keys []string
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		group := groups[k]
		name := strings.TrimSpace(strings.TrimPrefix(strings.ReplaceAll(k, rootPath+"/", ""), rootPath))
		if name == "" {
			name = "core"
		}
		t.Run(strings.ReplaceAll(name, " ", "+"), func(t *testing.T) {
			if testing.Short() && k != rootPath {
				t.Skip("-short: these snippets compile the SDKs of " + name)
			}
			build(t, root, group)
		})
	}
}

// unreleased blanks the released sections of a changelog, keeping its line
// numbers: they are history, written against the API of their release.
func unreleased(text []byte) []byte {
	lines := strings.Split(string(text), "\n")
	seen := false
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") {
			if seen && !strings.Contains(l, "Unreleased") {
				for j := i; j < len(lines); j++ {
					lines[j] = ""
				}
				break
			}
			seen = true
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// literals prepares the inline literals of a file: compiled, not run.
func literals(t *testing.T, root string, mods map[string]*module, name string, data []byte) []*snippet {
	t.Helper()
	var out []*snippet
	for _, s := range Literals(name, data) {
		p, err := prepare(t, root, mods, s, false)
		require.NoError(t, err)
		p.runs = false
		out = append(out, p)
	}
	return out
}

func TestLiterals(t *testing.T) {
	text := "a `Policy{SessionLimit: 30}` and `store.Breaker{Cooldown: -1}` and `SharedQuota{Name: \"q\"}`\n" +
		"//\ttoolguard.Policy{MaxRepeats: 1}\n// not `Policy` nor Policy{} in prose\n"
	var got []string
	for _, s := range Literals("x.md", []byte(text)) {
		got = append(got, fmt.Sprintf("%d %s", s.Line, s.Code))
	}
	require.Equal(t, []string{
		"1 package main; import \"github.com/toolguard/toolguard\"; var _ = toolguard.Policy{SessionLimit: 30}; func main() {}\n",
		"1 package main; import \"github.com/toolguard/toolguard/store\"; var _ = store.Breaker{Cooldown: -1}; func main() {}\n",
		"1 package main; import \"github.com/toolguard/toolguard/store\"; var _ = store.SharedQuota{Name: \"q\"}; func main() {}\n",
		"2 package main; import \"github.com/toolguard/toolguard\"; var _ = toolguard.Policy{MaxRepeats: 1}; func main() {}\n",
	}, got)
}

func build(t *testing.T, root string, group []*snippet) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module doccheck.invalid\n\ngo 1.24\n"), 0o644))
	work := filepath.Join(dir, "go.work")
	require.NoError(t, os.WriteFile(work, []byte(workFile(group[0].modules)), 0o644))
	var names []string
	for i, s := range group {
		name := fmt.Sprintf("s%02d", i)
		names = append(names, name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, "snippet.go"), []byte(s.src), 0o644))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := goCmd(ctx, dir, work, "vet", "./...").CombinedOutput()
	if err != nil {
		var where []string
		for _, s := range group {
			where = append(where, fmt.Sprintf("%s:%d", s.File, s.Line))
		}
		t.Fatalf("the snippets at %s do not compile or vet as pasted:\n%s", strings.Join(where, ", "),
			strings.ReplaceAll(string(out), root+string(filepath.Separator), ""))
	}
	for i, s := range group {
		if !s.runs {
			continue
		}
		bin := filepath.Join(dir, "bin", names[i])
		out, err := goCmd(ctx, dir, work, "build", "-o", bin, "./"+names[i]).CombinedOutput()
		require.NoError(t, err, "%s", out)
		rctx, rcancel := context.WithTimeout(ctx, runTimeout)
		cmd := exec.CommandContext(rctx, bin)
		cmd.Dir = dir
		out, err = cmd.CombinedOutput()
		rcancel()
		if err != nil {
			t.Errorf("%s:%d: the program fails when run (%v):\n%s", s.File, s.Line, err, out)
		}
	}
}

// goVersionStatements are the sentences of the documentation that state
// which Go a module needs, each with the modules' go lines it must give.
var goVersionStatements = []struct {
	re   *regexp.Regexp
	want func(root string, mods map[string]*module, file string) []string
}{
	// "Go 1.26 or later": the go line of the module the file belongs to.
	{regexp.MustCompile(`Go (1\.\d+(?:\.\d+)?) or (?:later|newer)`), func(root string, mods map[string]*module, file string) []string {
		return []string{fileModule(root, mods, file).goLine}
	}},
	// "(from Go 1.24 to 1.26.0 today": the lowest and highest go line of
	// the nested modules (the integrations).
	{regexp.MustCompile(`from Go (1\.\d+(?:\.\d+)?) to (1\.\d+(?:\.\d+)?) today`), func(_ string, mods map[string]*module, _ string) []string {
		var lines []string
		for p, m := range mods {
			if p != rootPath {
				lines = append(lines, m.goLine)
			}
		}
		return []string{minGo(lines), maxGo(lines)}
	}},
	// "the highest any module needs (Go 1.26.0 today)".
	{regexp.MustCompile(`highest any module needs \(Go (1\.\d+(?:\.\d+)?) today\)`), func(_ string, mods map[string]*module, _ string) []string {
		var lines []string
		for _, m := range mods {
			lines = append(lines, m.goLine)
		}
		return []string{maxGo(lines)}
	}},
	// "the core needs Go 1.24", "the core module alone (Go 1.24,".
	{regexp.MustCompile(`core (?:needs Go|module alone \(Go) (1\.\d+(?:\.\d+)?)`), func(_ string, mods map[string]*module, _ string) []string {
		return []string{mods[rootPath].goLine}
	}},
}

// goMentionsNotMinimums are mentions of a Go version that state no
// module's minimum: the machine a figure was measured on, a dependency's
// own need.
var goMentionsNotMinimums = regexp.MustCompile(`Go 1\.\d+(?:\.\d+)?, Linux|to build with Go 1\.\d+|"Go 1\.\d+ release notes`)

// TestGoVersions checks every statement of the documentation about the Go
// a module needs against the go lines of the modules' go.mod files
// (`bash scripts/release.sh modules` lists them): each mention of a Go
// version in the Markdown files and doc.go is one of goVersionStatements,
// and says what the go.mod files say.
func TestGoVersions(t *testing.T) {
	root, mods := repository(t)
	markdown, goDocs, err := Files(root)
	require.NoError(t, err)
	mention := regexp.MustCompile(`Go 1\.\d+(?:\.\d+)?`)
	checked := 0
	for _, name := range append(markdown, goDocs...) {
		if name == "CHANGELOG.md" { // history: what was true then
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		text := strings.Join(strings.Fields(string(data)), " ") // sentences broken over lines
		text = strings.ReplaceAll(text, "// ", "")              // doc.go's comment markers
		covered := map[int]bool{}
		for _, s := range goVersionStatements {
			for _, m := range s.re.FindAllStringSubmatchIndex(text, -1) {
				want := s.want(root, mods, name)
				for i := range want {
					got := text[m[2+2*i]:m[3+2*i]]
					if normGo(got) != normGo(want[i]) {
						t.Errorf("%s: %q says Go %s, the go.mod files say %s", name, text[m[0]:m[1]], got, want[i])
					}
				}
				for _, v := range mention.FindAllStringIndex(text[m[0]:m[1]], -1) {
					covered[m[0]+v[0]] = true
				}
				// "from Go 1.24 to 1.26.0": the second version has no "Go".
				covered[m[0]] = true
				checked++
			}
		}
		for _, m := range goMentionsNotMinimums.FindAllStringIndex(text, -1) {
			for _, v := range mention.FindAllStringIndex(text[m[0]:m[1]], -1) {
				covered[m[0]+v[0]] = true
			}
		}
		for _, v := range mention.FindAllStringIndex(text, -1) {
			if !covered[v[0]] {
				from := max(v[0]-60, 0)
				t.Errorf("%s: %q: a Go version this test does not check (add its statement to goVersionStatements)",
					name, text[from:min(v[1]+30, len(text))])
			}
		}
	}
	t.Logf("%d statements of a Go version checked", checked)
	require.Positive(t, checked)
}

// fileModule returns the module whose folder holds the file.
func fileModule(root string, mods map[string]*module, file string) *module {
	abs := filepath.Join(root, filepath.FromSlash(file))
	var best *module
	for _, m := range mods {
		if strings.HasPrefix(abs, m.dir+string(filepath.Separator)) && (best == nil || len(m.dir) > len(best.dir)) {
			best = m
		}
	}
	return best
}

// normGo writes a go line with three numbers: 1.24 is 1.24.0.
func normGo(v string) string {
	if strings.Count(v, ".") == 1 {
		return v + ".0"
	}
	return v
}

func minGo(lines []string) string {
	m := lines[0]
	for _, l := range lines {
		if version.Compare("go"+normGo(l), "go"+normGo(m)) < 0 {
			m = l
		}
	}
	return m
}

func maxGo(lines []string) string {
	m := lines[0]
	for _, l := range lines {
		if version.Compare("go"+normGo(l), "go"+normGo(m)) > 0 {
			m = l
		}
	}
	return m
}
