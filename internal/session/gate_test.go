package session_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/session/sessiontest"
	"github.com/writewatch/writewatch/report"
)

// A block device's node made in an allowed directory, then opened there
// for writing: the open writes every file on the device, the project's
// protected files among them, whatever the node's path. Both are
// reported, the open as data loss, and the run fails. A character
// device's node is no such thing.
func TestBlockDeviceNode(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	sh := r.Fork(r.PID)
	r.File("tests/blk", "")
	r.Write(sh, ops.Mknod, "tests/blk", sessiontest.Mode(unix.S_IFBLK|0o600))
	r.Write(sh, ops.Open, "tests/blk", sessiontest.Flags(unix.O_WRONLY), sessiontest.Device(254<<20|1))
	r.File("tests/chr", "")
	r.Write(sh, ops.Mknod, "tests/chr", sessiontest.Mode(unix.S_IFCHR|0o600))
	r.Exit(sh)
	rep := r.Report()
	if rep.ExitCode != report.ExitViolations || len(rep.Violations) != 2 {
		t.Fatalf("exit %d, violations %+v: want 86, the node and the open", rep.ExitCode, rep.Violations)
	}
	if v := sessiontest.Violation(rep, "open", "tests/blk"); v == nil || v.BlockDevice != "254:1" || v.Severity != report.SeverityDataLoss {
		t.Errorf("open of tests/blk: %+v, want block device 254:1, data loss", v)
	}
	if v := sessiontest.Violation(rep, "mknod", "tests/blk"); v == nil || v.BlockDevice != report.BlockDeviceNode {
		t.Errorf("mknod of tests/blk: %+v, want a block device's node", v)
	}
}

// An allow entry that names a block device's node exactly allows it; a
// pattern that only covers it does not.
func TestBlockDeviceNamed(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n  - tests/blk\n")
	sh := r.Fork(r.PID)
	r.File("tests/blk", "")
	r.Write(sh, ops.Mknod, "tests/blk", sessiontest.Mode(unix.S_IFBLK|0o600))
	r.Write(sh, ops.Open, "tests/blk", sessiontest.Flags(unix.O_WRONLY), sessiontest.Device(7<<20|3))
	r.Exit(sh)
	if rep := r.Report(); rep.ExitCode != 0 || len(rep.Violations) != 0 {
		t.Errorf("exit %d, violations %+v: want 0 and none", rep.ExitCode, rep.Violations)
	}
}

// A truncate whose name was rewritten in its process's memory while it
// ran (the kernel compares the name at the call's entry and exit) names
// an allowed file, which may not be the one it changed: the run does
// not pass, it is incomplete (88). The same call, its name unchanged,
// passes.
func TestRewrittenName(t *testing.T) {
	for _, rewritten := range []bool{true, false} {
		r := sessiontest.New(t, "allow:\n  - tests/**\n")
		sh := r.Fork(r.PID)
		r.File("tests/ok.txt", "")
		opts := []sessiontest.Option{}
		if rewritten {
			opts = append(opts, sessiontest.Rewritten())
		}
		r.Write(sh, ops.Truncate, "tests/ok.txt", opts...)
		r.Exit(sh)
		rep := r.Report()
		want := 0
		if rewritten {
			want = report.ExitIncomplete
		}
		if rep.ExitCode != want || len(rep.Violations) != 0 {
			t.Errorf("rewritten %v: exit %d, violations %+v, incomplete %q: want %d and none", rewritten, rep.ExitCode, rep.Violations, rep.Incomplete, want)
		}
	}
}
