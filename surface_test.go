package toolguard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxExportedNames bounds the root package's exported package-level names,
// enum values not counted (issue 25: at most 35).
const maxExportedNames = 35

// publicSurface is the root package's exported package-level names, enum
// values not counted (docs/performance.md gives both counts). A name added
// or removed is a change of the public API: update this list, the CHANGELOG
// and docs/performance.md with it.
var publicSurface = []string{
	// types
	"Action", "BudgetError", "BudgetState", "Call", "Decision", "Entry", "Event", "EventKind",
	"Guidance", "Hash", "LoopError", "Outcome", "Phase", "Policy", "Quota", "Reason", "Result",
	"Sessions", "Summary", "ToolPolicy", "ToolSummary", "Tracker", "Verdict",
	// functions
	"NewSessions", "NewTracker", "Preset", "PresetNames", "Redact",
	// errors and constants
	"ErrBudgetExhausted", "ErrInvalidCall", "ErrLoop", "HintMarker",
}

// exportedNames parses the package's non-test files in dir and returns its
// exported package-level names, apart from its enum values: the constants
// whose type is one the package declares (named, or carried over from the
// line above in a const block).
func exportedNames(t *testing.T, dir string) (names, enums []string) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	require.NoError(t, err)
	pkg := pkgs["toolguard"]
	require.NotNil(t, pkg)
	declared := map[string]bool{}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					declared[s.(*ast.TypeSpec).Name.Name] = true
				}
			}
		}
	}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				var typ ast.Expr // the type of the const block's line, carried over
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						if d.Tok == token.CONST && (s.Type != nil || len(s.Values) > 0) {
							typ = s.Type
						}
						id, named := typ.(*ast.Ident)
						enum := d.Tok == token.CONST && named && declared[id.Name]
						for _, n := range s.Names {
							switch {
							case !n.IsExported():
							case enum:
								enums = append(enums, n.Name)
							default:
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	sort.Strings(enums)
	return names, enums
}

// TestPublicSurface pins the root package's exported names: at most 35,
// enum values not counted (the store-facing types live in package store).
func TestPublicSurface(t *testing.T) {
	names, enums := exportedNames(t, ".")
	want := append([]string(nil), publicSurface...)
	sort.Strings(want)
	assert.Equal(t, want, names, "the exported package-level names (enum values apart)")
	assert.LessOrEqual(t, len(names), maxExportedNames)
	t.Logf("%d exported package-level names, %d with the %d enum values", len(names), len(names)+len(enums), len(enums))
}
