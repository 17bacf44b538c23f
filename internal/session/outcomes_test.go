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

// A group of calls says how many failed: rmdir d fails (ENOTEMPTY), the
// test empties d, and rmdir d succeeds. The group is not a failed call,
// and its severity is what happened to d, which was there before the run
// and is gone.
func TestGroupOfFailedAndDoneCalls(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	r.File("d/x", "")
	r.File("gone.txt", "")
	sh := r.Fork(r.PID)
	r.Write(sh, ops.Rmdir, "d", sessiontest.Failed(unix.ENOTEMPTY))
	r.Write(sh, ops.Unlink, "d/x")
	r.Write(sh, ops.Rmdir, "d")
	// 4 unlinks that fail, then 4 that succeed.
	for range 4 {
		r.Write(sh, ops.Unlink, "never.txt", sessiontest.Failed(unix.ENOENT))
	}
	for range 4 {
		r.Write(sh, ops.Unlink, "gone.txt")
	}
	r.Remove("d")
	r.Remove("gone.txt")
	r.Exit(sh)
	rep := r.Report()

	d := sessiontest.Violation(rep, "rmdir", "d")
	switch {
	case d == nil:
		t.Fatalf("no rmdir of d in %+v", rep.Violations)
	case d.Count != 2 || d.Failed != 1 || d.Errno != "ENOTEMPTY" || d.AllFailed() || !d.PartlyFailed():
		t.Errorf("rmdir d: count %d, failed %d, errno %q, want 2, 1, ENOTEMPTY", d.Count, d.Failed, d.Errno)
	case d.Severity != report.SeverityDataLoss:
		t.Errorf("rmdir d: severity %q, want data-loss", d.Severity)
	}
	if v := sessiontest.Violation(rep, "unlink", "never.txt"); v == nil || v.Count != 4 || v.Failed != 4 || !v.AllFailed() || v.Severity != report.SeverityAttempt {
		t.Errorf("unlink never.txt: %+v", v)
	}
	if v := sessiontest.Violation(rep, "unlink", "gone.txt"); v == nil || v.Count != 4 || v.Failed != 0 || v.Errno != "" {
		t.Errorf("unlink gone.txt: %+v", v)
	}

	var text bytes.Buffer
	if err := render.WriteText(&text, rep, render.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if s := text.String(); !strings.Contains(s, "rmdir ×2 (1 failed: ENOTEMPTY)") || strings.Contains(s, "rmdir (failed") {
		t.Errorf("the text says of rmdir d:\n%s", s)
	}
}

// A call that succeeded first and failed later: the group still names
// the error of the one that failed.
func TestGroupFailsLater(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	sh := r.Fork(r.PID)
	r.Write(sh, ops.Mkdir, "out")
	r.Write(sh, ops.Mkdir, "out", sessiontest.Failed(unix.EEXIST))
	r.Exit(sh)
	rep := r.Report()
	v := sessiontest.Violation(rep, "mkdir", "out")
	if v == nil || v.Count != 2 || v.Failed != 1 || v.Errno != "EEXIST" || v.Severity != report.SeverityTransient {
		t.Errorf("mkdir out: %+v", v)
	}
}
