package session_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/session/sessiontest"
	"github.com/writewatch/writewatch/report"
)

// rename moves from to to on disk, as the run's rename did.
func rename(t *testing.T, r *sessiontest.Run, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(r.Path(to)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(r.Path(from), r.Path(to)); err != nil {
		t.Fatal(err)
	}
}

// mv tests scratch/old, both allowed, moves the denied tests/golden away:
// the rename of tests is judged on the deny entry below it, as data
// loss. Renaming a file there, or a directory below which no deny entry
// reaches, is not.
func TestRenameOfADirectoryMovesWhatIsBelow(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n  - scratch/**\ndeny:\n  - tests/golden/**\n")
	r.File("tests/golden/want.txt", "golden\n")
	r.File("tests/data/in.txt", "data\n")
	r.File("tests/a.tmp", "new\n")
	sh := r.Fork(r.PID)
	rename(t, r, "tests/a.tmp", "tests/a.txt")
	r.Write2(sh, ops.Rename, "tests/a.tmp", "tests/a.txt")
	rename(t, r, "tests/data", "scratch/data")
	r.Write2(sh, ops.Rename, "tests/data", "scratch/data")
	rename(t, r, "tests", "scratch/old")
	r.Write2(sh, ops.Rename, "tests", "scratch/old")
	r.Exit(sh)
	rep := r.Report()

	if rep.ExitCode != report.ExitViolations || len(rep.Violations) != 1 {
		t.Fatalf("exit %d, violations %+v", rep.ExitCode, rep.Violations)
	}
	v := rep.Violations[0]
	if v.Op != "rename" || v.Path != r.Path("tests") || v.Role != report.RoleOld ||
		v.Severity != report.SeverityDataLoss || v.DeniedBy != filepath.Join(r.Root, ".writewatch.yaml")+":5" {
		t.Errorf("violation %+v, want the rename of tests, data loss, denied by the config's line 5", v)
	}
}

// With the project under $TMPDIR, renaming the directory that holds it
// (allowed by the tmp default) moves the whole project: judged on the
// project's carve-out. A rename that failed moved nothing.
func TestRenameOfADirectoryMovesTheProject(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	holder := filepath.Dir(r.Root)
	r.Defaults(filepath.Dir(holder))
	r.File("config.toml", "precious\n")
	sh := r.Fork(r.PID)
	moved := holder + "-moved"
	r.Write2(sh, ops.Rename, holder, moved, sessiontest.Failed(unix.EXDEV))
	if err := os.Rename(holder, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(moved, holder) })
	r.Write2(sh, ops.Rename, holder, moved)
	r.Exit(sh)
	rep := r.Report()

	if rep.ExitCode != report.ExitViolations || len(rep.Violations) != 1 {
		t.Fatalf("exit %d, violations %+v", rep.ExitCode, rep.Violations)
	}
	v := rep.Violations[0]
	if v.Op != "rename" || v.Path != holder || v.Role != report.RoleOld || v.Severity != report.SeverityDataLoss ||
		v.DeniedBy != allowlist.SourceProject || v.Errno != "" {
		t.Errorf("violation %+v, want the rename of %s, data loss, denied by %s", v, holder, allowlist.SourceProject)
	}
}
