package session_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/session/sessiontest"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// link makes the hard link to on disk, as the run's link did.
func link(t *testing.T, r *sessiontest.Run, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(r.Path(to)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(r.Path(from), r.Path(to)); err != nil {
		t.Fatal(err)
	}
}

// git clone of a fixture repository of the project's into an allowed
// directory hard-links its objects: a hard link changes nothing of the
// file linked, so the run passes, with nothing reported. So does a link
// that failed.
func TestHardLinkIsNoWrite(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	objects := []string{"fixtures/repo/.git/objects/ab/cdef", "fixtures/repo/.git/objects/12/3456"}
	for _, o := range objects {
		r.File(o, "blob\n")
	}
	git := r.Fork(r.PID)
	r.Exec(git, "/usr/bin/git", "clone", "fixtures/repo", "tests/clone")
	r.Write(git, ops.Mkdir, "tests/clone")
	for i, o := range objects {
		to := "tests/clone/.git/objects/" + o[len(o)-7:]
		link(t, r, o, to)
		r.Write2(git, ops.Link, o, to)
		if i == 0 {
			r.Write2(git, ops.Link, o, to, sessiontest.Failed(unix.EEXIST))
		}
	}
	r.Exit(git)
	rep := r.Report()
	if rep.ExitCode != 0 || len(rep.Violations) != 0 {
		t.Fatalf("exit %d, violations %+v", rep.ExitCode, rep.Violations)
	}
}

// What a hard link makes possible is caught where it happens: a write
// through the new name, in an allowed directory, to the file linked from
// outside the allowlist is a write of that file, by its own name, with
// the name used as the requested path. Opened for writing (by a process
// that did not make the link), truncated, or its mode changed by the new
// name, each is data loss.
func TestWriteThroughAHardLink(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	r.File("config.toml", "precious\n")
	r.File("data.json", "{}\n")
	r.File("notes.txt", "notes\n")
	sh := r.Fork(r.PID)
	for _, l := range [][2]string{{"config.toml", "tests/h1"}, {"data.json", "tests/h2"}, {"notes.txt", "tests/h3"}} {
		link(t, r, l[0], l[1])
		r.Write2(sh, ops.Link, l[0], l[1])
	}
	other := r.Fork(r.PID)
	r.Write(other, ops.Open, "tests/h1", sessiontest.Flags(unix.O_WRONLY|unix.O_TRUNC))
	r.Write(sh, ops.Truncate, "tests/h2")
	r.Write(sh, ops.Chmod, "tests/h3", sessiontest.Flags(tracer.MetaFollow))
	r.Exit(other)
	r.Exit(sh)
	rep := r.Report()

	if rep.ExitCode != report.ExitViolations || len(rep.Violations) != 3 {
		t.Fatalf("exit %d, violations %+v", rep.ExitCode, rep.Violations)
	}
	for _, want := range []struct{ op, path, requested string }{
		{"open", "config.toml", "tests/h1"},
		{"truncate", "data.json", "tests/h2"},
		{"chmod", "notes.txt", "tests/h3"},
	} {
		v := sessiontest.Violation(rep, want.op, r.Path(want.path))
		switch {
		case v == nil:
			t.Errorf("no %s of %s in %+v", want.op, want.path, rep.Violations)
		case v.RequestedPath != want.requested || v.Role != "" || v.Severity != report.SeverityDataLoss:
			t.Errorf("%s %s: %+v, want requested as %s, data loss", want.op, want.path, v, want.requested)
		}
	}
}
