package session_test

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/render"
	"github.com/writewatch/writewatch/internal/session/sessiontest"
	"github.com/writewatch/writewatch/report"
)

// Records in, report out: an overwrite of a file that was there, a stray
// file left, an allowed write, and a failed unlink, each judged and
// labelled as the kernel's facts and the end state say.
func TestRecordsInReportOut(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	r.File("config.toml", "before\n")
	sh := r.Fork(r.PID)
	r.Write(sh, ops.Open, "config.toml", sessiontest.Flags(unix.O_WRONLY|unix.O_TRUNC))
	r.File("stray.txt", "")
	r.Write(sh, ops.Open, "stray.txt", sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT), sessiontest.Created())
	r.Write(sh, ops.Open, "tests/ok.txt", sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT), sessiontest.Created())
	r.Write(sh, ops.Unlink, "missing.txt", sessiontest.Failed(unix.ENOENT))
	r.Exit(sh)
	rep := r.Report()

	if rep.ExitCode != report.ExitViolations || len(rep.Violations) != 3 {
		t.Fatalf("exit %d, violations %+v", rep.ExitCode, rep.Violations)
	}
	for _, want := range []struct{ op, path, severity string }{
		{"open", "config.toml", report.SeverityDataLoss},
		{"open", "stray.txt", report.SeverityLeftBehind},
		{"unlink", "missing.txt", report.SeverityAttempt},
	} {
		v := sessiontest.Violation(rep, want.op, want.path)
		switch {
		case v == nil:
			t.Errorf("no %s of %s in %+v", want.op, want.path, rep.Violations)
		case v.Severity != want.severity:
			t.Errorf("%s %s: severity %q, want %q", want.op, want.path, v.Severity, want.severity)
		}
	}
}

// A Go test's write names the test; a write of its package outside any
// test names the package's phase.
func TestGoTestAttribution(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	bin := r.Fork(r.PID)
	r.Exec(bin, "/tmp/go-build1/b001/app.test", "-test.v")
	r.GoTest(bin, "example.com/app")
	r.Write(bin, ops.Open, "setup.txt", sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT), sessiontest.Created(), sessiontest.InTest(0))
	r.TestStart(bin, 7, "TestSave")
	r.Write(bin, ops.Open, "saved.txt", sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT), sessiontest.Created(), sessiontest.InTest(7))
	r.TestEnd(bin, 7)
	r.Exit(bin)
	rep := r.Report()
	if v := sessiontest.Violation(rep, "open", "saved.txt"); v == nil || v.Test != "TestSave" || v.Package != "example.com/app" || v.Phase != report.PhaseTest {
		t.Errorf("saved.txt: %+v", v)
	}
	if v := sessiontest.Violation(rep, "open", "setup.txt"); v == nil || v.Test != "" || v.Phase == "" {
		t.Errorf("setup.txt: %+v", v)
	}
}

// A unittest setUp's write, announced by the pytest plugin as a phase of
// its own at setUp's source, carries that phase and place; the test
// keeps its own place, announced again when setUp returns. How to fix
// points at setUp and names the test it ran for.
func TestUnittestSetUpAttribution(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	py := r.Fork(r.PID)
	r.Exec(py, "/usr/bin/python3", "-m", "pytest")
	test := "runner=pytest&suite=tests%2Ftest_report.py&id=tests%2Ftest_report.py%3A%3ATestReport%3A%3Atest_one"
	at := "&file=" + r.Root + "%2Ftests%2Ftest_report.py&line=20"
	r.Announce(py, "begin", test+"&phase=call"+at)
	r.Announce(py, "begin", test+"&phase=setUp&file="+r.Root+"%2Ftests%2Fbase.py&line=8")
	r.File("report.txt", "x")
	r.Write(py, ops.Open, "report.txt", sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC), sessiontest.Created())
	r.Announce(py, "begin", test+"&phase=call"+at)
	r.Announce(py, "begin", test+"&phase=teardown"+at)
	r.Announce(py, "end", "runner=pytest&suite=tests%2Ftest_report.py&phase=session")
	r.Exit(py)
	rep := r.Report()

	v := sessiontest.Violation(rep, "open", "report.txt")
	if v == nil || v.Test != "tests/test_report.py::TestReport::test_one" || v.Phase != "setUp" ||
		v.TestFile != r.Root+"/tests/base.py" || v.TestLine != 8 {
		t.Fatalf("report.txt: %+v", v)
	}
	if len(rep.Tests) != 1 || rep.Tests[0].File != r.Root+"/tests/test_report.py" || rep.Tests[0].Line != 20 {
		t.Errorf("the test's place: %+v", rep.Tests)
	}
	var buf bytes.Buffer
	if err := render.WriteText(&buf, rep, render.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "      tests/base.py:8: setUp of TestReport (for test_one) writes report.txt: os.chdir into a tempfile.mkdtemp() made in setUp"; !strings.Contains(buf.String(), want) {
		t.Errorf("%q missing in:\n%s", want, buf.String())
	}
}
