package severity

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/report"
)

const (
	wrCreatTrunc = 0o1101 // O_WRONLY|O_CREAT|O_TRUNC
	wrAppend     = 0o2001 // O_WRONLY|O_APPEND
)

// step is one occurrence; its violation group is (op, path, role, who).
type step struct {
	o    Occurrence
	want string // the group's severity at the end; "" to skip the check
}

func TestSeverity(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	touch := func(name string) {
		if err := os.WriteFile(p(name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// On disk at the end: kept, old, renamed.new, made/, made/inner.
	for _, n := range []string{"kept", "old", "renamed.new", "over"} {
		touch(n)
	}
	if err := os.Mkdir(p("made"), 0o755); err != nil {
		t.Fatal(err)
	}
	touch("made/inner")

	open := func(name string, flags uint32, created bool, who string) Occurrence {
		return Occurrence{Op: ops.Open, Path: p(name), Flags: flags, Created: created, Who: who}
	}
	steps := []step{
		// Created by one test, truncated again by another: the second
		// did not lose anything that was there before the run.
		{open("kept", wrCreatTrunc, true, "a"), report.SeverityLeftBehind},
		{open("kept", wrCreatTrunc, false, "b"), report.SeverityLeftBehind},
		// Created and removed.
		{open("gone", wrCreatTrunc, true, "a"), report.SeverityTransient},
		{Occurrence{Op: ops.Unlink, Path: p("gone"), Who: "a"}, report.SeverityTransient},
		// Truncated while it was there before the run.
		{open("old", wrCreatTrunc, false, "a"), report.SeverityDataLoss},
		// Removed while it was there before the run.
		{Occurrence{Op: ops.Unlink, Path: p("lost"), Who: "a"}, report.SeverityDataLoss},
		// Failed calls.
		{Occurrence{Op: ops.Unlink, Path: p("never"), Errno: syscall.ENOENT, Who: "a"}, report.SeverityAttempt},
		{Occurrence{Op: ops.Mkdir, Path: p("kept"), Errno: syscall.EEXIST, Who: "c"}, report.SeverityAttempt},
		// A directory made by the run, and a file under it that the run
		// truncates without the open creating it (made through a path
		// the allowlist allows, say): not there before the run.
		{Occurrence{Op: ops.Mkdir, Path: p("made"), Who: "a"}, report.SeverityLeftBehind},
		{open("made/inner", wrCreatTrunc, false, "a"), report.SeverityLeftBehind},
		// A rename onto a path the run created: nothing from before
		// replaced. One onto a path it never saw: counted as replacing.
		{open("renamed.tmp", wrCreatTrunc, true, "a"), report.SeverityTransient},
		{open("renamed.new", wrCreatTrunc, true, "a"), report.SeverityLeftBehind},
		{Occurrence{Op: ops.Rename, Role: report.RoleOld, Path: p("renamed.tmp"), Who: "a"}, report.SeverityTransient},
		{Occurrence{Op: ops.Rename, Role: report.RoleNew, Path: p("renamed.new"), Who: "a"}, report.SeverityLeftBehind},
		{Occurrence{Op: ops.Rename, Role: report.RoleNew, Path: p("over"), Who: "a"}, report.SeverityDataLoss},
		// An existing file opened for appending, left unchanged.
		{open("old", wrAppend, false, "d"), report.SeverityAttempt},
	}
	tr := New(time.Now().Add(time.Hour), host.Live{}) // every file's change time is older than the run
	var vs []report.Violation
	for _, s := range steps {
		v := violationOf(s.o)
		tr.Observe(keyed(s.o))
		vs = append(vs, v)
	}
	tr.Assign(vs)
	for i, s := range steps {
		if s.want != "" && vs[i].Severity != s.want {
			t.Errorf("%s %s %s by %q: severity %q, want %q", s.o.Op, s.o.Role, s.o.Path, s.o.Who, vs[i].Severity, s.want)
		}
	}

	// The same append, with the file changed during the run: its data
	// may be lost.
	tr = New(time.Now().Add(-time.Hour), host.Live{})
	o := open("old", wrAppend, false, "d")
	tr.Observe(keyed(o))
	v := []report.Violation{violationOf(o)}
	tr.Assign(v)
	if v[0].Severity != report.SeverityDataLoss {
		t.Errorf("append to a file changed during the run: %q, want data-loss", v[0].Severity)
	}

	// A violation the tracker never saw keeps its severity.
	v = []report.Violation{{Op: "open", Path: p("other"), Severity: "x"}}
	tr.Assign(v)
	if v[0].Severity != "x" {
		t.Errorf("unseen violation changed: %q", v[0].Severity)
	}
}

// An existing file opened for appending is an attempt when its change
// time is older than the run by more than ctimeSlack, and data-loss when
// it is not.
func TestSeverityOpenedForWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	ctime := time.Unix(st.Ctim.Unix())
	o := Occurrence{Op: ops.Open, Path: path, Flags: wrAppend, Who: "d"}
	for _, c := range []struct {
		name      string
		start     time.Time
		survivors bool
		want      string
	}{
		{"changed an hour before the run", ctime.Add(time.Hour), false, report.SeverityAttempt},
		// On a filesystem that keeps whole seconds, a write in the
		// run's first second is stamped before it.
		{"changed a second and a half before the run", ctime.Add(1500 * time.Millisecond), false, report.SeverityDataLoss},
		{"changed during the run", ctime.Add(-time.Hour), false, report.SeverityDataLoss},
		// A process of the run still running may write to it after
		// the end.
		{"unchanged, with processes of the run left running", ctime.Add(time.Hour), true, report.SeverityDataLoss},
	} {
		tr := New(c.start, host.Live{})
		tr.Survivors = c.survivors
		tr.Observe(keyed(o))
		v := []report.Violation{violationOf(o)}
		tr.Assign(v)
		if v[0].Severity != c.want {
			t.Errorf("%s: %q, want %q", c.name, v[0].Severity, c.want)
		}
	}
}

// keyed is o with Who the attribution key of its violation group.
func keyed(o Occurrence) Occurrence {
	v := violationOf(o)
	o.Who = v.Who.Key()
	return o
}

// violationOf is the violation an occurrence's group makes; Who is used
// as the test name, so that report.Who.Key gives a key of its own.
func violationOf(o Occurrence) report.Violation {
	v := report.Violation{Op: o.Op.String(), Role: o.Role, Path: o.Path}
	if o.Who != "" {
		v.Test = o.Who
	}
	return v
}
