package session_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
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
