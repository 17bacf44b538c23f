package layout

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fzipp/gocyclo"
)

// root is the module's root directory.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", dir, err)
	}
	return dir
}

// goFiles calls fn with each hand-written Go file under dir: generated
// files (bpf2go's bindings) are left out, test data included.
func goFiles(t *testing.T, dir string, fn func(path string, src []byte)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(src, []byte("\n// Code generated ")) && !bytes.HasPrefix(src, []byte("// Code generated ")) {
			fn(path, src)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// maxFuncLines bounds a function, from its signature to its closing
// brace: a longer one is to be split into named steps.
const maxFuncLines = 100

func TestNoLongFunctions(t *testing.T) {
	dir := root(t)
	fset := token.NewFileSet()
	n := 0
	goFiles(t, dir, func(path string, src []byte) {
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Error(err)
			return
		}
		ast.Inspect(f, func(node ast.Node) bool {
			var name string
			switch fn := node.(type) {
			case *ast.FuncDecl:
				name = fn.Name.Name
			case *ast.FuncLit:
				name = "a function literal"
			default:
				return true
			}
			n++
			start, end := fset.Position(node.Pos()), fset.Position(node.End())
			if lines := end.Line - start.Line + 1; lines > maxFuncLines {
				rel, _ := filepath.Rel(dir, path)
				t.Errorf("%s:%d: %s is %d lines long, more than %d", rel, start.Line, name, lines, maxFuncLines)
			}
			return true
		})
	})
	if n < 500 {
		t.Errorf("only %d functions found under %s", n, dir)
	}
}

// maxRunLines bounds package run, which holds a run's lifecycle only:
// what it judges, counts or glues to a test runner lives elsewhere.
const maxRunLines = 800

func TestRunStaysSmall(t *testing.T) {
	lines := 0
	goFiles(t, filepath.Join(root(t), "internal", "run"), func(path string, src []byte) {
		if !strings.HasSuffix(path, "_test.go") {
			lines += bytes.Count(src, []byte("\n"))
		}
	})
	if lines == 0 || lines >= maxRunLines {
		t.Errorf("internal/run has %d lines of code outside its tests, want fewer than %d", lines, maxRunLines)
	}
}

// maxComplexity bounds a function's cyclomatic complexity as gocyclo
// counts it: one, plus one for each if, for, range, case (not default),
// && and ||; a function literal counts in the function it is written in.
// A function over it is to be split into named steps, as a long one is.
//
// Test files are left out: a test's count is mostly its checks, an if
// for each step that can fail and an || for each field it compares,
// which add no path a reader must follow. The tests over the cap when it
// came were such sequences of checks, or a switch of one case per
// operation, which helpers would only scatter; the line cap above still
// bounds them. Test data (the programs under testdata the tests run) is
// counted. gocyclo's ignore directive has no effect here (the files are
// parsed without their comments): overComplexity is the one exception.
const maxComplexity = 20

// overComplexity names the functions, as package.function, let over
// maxComplexity for now; an entry that is no longer over it fails the
// test, so that the list only shrinks.
var overComplexity = []string{}

func TestNoComplexFunctions(t *testing.T) {
	dir := root(t)
	fset := token.NewFileSet()
	var stats gocyclo.Stats
	goFiles(t, dir, func(path string, src []byte) {
		if strings.HasSuffix(path, "_test.go") {
			return
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Error(err)
			return
		}
		stats = gocyclo.AnalyzeASTFile(f, fset, stats)
	})
	if len(stats) < 500 {
		t.Errorf("only %d functions found under %s", len(stats), dir)
	}
	over := map[string]bool{}
	for _, s := range stats {
		if s.Complexity <= maxComplexity {
			continue
		}
		name := s.PkgName + "." + s.FuncName
		over[name] = true
		if !slices.Contains(overComplexity, name) {
			rel, _ := filepath.Rel(dir, s.Pos.Filename)
			t.Errorf("%s:%d: %s has a cyclomatic complexity of %d, more than %d", rel, s.Pos.Line, name, s.Complexity, maxComplexity)
		}
	}
	for _, name := range overComplexity {
		if !over[name] {
			t.Errorf("%s is no longer over %d (or is gone): take it off overComplexity", name, maxComplexity)
		}
	}
}
