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
// of the tests that made them, and the directory they are in.
type collapseKey struct {
	severity, op, role, suite, dir string
	baselined                      bool
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
// collapseMin or more
// violations of one kind, by the tests of one package, under one
// directory, become one item. Truncated paths and the empty path stay
// on their own.
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
	return collapseKey{v.Severity, v.Op, v.Role, suiteOf(v), filepath.Dir(v.Path), v.Baselined}, true
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

// suiteTitle names the tests of g's suite: a Go package; for pytest, the
// test file when they share one, else their directory.
func suiteTitle(g []*report.Violation) (name string, strip string) {
	first := g[0]
	if first.Runner == report.RunnerGo {
		return first.Package, ""
	}
	for _, v := range g {
		if v.Package != first.Package {
			dir := filepath.Dir(first.Package)
			if dir == "." {
				return "the top directory", ""
			}
			return dir, dir + "/"
		}
	}
	return first.Package, first.Package + "::"
}

// collapsedLine renders a group as one line: the pattern of its paths,
// what was done, how many paths and events, two examples of each, and
// the tests that made them.
//
//	/src/out/chart_*.xlsx: [transient] open O_WRONLY|O_CREAT|O_TRUNC ×1160, 1158 files (e.g. chart_a.xlsx, chart_b.xlsx), by 1158 tests of tests/comparison (e.g. …)
func (t *textWriter) collapsedLine(g []*report.Violation) string {
	var (
		names  []string
		seen   = map[string]bool{}
		events int
	)
	for _, v := range g {
		events += max(v.Count, 1)
		if base := filepath.Base(v.Path); !seen[base] {
			seen[base] = true
			names = append(names, base)
		}
	}
	first := g[0]
	dir := filepath.Dir(first.Path)
	s := t.paint(ansiBold, displayPath(filepath.Join(dir, nameGlob(names)))) + ": "
	if first.Severity != "" {
		s += "[" + t.severityTag(first.Severity) + "] "
	}
	s += t.paint(ansiRed, displayText(first.Op))
	if first.Flags != "" && sameFlags(g) {
		s += " " + displayText(first.Flags)
	}
	if role := roleText(first); role != "" {
		s += " (" + role + ")"
	}
	failed := 0
	for _, v := range g {
		failed += v.FailedCalls()
	}
	if failed >= events {
		s += " (failed)"
	}
	if first.Baselined {
		s += " (in the baseline)"
	}
	s += " ×" + strconv.Itoa(events)
	if failed > 0 && failed < events {
		s += " (" + strconv.Itoa(failed) + " failed)"
	}
	s += ", " + plural(len(names), "path", "paths") + " (e.g. " + examples(names, displayPath) + ")"
	if tests := testsOf(g); len(tests) > 0 {
		s += ", by " + plural(len(tests), "test", "tests")
		short := displayText
		if first.Package != "" {
			pkg, strip := suiteTitle(g)
			// Test ids without the file or directory just named.
			short = func(id string) string { return displayText(strings.TrimPrefix(id, strip)) }
			s += " of " + displayText(pkg)
		}
		s += " (e.g. " + examples(tests, short) + ")"
	} else if attributed(first) {
		s += ", in " + whoText(first)
	}
	return s
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
