package integration

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"
	"github.com/writewatch/writewatch/report"
)

// mergedOutput runs writewatch with its stderr on its stdout, which
// COMMAND inherits: res.stdout holds both in the order they were
// written.
var mergedOutput = []string{"sh", "-c", `exec "$@" 2>&1`, "sh"}

// killRun is a suite (testdata/NAME) run under --enforce, whose test
// writes the file WW_KILL_TARGET names, outside the allowlist.
type killRun struct {
	res    result
	target string
	junit  map[string]junit.Test // by suite and test
}

func runKilled(t *testing.T, suite string, command ...string) killRun {
	t.Helper()
	root, outside := project(t)
	copyDir(t, "../testdata/"+suite, root)
	k := killRun{target: filepath.Join(outside, "config.toml")}
	xmlPath := filepath.Join(t.TempDir(), "junit.xml")
	k.res = wwWrapped(t, mergedOutput, root, []string{"WW_KILL_TARGET=" + k.target}, nil,
		[]string{"--enforce", "--enforce-with", enforceTier(), "--junit", xmlPath}, command...)
	if k.res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", k.res.code, k.res.stdout)
	}
	if enforceTier() != "kill" && exists(k.target) { // the kill tier lets the first write land
		t.Errorf("%s was written", k.target)
	}
	suites, err := junit.IngestFile(xmlPath)
	if err != nil {
		t.Fatal(err)
	}
	k.junit = map[string]junit.Test{}
	for _, s := range suites {
		for _, c := range s.Tests {
			k.junit[s.Name+" "+c.Name] = c
		}
	}
	return k
}

// killLine checks that the one line of the kill is in the output on a
// line of its own, before what COMMAND printed after it (after, when
// not ""), and before the summary; and that the report lists the kill
// once, with the test it killed.
func (k killRun) killLine(t *testing.T, comm, in, after string) *report.Kill {
	t.Helper()
	if len(k.res.rep.Kills) != 1 {
		t.Fatalf("kills: %+v\n%s", k.res.rep.Kills, k.res.stdout)
	}
	kill := &k.res.rep.Kills[0]
	line := fmt.Sprintf("writewatch: killed pid %d (%s) in %s: open %s O_WRONLY|O_CREAT|O_TRUNC outside the allowlist\n", kill.PID, comm, in, k.target)
	out := k.res.stdout
	at := strings.Index(out, "\n"+line)
	switch {
	case at < 0:
		t.Errorf("no line %q of its own:\n%s", line, out)
	case strings.Count(out, line) != 1:
		t.Errorf("%q %d times, want once:\n%s", line, strings.Count(out, line), out)
	case after != "" && !strings.Contains(out[at:], after):
		t.Errorf("%q printed before the kill's line:\n%s", after, out)
	case !strings.Contains(out[at:], "Killed by --enforce:"):
		t.Errorf("the kill's line is said in the summary only:\n%s", out)
	}
	if !kill.RanTests || kill.Action != report.ActionBlockedKilled && kill.Action != report.ActionKilled {
		t.Errorf("kill: %+v", kill)
	}
	return kill
}

// status checks the JUnit testcase of a test: its status and the start
// of its message.
func (k killRun) status(t *testing.T, name string, status junit.Status, message string) {
	t.Helper()
	c, ok := k.junit[name]
	switch {
	case !ok:
		t.Errorf("no testcase %s in %v", name, slices.Sorted(maps.Keys(k.junit)))
	case c.Status != status || !strings.HasPrefix(c.Message, message):
		t.Errorf("%s: %s %q, want %s %q…", name, c.Status, c.Message, status, message)
	}
}

func refIDs(refs []report.TestRef) []string {
	var ids []string
	for _, r := range refs {
		ids = append(ids, r.ID)
	}
	return ids
}

// Under --enforce, a Go test binary killed in TestSave: one line says so
// at once, before the package that runs on after it ends; the JUnit
// report has TestSave failed with why, the parallel test it left
// paused and the tests it never ran (those -skip leaves, the external
// test package's too) skipped with why, and the other package's test
// passed; the JSON report holds the same.
func TestEnforceKillGoTest(t *testing.T) {
	requireRoot(t)
	k := runKilled(t, "killgo", "go", "test", "-v", "-skip", "TestLast", "./...")
	kill := k.killLine(t, "killgo.test", "TestSave (pkg example.com/killgo)", "ok  \texample.com/killgo/other")
	const pkg = "example.com/killgo"
	if kill.Test != "TestSave" || kill.Package != pkg || kill.Comm != "killgo.test" {
		t.Errorf("kill: %+v", kill)
	}
	if got := refIDs(kill.Interrupted); !slices.Equal(got, []string{"TestParallel"}) {
		t.Errorf("interrupted: %v", got)
	}
	if got := refIDs(kill.NotRun); !slices.Equal(got, []string{"TestAfter", "TestExternal"}) || kill.NotRunUnknown != "" {
		t.Errorf("not run: %v (%q)", got, kill.NotRunUnknown)
	}
	reason := "open " + k.target + " O_WRONLY|O_CREAT|O_TRUNC outside the allowlist"
	by := fmt.Sprintf("writewatch --enforce killed killgo.test (pid %d) in TestSave: %s", kill.PID, reason)
	k.status(t, pkg+" TestFirst", junit.StatusPassed, "")
	k.status(t, pkg+" TestSave", junit.StatusFailed, "killed by writewatch --enforce: "+reason)
	k.status(t, pkg+" TestParallel", junit.StatusSkipped, "did not finish: "+by)
	k.status(t, pkg+" TestAfter", junit.StatusSkipped, "not run: "+by)
	k.status(t, pkg+" TestExternal", junit.StatusSkipped, "not run: "+by)
	k.status(t, pkg+"/other TestOther", junit.StatusPassed, "")
	if _, ok := k.junit[pkg+" TestLast"]; ok || len(k.junit) != 6 {
		t.Errorf("testcases: %v", slices.Sorted(maps.Keys(k.junit)))
	}
	outcomes := map[string]string{}
	for _, tr := range k.res.rep.Tests {
		outcomes[tr.ID] = tr.Outcome
	}
	if outcomes["TestSave"] != report.OutcomeFailed || outcomes["TestAfter"] != report.OutcomeSkipped || outcomes["TestExternal"] != report.OutcomeSkipped {
		t.Errorf("the JSON report's tests: %v", outcomes)
	}
}

// Under --enforce, pytest killed in test_save: one line says so at
// once, on a line of its own after the test's name that pytest -v left
// unfinished; the JUnit report has test_save failed with why, and the
// tests pytest had collected, and -k had not deselected, that never ran
// skipped with why; the JSON report holds the same.
func TestEnforceKillPytest(t *testing.T) {
	requireRoot(t)
	python := "/usr/bin/python3"
	requirePytest(t, python)
	k := runKilled(t, "killpy", python, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-k", "not deselected")
	kill := k.killLine(t, "python3", "test_a.py::test_save", "")
	if !strings.Contains(k.res.stdout, "test_a.py::test_save \nwritewatch: killed pid") {
		t.Errorf("the kill's line is not on a line of its own after pytest's:\n%s", k.res.stdout)
	}
	want := []string{"test_a.py::test_after", "test_b.py::test_b1", "test_b.py::test_b2[1]", "test_b.py::test_b2[2]"}
	if got := refIDs(kill.NotRun); !slices.Equal(got, want) || kill.NotRunUnknown != "" || kill.Test != "test_a.py::test_save" {
		t.Errorf("not run: %v (%q); kill %+v", got, kill.NotRunUnknown, kill)
	}
	reason := "open " + k.target + " O_WRONLY|O_CREAT|O_TRUNC outside the allowlist"
	by := fmt.Sprintf("writewatch --enforce killed python3 (pid %d) in test_a.py::test_save: %s", kill.PID, reason)
	k.status(t, "test_a.py test_a.py::test_first", junit.StatusPassed, "")
	k.status(t, "test_a.py test_a.py::test_save", junit.StatusFailed, "killed by writewatch --enforce: "+reason)
	for _, id := range want {
		suite, _, _ := strings.Cut(id, "::")
		k.status(t, suite+" "+id, junit.StatusSkipped, "not run: "+by)
	}
	if len(k.junit) != 6 {
		t.Errorf("testcases: %v", slices.Sorted(maps.Keys(k.junit)))
	}
}
