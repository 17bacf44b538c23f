package layout

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
