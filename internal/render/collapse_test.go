package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/golden"
	"github.com/writewatch/writewatch/report"
)

// xlsxReport is an XlsxWriter-like run: each of n tests writes a file
// into the working directory and its tearDown removes it.
func xlsxReport(n int) *report.Report {
	r := emptyReport()
	r.Command = []string{"python3", "-m", "pytest"}
	r.WorkDir = "/src/xlsx"
	r.ConfigFile = "/src/xlsx/.writewatch.yaml"
	py := report.Proc{PID: 7000, PPID: 6999, Comm: "python3", Exe: "/usr/bin/python3.11", Cmdline: []string{"python3", "-m", "pytest"}}
	for i := range n {
		file := fmt.Sprintf("xlsxwriter/test/comparison/test_chart%03d.py", i)
		for _, op := range []string{"open", "unlink"} {
			v := report.Violation{Op: op, Path: fmt.Sprintf("/src/xlsx/chart%03d_%d.xlsx", i, 1000+i*7), PID: py.PID, PPID: py.PPID,
				Comm: py.Comm, Exe: py.Exe, Cmdline: py.Cmdline, Chain: []report.Proc{}, Count: 1, First: t0, Action: report.ActionReported,
				Who:      report.Who{Runner: report.RunnerPytest, Package: file, Test: file + "::TestCompareXLSXFiles::test_create_file", Phase: "call", TestFile: "/src/xlsx/" + file, TestLine: 1},
				Severity: report.SeverityTransient, RequestedPath: fmt.Sprintf("chart%03d_%d.xlsx", i, 1000+i*7),
			}
			if op == "open" {
				v.Flags = "O_WRONLY|O_CREAT|O_TRUNC"
			} else {
				v.Phase = "teardown"
			}
			r.Violations = append(r.Violations, v)
		}
	}
	// One write of another kind, which stays on its own.
	r.Violations = append(r.Violations, report.Violation{Op: "open", Path: "/home/u/.config/xlsx.ini", Flags: "O_WRONLY|O_TRUNC",
		PID: py.PID, PPID: py.PPID, Comm: py.Comm, Cmdline: py.Cmdline, Count: 1, First: t0, Action: report.ActionReported,
		Who:      report.Who{Runner: report.RunnerPytest, Package: "xlsxwriter/test/test_ini.py", Test: "xlsxwriter/test/test_ini.py::test_ini", Phase: "call"},
		Severity: report.SeverityAttempt, Errno: "EACCES"})
	return r
}

func TestTextCollapseGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, xlsxReport(12), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "collapsed.txt", buf.Bytes())
}

// Hundreds of transient files in one directory fit on one screen, and
// the summary says nothing was left behind; JSON keeps every path.
func TestTextCollapseFitsOneScreen(t *testing.T) {
	r := xlsxReport(1158)
	out := writeText(t, r)
	if n := strings.Count(out, "\n"); n > 40 {
		t.Errorf("%d lines, want at most 40:\n%s", n, out)
	}
	for _, want := range []string{
		"nothing was left behind",
		"/src/xlsx/chart*.xlsx: [transient] open O_WRONLY|O_CREAT|O_TRUNC ×1158, 1158 paths (e.g. chart000_1000.xlsx, chart001_1007.xlsx), by 1158 tests of 1158 files in xlsxwriter/test/comparison/ (e.g. test_chart000.py::TestCompareXLSXFiles::test_create_file, ",
		"/src/xlsx/chart*.xlsx: [transient] unlink ×1158, 1158 paths",
		"/home/u/.config/xlsx.ini\n",
		"xlsxwriter/test/comparison/ (1158 files): 1158 tests write chart*.xlsx (e.g. test_chart000.py:1, test_chart001.py:1): monkeypatch.chdir(tmp_path)",
		"\n          - chart*.xlsx\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Violations) != 2*1158+1 {
		t.Errorf("JSON has %d violations, want %d", len(back.Violations), 2*1158+1)
	}
}

func TestNameGlob(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  string
	}{
		{[]string{"a.txt"}, "a.txt"},
		{[]string{"a.txt", "a.txt"}, "a.txt"},
		{[]string{"outline_demo_158482901.pdf", "outline_demo_2342.pdf"}, "outline_demo_*.pdf"},
		{[]string{"run-10", "run-12"}, "run-*"},
		{[]string{"aa", "aaa"}, "aa*"},
		{[]string{"x.json", "y.yaml"}, "*"},
		{[]string{"tmp1a2b.xlsx", "tmpzz9.xlsx"}, "tmp*.xlsx"},
		{[]string{"chart000_31081.xlsx", "chart001_31081.xlsx"}, "chart*_*.xlsx"}, // a pid in every name
	} {
		if got := nameGlob(tt.names); got != tt.want {
			t.Errorf("nameGlob(%q) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

// rootReport is a run that writes unrelated files into the project's
// top directory, and a numbered log of a kind three times: only the
// logs share a name's shape.
func rootReport() *report.Report {
	r := emptyReport()
	r.Command = []string{"make", "check"}
	r.WorkDir = "/src/repo"
	sh := report.Proc{PID: 7100, PPID: 7000, Comm: "sh", Cmdline: []string{"sh", "-c", "./gen"}}
	names := []string{"setup.cfg", "VERSION", "out.json", "notes.txt", "coverage.xml", "Makefile.bak", "index.html",
		"schema.sql", "CHANGES", "requirements.lock", "run-1.log", "run-2.log", "run-30.log"}
	for i, n := range names {
		r.Violations = append(r.Violations, report.Violation{Op: "open", Path: "/src/repo/" + n, RequestedPath: n, Flags: "O_WRONLY|O_CREAT|O_TRUNC",
			PID: sh.PID, PPID: sh.PPID, Comm: sh.Comm, Cmdline: sh.Cmdline, Chain: []report.Proc{}, Count: 1 + i%3, First: t0,
			Action: report.ActionReported, Severity: report.SeverityLeftBehind})
	}
	return r
}

// Files of one directory collapse into one line only when their names
// share a shape: unrelated files in the top directory stay on their own.
func TestCollapseByNameShape(t *testing.T) {
	out := writeText(t, rootReport())
	if strings.Contains(out, "/src/repo/*:") {
		t.Errorf("unrelated files collapsed into one line:\n%s", out)
	}
	for _, want := range []string{
		"\n/src/repo/setup.cfg (requested as setup.cfg)\n",
		"\n/src/repo/run-*.log: [left-behind] open O_WRONLY|O_CREAT|O_TRUNC ×",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}
}

// pyDirReport is a pytest run whose tests of several files in tests/
// each write a numbered file into the project.
func pyDirReport() *report.Report {
	r := emptyReport()
	r.Command = []string{"python3", "-m", "pytest"}
	r.WorkDir = "/src/py"
	py := report.Proc{PID: 7000, PPID: 6999, Comm: "python3", Exe: "/usr/bin/python3.11", Cmdline: []string{"python3", "-m", "pytest"}}
	for i := range 14 {
		file := fmt.Sprintf("tests/test_%c.py", 'a'+i%3)
		r.Violations = append(r.Violations, report.Violation{Op: "open", Path: fmt.Sprintf("/src/py/out%02d.csv", i), RequestedPath: fmt.Sprintf("out%02d.csv", i),
			Flags: "O_WRONLY|O_CREAT|O_TRUNC", PID: py.PID, PPID: py.PPID, Comm: py.Comm, Exe: py.Exe, Cmdline: py.Cmdline, Chain: []report.Proc{}, Count: 1, First: t0,
			Action: report.ActionReported, Severity: report.SeverityLeftBehind,
			Who: report.Who{Runner: report.RunnerPytest, Package: file, Test: fmt.Sprintf("%s::test_%d", file, i), Phase: "call", TestFile: "/src/py/" + file, TestLine: 1 + i}})
	}
	return r
}

// The tests of several test files are named by their files and the
// directory they are in, never by the directory's name alone ("by 14
// tests of tests").
func TestCollapsedSuiteName(t *testing.T) {
	out := writeText(t, pyDirReport())
	if strings.Contains(out, "tests of tests ") || strings.Contains(out, "\n      tests: ") {
		t.Errorf("a directory named as the tests' suite:\n%s", out)
	}
	for _, want := range []string{
		"by 14 tests of 3 files in tests/ (e.g. test_a.py::test_0, test_b.py::test_1)",
		"      tests/ (3 files): 14 tests write out*.csv (e.g. test_a.py:1, test_b.py:2): monkeypatch.chdir(tmp_path), or a path under tmp_path\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}
}

// By test stays when every write is collapsed, its lines collapsed the
// same way.
func TestByTestKeepsCollapsedWrites(t *testing.T) {
	out := writeText(t, pyDirReport())
	want := "By test:\n  14 tests of 3 files in tests/ (e.g. test_a.py::test_0, test_b.py::test_1) wrote /src/py/out*.csv (open O_WRONLY|O_CREAT|O_TRUNC ×14; left-behind) via /usr/bin/python3.11\n"
	if !strings.Contains(out, want) {
		t.Errorf("%q missing in:\n%s", want, out)
	}
	r := xlsxReport(12)
	r.Violations = r.Violations[:len(r.Violations)-1] // every write collapsed
	if out := writeText(t, r); !strings.Contains(out, "By test:\n  12 tests of 12 files in xlsxwriter/test/comparison/ (e.g. ") {
		t.Errorf("By test missing:\n%s", out)
	}
}
