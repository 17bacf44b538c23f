package session_test

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/internal/session/sessiontest"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// An atomic save: write x.tmp, rename it to x.json. Onto a path that held
// nothing, the rename loses nothing: the file it moves is left behind.
// Onto a file from before the run, it replaces it: data-loss. When
// nothing tells whether a file was there, it counts as one was.
func TestAtomicSave(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	r.File("kept.json", "before the run")
	r.File("other.json", "before the run")
	sh := r.Fork(r.PID)
	save := func(name string, opts ...sessiontest.Option) {
		r.File(name+".tmp", "")
		r.Write(sh, ops.Open, name+".tmp", sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC), sessiontest.Created())
		r.Write2(sh, ops.Rename, name+".tmp", name+".json", opts...)
		if err := os.Rename(r.Path(name+".tmp"), r.Path(name+".json")); err != nil {
			t.Fatal(err)
		}
	}
	save("new", r.PriorOf("new.json"))     // the kernel found nothing there
	save("new", r.PriorOf("new.json"))     // again, over the run's own
	save("kept", r.PriorOf("kept.json"))   // the kernel found a file there
	save("unsaid")                         // the kernel did not say
	save("other", r.PriorOf("other.json")) // a file there, found by the kernel
	r.Exit(sh)
	rep := r.Report()

	for _, want := range []struct{ path, role, severity string }{
		{"new.json", report.RoleNew, report.SeverityLeftBehind},
		{"new.tmp", report.RoleOld, report.SeverityTransient},
		{"kept.json", report.RoleNew, report.SeverityDataLoss},
		{"unsaid.json", report.RoleNew, report.SeverityDataLoss},
		{"other.json", report.RoleNew, report.SeverityDataLoss},
	} {
		v := violation(rep, "rename", want.path, want.role)
		switch {
		case v == nil:
			t.Errorf("no rename (%s) of %s in %+v", want.role, want.path, rep.Violations)
		case v.Severity != want.severity:
			t.Errorf("rename (%s) of %s: severity %q, want %q", want.role, want.path, v.Severity, want.severity)
		}
	}
}

// Where the record does not say, the filesystem witness may: a rename's
// events, Rename then MoveSelf of the object moved, with the link count
// change of the file it replaced between them when it replaced one.
func TestAtomicSaveWitnessed(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	r.Witness()
	r.File("old.json", "before the run")
	sh := r.Fork(r.PID)
	var ino uint64 = 1000
	save := func(name string, replaced bool) {
		r.File(name+".tmp", "")
		r.Write(sh, ops.Open, name+".tmp", sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC), sessiontest.Created())
		r.Write2(sh, ops.Rename, name+".tmp", name+".json")
		if err := os.Rename(r.Path(name+".tmp"), r.Path(name+".json")); err != nil {
			t.Fatal(err)
		}
		ino += 2
		change := func(ev witness.Event) { ev.Pid = int32(sh); ev.Dev = 1; r.Item(session.Item{Change: &ev}) }
		change(witness.Event{Op: witness.Create | witness.Modify | witness.CloseWrite, Path: r.Path(name + ".tmp"), Name: name + ".tmp", Ino: ino})
		change(witness.Event{Op: witness.Rename, Path: r.Path(name + ".json"), OldPath: r.Path(name + ".tmp"), Name: name + ".json", Ino: ino})
		if replaced {
			change(witness.Event{Op: witness.Attrib, Ino: ino + 1})
		}
		change(witness.Event{Op: witness.MoveSelf, Ino: ino})
	}
	save("new", false)
	save("old", true)
	r.Exit(sh)
	r.Item(session.Item{Barrier: witness.FinalBarrier})
	rep := r.Report()
	if v := violation(rep, "rename", "new.json", report.RoleNew); v == nil || v.Severity != report.SeverityLeftBehind {
		t.Errorf("rename onto new.json: %+v", v)
	}
	if v := violation(rep, "rename", "old.json", report.RoleNew); v == nil || v.Severity != report.SeverityDataLoss {
		t.Errorf("rename onto old.json: %+v", v)
	}
}

// A mode changed and set back by the suite (chmod 700 d; ...; chmod 755
// d) is judged by the state at the end against the state at the start,
// which the record of the run's first change carries: set back, it is
// transient; left changed, data-loss. So are times set back, and an
// owner. Where the record does not say what was there, data-loss.
func TestMetadataSetBack(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	for _, d := range []string{"back", "changed", "unsaid"} {
		if err := os.Mkdir(r.Path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.File("touched.txt", "")
	old := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	if err := os.Chtimes(r.Path("touched.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	sh := r.Fork(r.PID)
	r.Write(sh, ops.Chmod, "back", r.PriorOf("back"))
	r.Write(sh, ops.Chmod, "back", sessiontest.Prior(tracer.Prior{Known: true, Mode: unix.S_IFDIR | 0o700}))
	r.Write(sh, ops.Chmod, "changed", r.PriorOf("changed"))
	r.Write(sh, ops.Chmod, "unsaid")
	r.Write(sh, ops.Utimes, "touched.txt", r.PriorOf("touched.txt"))
	r.Write(sh, ops.Utimes, "touched.txt")
	r.Exit(sh)
	// The end: back and unsaid as they were, changed not; touched.txt's
	// times set back.
	if err := os.Chmod(r.Path("changed"), 0o700); err != nil {
		t.Fatal(err)
	}
	rep := r.Report()
	for _, want := range []struct{ op, path, severity string }{
		{"chmod", "back", report.SeverityTransient},
		{"chmod", "changed", report.SeverityDataLoss},
		{"chmod", "unsaid", report.SeverityDataLoss},
		{"utimes", "touched.txt", report.SeverityTransient},
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

func violation(rep *report.Report, op, path, role string) *report.Violation {
	for i := range rep.Violations {
		if v := &rep.Violations[i]; v.Op == op && v.Role == role && v.Path != "" && (v.Path == path || len(v.Path) > len(path) && v.Path[len(v.Path)-len(path)-1:] == "/"+path) {
			return v
		}
	}
	return nil
}
