package integration

import (
	"path/filepath"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"
)

// An XlsxWriter-like pytest suite, 150 tests each writing a file into
// the working directory that its tearDown removes: the text summary fits
// on one screen and says nothing was left behind, while JSON lists every
// write. A test failing on an assertion keeps the assertion's message as
// its JUnit failure's.
func TestCollapsedPytestSummary(t *testing.T) {
	root, _ := project(t)
	requirePytest(t, "/usr/bin/python3")
	copyDir(t, "../testdata/pycharts", root)
	junitPath := filepath.Join(t.TempDir(), "junit.xml")
	res := ww(t, root, []string{"--junit", junitPath}, "/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider")
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
	}
	if n := len(res.rep.Violations); n != 300 {
		t.Errorf("JSON lists %d writes, want 300 (150 files written and removed)", n)
	}
	for _, v := range res.rep.Violations {
		if v.Severity != "transient" {
			t.Errorf("%s %s: %s, want transient", v.Op, v.Path, v.Severity)
		}
	}
	if n := strings.Count(res.stderr, "\n"); n > 30 {
		t.Errorf("the summary takes %d lines, want one screen:\n%s", n, res.stderr)
	}
	for _, want := range []string{
		"nothing was left behind",
		filepath.Join(root, "chart*_*.xlsx") + ": [transient] open O_WRONLY|O_CREAT|O_TRUNC ×150, 150 paths",
		filepath.Join(root, "chart*_*.xlsx") + ": [transient] unlink ×150, 150 paths",
		"by 150 tests of test_charts.py (e.g. TestChart000::test_create_file, TestChart001::test_create_file)",
		"\n          - chart*_*.xlsx\n",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("%q missing in the summary:\n%s", want, res.stderr)
		}
	}

	suites, err := junit.IngestFile(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range suites {
		for _, c := range s.Tests {
			if c.Name == "test_fail.py::test_message" {
				found = true
				if c.Message != "AssertionError: the answer should be two" {
					t.Errorf("test_message's JUnit message: %q, want the assertion's", c.Message)
				}
			}
		}
	}
	if !found {
		t.Errorf("no testcase test_fail.py::test_message in the JUnit report")
	}
}
