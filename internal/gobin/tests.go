package gobin

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TestFunc is a test function of the package under test: a Test or Fuzz
// function declared in one of its _test.go files.
type TestFunc struct {
	Name string `json:"name"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// ErrNoLineTable means the binary's .gopclntab could not be read.
var ErrNoLineTable = errors.New("the test binary's line table could not be read")

// TestFuncs lists the Test and Fuzz functions of the package under test
// and of its external test package, from the binary's line table, in the
// order go test runs them: the package's own test files first, each
// file's functions in the order they are declared (files by name).
//
// The line table holds every function the binary has, by name and by
// the file that declares it: a top-level function named TestX (or FuzzX,
// X not starting with a lower-case letter) declared in a _test.go file
// is one go test runs, the go command having refused to build any such
// function of the wrong signature. Examples and benchmarks are not
// listed: whether an example runs depends on its output comment, which
// the binary does not keep, and benchmarks run only with -test.bench.
func (lay *Layout) TestFuncs() ([]TestFunc, error) {
	lines := lay.Lines()
	if lines == nil {
		return nil, ErrNoLineTable
	}
	if lay.Package == "" {
		return nil, errors.New("the package under test is not known")
	}
	// The symbols' prefixes: the package's own, then its external test
	// package's ("example.com/app." and "example.com/app_test.").
	names := lay.testFuncNames("X")
	own, external := strings.TrimSuffix(names[0], "X"), strings.TrimSuffix(names[1], "X")
	type found struct {
		TestFunc
		external bool
	}
	var out []found
	for i := range lines.Funcs {
		fn := &lines.Funcs[i]
		name, ext := strings.CutPrefix(fn.Name, external)
		if !ext {
			var ok bool
			if name, ok = strings.CutPrefix(fn.Name, own); !ok {
				continue
			}
		}
		if !isTestFunc(name) {
			continue
		}
		file, line, _ := lines.PCToLine(fn.Entry)
		if !strings.HasSuffix(file, "_test.go") {
			continue
		}
		out = append(out, found{TestFunc{Name: name, File: file, Line: line}, ext})
	}
	slices.SortFunc(out, func(a, b found) int {
		if a.external != b.external {
			if a.external {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	funcs := make([]TestFunc, len(out))
	for i, f := range out {
		funcs[i] = f.TestFunc
	}
	return funcs, nil
}

// isTestFunc reports whether name, a function's name in its package, is
// one go test runs as a test: TestX or FuzzX, a plain identifier (not a
// method, a closure or a generic instance), X empty or not starting with
// a lower-case letter, and not TestMain.
func isTestFunc(name string) bool {
	if name == "TestMain" || strings.ContainsAny(name, ".()[]") {
		return false
	}
	for _, prefix := range []string{"Test", "Fuzz"} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if rest == "" {
			return true
		}
		r, _ := utf8.DecodeRuneInString(rest)
		return !unicode.IsLower(r)
	}
	return false
}
