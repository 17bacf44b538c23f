package session_test

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/session/sessiontest"
	"github.com/writewatch/writewatch/report"
)

// A fake home: writes by name of a process in a mount namespace of the
// tree's own where a mount was made (the kernel marks them and pauses
// the process), which land, through the process's root, on a filesystem
// in memory that no mount held at the start (here /dev/shm, left out of
// the devices at the start), are not the user's: not reported. One that
// lands on the project's filesystem is; so is one followed while the
// tree's count of mount calls moved (a mount may have moved meanwhile).
func TestOwnViewFilesystem(t *testing.T) {
	var sf unix.Statfs_t
	if unix.Statfs("/dev/shm", &sf) != nil || sf.Type != unix.TMPFS_MAGIC {
		t.Skip("no tmpfs on /dev/shm here")
	}
	home, err := os.MkdirTemp("/dev/shm", "writewatch-fakehome-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	var st unix.Stat_t
	if err := unix.Stat(r.Root, &st); err != nil {
		t.Fatal(err)
	}
	r.Config.StartDevs = []uint64{st.Dev}
	r.Host = host.Live{Mounts: func() uint32 { return 3 }}
	self := uint32(os.Getpid())
	sh := r.Fork(r.PID)
	r.Write(sh, ops.Mkdir, home+"/.cfg", sessiontest.OwnView(self, 3))
	r.Write2(sh, ops.Rename, home+"/a", home+"/b", sessiontest.OwnView(self, 3))
	r.Write(sh, ops.Unlink, home+"/moved", sessiontest.OwnView(self, 2))
	r.File("config.toml", "")
	r.Write(sh, ops.Chmod, "config.toml", sessiontest.OwnView(self, 3))
	r.Exit(sh)
	rep := r.Report()
	if rep.ExitCode != report.ExitViolations || len(rep.Violations) != 2 {
		t.Fatalf("exit %d, violations %+v: want 86, the unlink followed while mounts moved and the chmod of config.toml", rep.ExitCode, rep.Violations)
	}
	if sessiontest.Violation(rep, "unlink", home+"/moved") == nil || sessiontest.Violation(rep, "chmod", "config.toml") == nil {
		t.Errorf("violations %+v", rep.Violations)
	}
}
