package render

import (
	"cmp"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/writewatch/writewatch/internal/nameshape"
	"github.com/writewatch/writewatch/report"
)

// collapseMin is the fewest violations of one kind, by the tests of one
// package, under one directory, that the text summary shows as one line,
// when it lists more than collapseOver: a summary of that many or fewer
// shows each.
const (
	collapseMin  = 3
	collapseOver = 10
)

// collapseKey is what the violations shown as one line share: their
// severity and operation, the package (Go) or test directory (pytest)
// of the tests that made them, the directory they are in and the shape
// of their names (nameshape.Shape): unrelated files of one directory
// stay apart.
type collapseKey struct {
	severity, op, role, suite, dir, shape string
	baselined                             bool
}

// item is one entry of the text summary: a violation, or a group of
// violations collapsed into one line.
type item struct {
	v     *report.Violation   // one violation, or nil
	group []*report.Violation // several, sorted by path
}

// suiteOf is what groups the tests of v: the Go package, the directory
// of a pytest test file, or the runner.
func suiteOf(v *report.Violation) string {
	switch {
	case v.Runner == report.RunnerGo:
		return "go\x00" + v.Package
	case v.Package != "":
		return v.Runner + "\x00" + filepath.Dir(v.Package)
	}
	return v.Runner
}

// collapse turns the violations into the items of the text summary, in
// the order of their first violation: past collapseOver, groups of
// collapseMin or more violations of one kind, by the tests of one
// package, under one directory, of one name shape, become one item.
// Truncated paths and the empty path stay on their own.
func collapse(vs []report.Violation) []item {
	if len(vs) <= collapseOver {
		out := make([]item, len(vs))
		for i := range vs {
			out[i] = item{v: &vs[i]}
		}
		return out
	}
	groups := map[collapseKey][]*report.Violation{}
	for i := range vs {
		v := &vs[i]
		if k, ok := keyOf(v); ok {
			groups[k] = append(groups[k], v)
		}
	}
	var out []item
	done := map[collapseKey]bool{}
	for i := range vs {
		v := &vs[i]
		k, ok := keyOf(v)
		if !ok || len(groups[k]) < collapseMin {
			out = append(out, item{v: v})
			continue
		}
		if done[k] {
			continue
		}
		done[k] = true
		g := groups[k]
		slices.SortStableFunc(g, func(a, b *report.Violation) int { return cmp.Compare(a.Path, b.Path) })
		out = append(out, item{group: g})
	}
	return out
}

func keyOf(v *report.Violation) (collapseKey, bool) {
	if v.Truncated || v.Path == "" || v.DeniedBy != "" {
		return collapseKey{}, false
	}
	return collapseKey{severityLabel(v), v.Op, v.Role, suiteOf(v), filepath.Dir(v.Path), nameshape.Shape(filepath.Base(v.Path)), v.Baselined}, true
}

// nameGlob is a pattern covering every name: their common prefix and
// suffix around a '*', or the one name when all are the same.
func nameGlob(names []string) string {
	prefix, suffix, one := nameshape.NameParts(names)
	if one {
		return prefix
	}
	return joinGlob(nameshape.NumberGlob(prefix, nil), nameshape.NumberGlob(suffix, nil))
}

// joinGlob puts a '*' between prefix and suffix, once.
func joinGlob(prefix, suffix string) string {
	return strings.TrimSuffix(prefix, "*") + "*" + strings.TrimPrefix(suffix, "*")
}

// suiteTitle names the tests of g's suite as their user knows them: a
// Go package; for pytest, the test file when they share one, else how
// many files of which directory ("3 files in tests/"). strip is what
// their ids start with that the title says, to leave out of examples.
func suiteTitle(g []*report.Violation) (title string, strip string) {
	first := g[0]
	if first.Runner == report.RunnerGo {
		return first.Package, ""
	}
	var files []string
	for _, v := range g {
		if !slices.Contains(files, v.Package) {
			files = append(files, v.Package)
		}
	}
	if len(files) == 1 {
		return first.Package, first.Package + "::"
	}
	return filesIn(len(files), filepath.Dir(first.Package))
}

// filesIn names n test files of directory dir ("3 files in tests/"), and
// returns the prefix their paths start with.
func filesIn(n int, dir string) (title, strip string) {
	if dir == "." {
		return strconv.Itoa(n) + " files in the top directory", ""
	}
	return strconv.Itoa(n) + " files in " + dir + "/", dir + "/"
}

// collapsedLine renders a group as one line: the pattern of its paths,
// what was done, how many paths and events, two examples of each, and
// the tests that made them.
//
//	/src/out/chart_*.xlsx: [transient] open O_WRONLY|O_CREAT|O_TRUNC ×1160, 1158 files (e.g. chart_a.xlsx, chart_b.xlsx), by 1158 tests of tests/comparison (e.g. …)
func (t *textWriter) collapsedLine(g []*report.Violation) string {
	names := namesOf(g)
	first := g[0]
	s := t.paint(ansiBold, groupPath(g)) + ": "
	if first.Severity != "" {
		s += "[" + t.violationTag(first) + "] "
	}
	s += t.paint(ansiRed, displayText(first.Op))
	if first.Flags != "" && sameFlags(g) {
		s += " " + displayText(first.Flags)
	}
	if role := roleText(first); role != "" {
		s += " (" + role + ")"
	}
	n, failed := events(g), failedCount(g)
	if failed >= n {
		s += " (failed)"
	}
	if first.Baselined {
		s += " (in the baseline)"
	}
	s += " ×" + strconv.Itoa(n)
	if failed > 0 && failed < n {
		s += " (" + strconv.Itoa(failed) + " failed)"
	}
	s += ", " + plural(len(names), "path", "paths") + " (e.g. " + examples(names, displayPath) + ")"
	if tests := testsText(g); tests != "" {
		s += ", by " + tests
	} else if attributed(first) {
		s += ", in " + whoText(first)
	}
	return s
}

// testsText names the tests that made g's violations: "14 tests of 3
// files in tests/ (e.g. test_a.py::test_x, test_b.py::test_y)", or ""
// when no test did.
func testsText(g []*report.Violation) string {
	tests := testsOf(g)
	if len(tests) == 0 {
		return ""
	}
	s := plural(len(tests), "test", "tests")
	short := displayText
	if g[0].Package != "" {
		title, strip := suiteTitle(g)
		// Test ids without the file or directory just named.
		short = func(id string) string { return displayText(strings.TrimPrefix(id, strip)) }
		s += " of " + displayText(title)
	}
	return s + " (e.g. " + examples(tests, short) + ")"
}

// namesOf lists the names of g's paths, each once, in order.
func namesOf(g []*report.Violation) []string {
	var names []string
	for _, v := range g {
		if base := filepath.Base(v.Path); !slices.Contains(names, base) {
			names = append(names, base)
		}
	}
	return names
}

// groupPath is the pattern of g's paths, as shown: "/src/chart*.xlsx".
func groupPath(g []*report.Violation) string {
	return displayPath(filepath.Join(filepath.Dir(g[0].Path), nameGlob(namesOf(g))))
}

// events counts the occurrences of g's violations.
func events(g []*report.Violation) int {
	n := 0
	for _, v := range g {
		n += max(v.Count, 1)
	}
	return n
}

// failedCount counts the calls of g's violations that failed.
func failedCount(g []*report.Violation) int {
	n := 0
	for _, v := range g {
		n += v.FailedCalls()
	}
	return n
}

func sameFlags(g []*report.Violation) bool {
	for _, v := range g {
		if v.Flags != g[0].Flags {
			return false
		}
	}
	return true
}

// testsOf lists the tests that made the violations, each once, in order.
func testsOf(g []*report.Violation) []string {
	var tests []string
	seen := map[string]bool{}
	for _, v := range g {
		if v.Test != "" && !seen[v.Test] {
			seen[v.Test] = true
			tests = append(tests, v.Test)
		}
	}
	return tests
}

// examples renders the first two of items.
func examples(items []string, show func(string) string) string {
	out := make([]string, 0, 2)
	for _, s := range items[:min(2, len(items))] {
		out = append(out, show(s))
	}
	return strings.Join(out, ", ")
}
