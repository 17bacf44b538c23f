package render

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/writewatch/writewatch/internal/nameshape"
	"github.com/writewatch/writewatch/internal/pathwalk"
	"github.com/writewatch/writewatch/report"
)

// maxTestFixes is the most lines of test fixes How to fix shows.
const maxTestFixes = 12

// testFix is the fix one test needs: where the test is, what it wrote,
// and the change to make.
type testFix struct {
	test, pkg, suite, file string
	line                   int
	fix                    string
	paths                  []string
	dir                    string // of the first path
	frame                  string // unittestFrame of the writes
}

// unittestFrame is the method of a unittest.TestCase that made v, when
// the pytest plugin announced one ("setUp", "tearDown"), else "".
func unittestFrame(v *report.Violation) string {
	if v.Runner == report.RunnerPytest && (v.Phase == "setUp" || v.Phase == "tearDown") {
		return v.Phase
	}
	return ""
}

// fixFor is the change that keeps v's test from writing where it did:
// $HOME pointed at a temporary directory for a write under the home
// directory (outside the project), the working directory moved into one
// for a relative path, a temporary directory otherwise. A unittest-style
// test (unittest says whether v's test is one), which pytest's fixtures
// do not reach, makes its temporary directory in setUp.
func fixFor(r *report.Report, v *report.Violation, unittest bool) string {
	project := configDir(r)
	home := r.Home != "" && pathwalk.Within(v.Path, r.Home) &&
		(project == "" || !pathwalk.Within(v.Path, project))
	relative := v.RequestedPath != "" && !strings.HasPrefix(v.RequestedPath, "/")
	switch v.Runner {
	case report.RunnerGo:
		switch {
		case home:
			return `t.Setenv("HOME", t.TempDir())`
		case relative:
			return "t.Chdir(t.TempDir()), or a path under t.TempDir()"
		}
		return "write under t.TempDir()"
	case report.RunnerPytest:
		switch {
		case unittest && home:
			return "point HOME at a tempfile.mkdtemp() made in setUp (unittest.mock.patch.dict(os.environ, ...))"
		case unittest && relative:
			return "os.chdir into a tempfile.mkdtemp() made in setUp, or a path under it"
		case unittest:
			return "write under a tempfile.mkdtemp() made in setUp"
		case home:
			return `monkeypatch.setenv("HOME", str(tmp_path))`
		case relative:
			return "monkeypatch.chdir(tmp_path), or a path under tmp_path"
		}
		return "write under tmp_path"
	}
	if home {
		return "point HOME at a temporary directory"
	}
	return "write under a temporary directory"
}

// testFixes lists, per test that wrote, where it is and what to change,
// worst severity first; many tests of one package or test directory with
// the same fix for writes under one directory are one line.
func testFixes(r *report.Report) []string {
	fixes := perTestFixes(r)
	// Collapse: the tests of one suite with one fix for names of one
	// shape in one directory.
	type groupKey struct{ suite, fix, dir, shape, frame string }
	keyOf := func(f *testFix) groupKey {
		return groupKey{f.suite, f.fix, f.dir, nameshape.Shape(filepath.Base(f.paths[0])), f.frame}
	}
	groups := map[groupKey][]*testFix{}
	for _, f := range fixes {
		k := keyOf(f)
		groups[k] = append(groups[k], f)
	}
	var lines []string
	done := map[groupKey]bool{}
	for _, f := range fixes {
		k := keyOf(f)
		g := groups[k]
		switch {
		case done[k]:
			continue
		case len(g) < collapseMin || len(fixes) <= collapseOver:
			lines = append(lines, fixLine(r, f))
			continue
		}
		done[k] = true
		lines = append(lines, fixGroupLine(r, g))
	}
	if len(lines) > maxTestFixes {
		more := len(lines) - (maxTestFixes - 1)
		lines = append(lines[:maxTestFixes-1], fmt.Sprintf("… and %d more (the JSON report names every test)", more))
	}
	return lines
}

// perTestFixes gathers the fixes of each test, in the order of their
// first write: one for each change to make in each of its frames (the
// test, or its unittest setUp or tearDown). A path one of them lists
// already adds nothing (setUp's file, removed by tearDown).
func perTestFixes(r *report.Report) []*testFix {
	var (
		fixes    []*testFix
		byKey    = map[string]*testFix{}
		byTest   = map[string][]*testFix{}
		unittest = map[string]bool{} // tests with a write in a unittest frame
	)
	ok := func(v *report.Violation) bool {
		return v.Test != "" && v.DeniedBy == "" && v.Fails() && !systemPath(r, v)
	}
	testKey := func(v *report.Violation) string { return v.Runner + "\x00" + v.Package + "\x00" + v.Test }
	for i := range r.Violations {
		if v := &r.Violations[i]; ok(v) && unittestFrame(v) != "" {
			unittest[testKey(v)] = true
		}
	}
	for i := range r.Violations {
		v := &r.Violations[i]
		if !ok(v) || slices.ContainsFunc(byTest[testKey(v)], func(f *testFix) bool { return slices.Contains(f.paths, v.Path) }) {
			continue
		}
		fix, frame := fixFor(r, v, unittest[testKey(v)]), unittestFrame(v)
		k := testKey(v) + "\x00" + fix + "\x00" + frame
		f := byKey[k]
		if f == nil {
			f = &testFix{test: v.Test, pkg: v.Package, suite: suiteOf(v), file: v.TestFile, line: v.TestLine, fix: fix, dir: filepath.Dir(v.Path), frame: frame}
			byKey[k] = f
			byTest[testKey(v)] = append(byTest[testKey(v)], f)
			fixes = append(fixes, f)
		}
		f.paths = append(f.paths, v.Path)
	}
	return fixes
}

// fixGroupLine renders the fix of many tests of one suite, for writes
// of one directory: "tests/ (3 files): 14 tests write out*.csv (e.g.
// test_a.py:1, test_b.py:2): monkeypatch.chdir(tmp_path)".
func fixGroupLine(r *report.Report, g []*testFix) string {
	title, strip := fixSuiteTitle(g)
	var names, places []string
	for _, f := range g {
		names = append(names, filepath.Base(f.paths[0]))
		w := where(r, f)
		if f.file != "" { // the location alone, within the suite's directory
			w, _, _ = strings.Cut(w, ": ")
			w = strings.TrimPrefix(w, strip)
		}
		if !slices.Contains(places, w) {
			places = append(places, w)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	what := shown(r, filepath.Join(g[0].dir, nameGlob(names)))
	if g[0].frame != "" {
		what += " in " + g[0].frame
	}
	return fmt.Sprintf("%s: %d tests write %s (e.g. %s): %s",
		displayText(title), len(g), what, examples(places, func(s string) string { return s }), g[0].fix)
}

// fixSuiteTitle names the suite of g's tests: a Go package, a test file,
// or a directory with how many test files ("tests/ (3 files)"); strip is
// what a location in it starts with that the title says.
func fixSuiteTitle(g []*testFix) (title, strip string) {
	pkg := g[0].suite[strings.IndexByte(g[0].suite, 0)+1:] // without the runner
	if strings.HasPrefix(g[0].suite, report.RunnerGo+"\x00") {
		return pkg, pkg + "/"
	}
	var files []string
	for _, f := range g {
		if !slices.Contains(files, f.pkg) {
			files = append(files, f.pkg)
		}
	}
	switch {
	case len(files) == 1 && files[0] != "":
		return files[0], pkg + "/"
	case pkg == ".":
		return "the top directory (" + plural(len(files), "file", "files") + ")", ""
	}
	return pkg + "/ (" + plural(len(files), "file", "files") + ")", pkg + "/"
}

// fixLine renders one test's fix: "app_test.go:12: TestSave writes
// ~/.config/app/config.toml: t.Setenv(...)".
func fixLine(r *report.Report, f *testFix) string {
	paths := make([]string, 0, 2)
	for _, p := range f.paths[:min(2, len(f.paths))] {
		paths = append(paths, shown(r, p))
	}
	what := strings.Join(paths, ", ")
	if n := len(f.paths) - len(paths); n > 0 {
		what += " and " + plural(n, "more", "more")
	}
	return where(r, f) + " writes " + what + ": " + f.fix
}

// where names a test by its source location and id (a pytest id without
// its file, which the location names); a unittest frame by its name and
// class, and the test it ran for: "base.py:8: setUp of TestReport (for
// test_one)".
func where(r *report.Report, f *testFix) string {
	id := displayText(f.test)
	if f.pkg != "" {
		id = displayText(strings.TrimPrefix(f.test, f.pkg+"::"))
	}
	if f.frame != "" {
		if class, method, ok := cutLast(id, "::"); ok {
			id = f.frame + " of " + class + " (for " + method + ")"
		} else {
			id = f.frame + " (for " + id + ")"
		}
	}
	switch {
	case f.file == "" && f.frame == "":
		return displayText(f.test)
	case f.file == "" && f.pkg != "":
		return displayText(f.pkg) + ": " + id
	case f.file == "":
		return id
	}
	file := f.file
	if rel, ok := relUnder(file, r.WorkDir); ok {
		file = rel
	}
	loc := displayPath(file)
	if f.line > 0 {
		loc += ":" + strconv.Itoa(f.line)
	}
	return loc + ": " + id
}

// shown is a path as How to fix shows it: "~/" for the home directory,
// relative to the work directory when under it.
func shown(r *report.Report, p string) string {
	if rel, ok := relUnder(p, r.WorkDir); ok {
		return displayPath(rel)
	}
	if rel, ok := relUnder(p, r.Home); ok && rel != "." {
		return "~/" + displayPath(rel)
	}
	return displayPath(p)
}

// systemDirs hold the system's own files. A test seldom names one: the
// libraries and tools it uses write there on their own behalf (libuuid
// keeps its clock in /var/lib/libuuid/clock.txt when Python's
// uuid.uuid1() runs), where no temporary directory of the test's can
// take the write.
var systemDirs = []string{"/etc", "/opt", "/run", "/srv", "/usr", "/var"}

// systemPath reports whether v wrote a system path: one named absolute,
// under systemDirs but not /var/tmp, outside the project, the work
// directory and the home directory. A relative name is the test's own,
// from where it ran.
func systemPath(r *report.Report, v *report.Violation) bool {
	if !filepath.IsAbs(v.Path) || (v.RequestedPath != "" && !filepath.IsAbs(v.RequestedPath)) || pathwalk.Within(v.Path, "/var/tmp") {
		return false
	}
	for _, d := range []string{configDir(r), r.WorkDir, r.Home} {
		if d != "" && pathwalk.Within(v.Path, d) {
			return false
		}
	}
	for _, d := range systemDirs {
		if pathwalk.Within(v.Path, d) {
			return true
		}
	}
	return false
}

// systemWrites lists the writes to system paths that fail the run, each
// path once, for How to fix: "/var/lib/libuuid/clock.txt (open O_RDWR
// by tests/test_ids.py::test_uuid)".
func systemWrites(r *report.Report) []string {
	var lines, seen []string
	for i := range r.Violations {
		v := &r.Violations[i]
		if v.DeniedBy != "" || !v.Fails() || !systemPath(r, v) || slices.Contains(seen, v.Path) {
			continue
		}
		seen = append(seen, v.Path)
		what := displayText(v.Op)
		if v.Flags != "" {
			what += " " + displayText(v.Flags)
		}
		if attributed(v) {
			what += " by " + whoText(v)
		} else {
			what += procName(" by ", v.PID, v.Comm)
		}
		lines = append(lines, displayPath(v.Path)+" ("+what+")")
	}
	if len(lines) > maxTestFixes {
		more := len(lines) - (maxTestFixes - 1)
		lines = append(lines[:maxTestFixes-1], fmt.Sprintf("… and %d more (the JSON report lists them)", more))
	}
	return lines
}

// cutLast slices s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}
