package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/report"

	junit "github.com/joshdk/go-junit"
)

// The JUnit output read back by a real consumer's parser
// (github.com/joshdk/go-junit): every test is there with its result, and
// each write is a failure of the test that made it.
func TestJUnitParsedByConsumer(t *testing.T) {
	r := testsReport()
	r.Tests = append(r.Tests,
		report.TestResult{Runner: report.RunnerGo, Package: "example.com/app", ID: "TestClean", Outcome: report.OutcomePassed, Seconds: 0.5},
		report.TestResult{Runner: report.RunnerGo, Package: "example.com/app", ID: "TestBroken", Outcome: report.OutcomeFailed, Message: "app_test.go:9: boom"},
		report.TestResult{Runner: report.RunnerPytest, Package: "test_app.py", ID: "test_app.py::test_skip", Outcome: report.OutcomeSkipped, Message: "no db"},
	)
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(buf.Bytes())
	if err != nil {
		t.Fatalf("consumer cannot parse the output: %v\n%s", err, buf.Bytes())
	}
	got := map[string]junit.Test{}
	for _, s := range suites {
		for _, c := range s.Tests {
			if c.Classname != s.Name {
				t.Errorf("%s: classname %q in suite %q", c.Name, c.Classname, s.Name)
			}
			got[s.Name+" "+c.Name] = c
		}
	}
	want := map[string]junit.Status{
		"example.com/app TestSaveConfig":                  junit.StatusFailed,
		"example.com/app TestOuter/inner":                 junit.StatusFailed,
		"example.com/app one of TestA, TestB":             junit.StatusFailed,
		"example.com/app (package setup: init, TestMain)": junit.StatusFailed,
		"example.com/app TestClean":                       junit.StatusPassed,
		"example.com/app TestBroken":                      junit.StatusFailed,
		"test_app.py test_app.py::test_db":                junit.StatusFailed,
		"test_app.py test_app.py::test_skip":              junit.StatusSkipped,
	}
	for name, status := range want {
		c, ok := got[name]
		if !ok {
			t.Errorf("no testcase %q; got %v", name, keysOf(got))
			continue
		}
		if c.Status != status {
			t.Errorf("%s: status %q, want %q", name, c.Status, status)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d testcases, want %d: %v", len(got), len(want), keysOf(got))
	}
	// go-junit: Message is the failure's message, Error its text.
	if c := got["example.com/app TestSaveConfig"]; c.Message != "1 write outside the allowlist (1 data-loss)" {
		t.Errorf("TestSaveConfig failure message: %q", c.Message)
	}
	if c := got["example.com/app TestSaveConfig"]; c.Error == nil || !strings.Contains(c.Error.Error(), "/home/u/.config/app/config.toml") {
		t.Errorf("TestSaveConfig failure text lacks the path: %v", c.Error)
	}
	if c := got["example.com/app TestBroken"]; c.Message != "app_test.go:9: boom" {
		t.Errorf("TestBroken keeps the runner's message: %q", c.Message)
	}
}

func keysOf[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// A test that read a file another test wrote has the writer named in
// its JUnit testcase: in its failure's message and text when it failed,
// in its system-out when it passed.
func TestJUnitNamesThePolluter(t *testing.T) {
	r := crossTestReport()
	r.Tests = []report.TestResult{
		{Runner: report.RunnerGo, Package: "example.com/app", ID: "TestB", Outcome: report.OutcomeFailed, Message: "state_test.go:17: state.json: not ready"},
		{Runner: report.RunnerPytest, Package: "tests/test_state.py", ID: "tests/test_state.py::test_b", Outcome: report.OutcomePassed},
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(buf.Bytes())
	if err != nil {
		t.Fatalf("consumer cannot parse the output: %v\n%s", err, buf.Bytes())
	}
	got := map[string]junit.Test{}
	for _, s := range suites {
		for _, c := range s.Tests {
			got[c.Name] = c
		}
	}
	b := got["TestB"]
	if b.Status != junit.StatusFailed || !strings.HasPrefix(b.Message, "state_test.go:17: state.json: not ready") ||
		!strings.Contains(b.Message, "read /home/dev/proj/state.json, which TestA (open) wrote") {
		t.Errorf("TestB: %s, message %q: want its own failure, naming TestA", b.Status, b.Message)
	}
	if b.Error == nil || !strings.Contains(b.Error.Error(), "read /home/dev/proj/state.json, which TestA (open) wrote") {
		t.Errorf("TestB's failure text does not name TestA: %v", b.Error)
	}
	py := got["tests/test_state.py::test_b"]
	if py.Status != junit.StatusPassed || !strings.Contains(py.SystemOut, "read /home/dev/proj/state.db, which tests/test_state.py::test_a (open) wrote") {
		t.Errorf("test_b: %s, system-out %q: want passed, naming test_a", py.Status, py.SystemOut)
	}
	if h := got["TestH"]; !strings.Contains(h.SystemOut, "which TestC (open), TestD (open), TestE (open) and 2 more wrote") {
		t.Errorf("TestH, which no runner reported: system-out %q", h.SystemOut)
	}
}

// The reader of another test's file gets an annotation at its own
// source, naming the writer, and the step summary a table of the reads.
func TestGitHubNamesThePolluter(t *testing.T) {
	r := crossTestReport()
	var buf bytes.Buffer
	if err := WriteGitHubAnnotations(&buf, r, "/src"); err != nil {
		t.Fatal(err)
	}
	want := "::warning file=tests/test_state.py,line=9,title=writewatch%3A cross-test read::tests/test_state.py::test_b read /home/dev/proj/state.db, which tests/test_state.py::test_a (open) wrote: it passes or fails with the order the tests run in\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("%q missing in:\n%s", want, buf.String())
	}
	buf.Reset()
	if err := WriteGitHubSummary(&buf, r); err != nil {
		t.Fatal(err)
	}
	want = "| TestB (pkg example.com/app) | `/home/dev/proj/state.json` | TestA (open) |\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("%q missing in:\n%s", want, buf.String())
	}
}
