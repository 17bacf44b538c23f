package report

import (
	"reflect"
	"testing"
	"time"
)

// goTestAccess is a Go test's access to a file by pkg.test.
func goTestAccess(test, op string, at time.Duration) Access {
	return Access{Op: op, Runner: RunnerGo, Package: "example.com/app", Test: test, Phase: PhaseTest,
		PID: pkgTest.PID, Comm: pkgTest.Comm, First: t0.Add(at)}
}

var (
	stateFile = FileID{Dev: 8<<20 | 1, Ino: 4242}
	cacheFile = FileID{Dev: 8<<20 | 1, Ino: 4343}
)

// crossTestReport is a Go and a pytest suite whose tests read what other
// tests wrote: one reader with one writer, one with many, package code
// after the tests, and a pytest test.
func crossTestReport() *Report {
	r := emptyReport()
	r.ExitCode = 86
	var c CrossReads
	c.Wrote(stateFile, goTestAccess("TestA", "open", time.Second))
	c.Read(stateFile, "/home/dev/proj/state.json", goTestAccess("TestB", "", 2*time.Second))
	for i, name := range []string{"TestC", "TestD", "TestE", "TestF", "TestG"} {
		c.Wrote(cacheFile, goTestAccess(name, "open", time.Duration(3+i)*time.Second))
		r.Violations = append(r.Violations, Violation{Op: "open", Path: "/home/dev/.cache/app/index", RequestedPath: "/home/dev/.cache/app/index",
			Flags: "O_WRONLY|O_CREAT", PID: pkgTest.PID, PPID: pkgTest.PPID, Comm: pkgTest.Comm, Cmdline: pkgTest.Cmdline, Chain: []Proc{goTest}, Count: 1,
			First: t0.Add(time.Duration(3+i) * time.Second), Action: ActionReported, Severity: SeverityLeftBehind,
			Runner: RunnerGo, Package: "example.com/app", Test: name, Phase: PhaseTest})
	}
	c.Read(cacheFile, "/home/dev/.cache/app/index", goTestAccess("TestH", "", 9*time.Second))
	after := goTestAccess("", "", 10*time.Second)
	after.Phase = PhaseAfter
	c.Read(stateFile, "/home/dev/proj/state.json", after)

	py := Access{Runner: RunnerPytest, Package: "tests/test_state.py", Test: "tests/test_state.py::test_b", Phase: "call",
		PID: 5100, Comm: "python3", First: t0.Add(11 * time.Second)}
	pyFile := FileID{Dev: 8<<20 | 1, Ino: 5151}
	w := py
	w.Op, w.Test, w.First = "open", "tests/test_state.py::test_a", t0.Add(10*time.Second)
	c.Wrote(pyFile, w)
	c.Read(pyFile, "/home/dev/proj/state.db", py)
	r.CrossTestReads = c.Reads()

	r.Violations = append([]Violation{{Op: "open", Path: "/home/dev/proj/state.json", RequestedPath: "state.json",
		Flags: "O_WRONLY|O_CREAT|O_TRUNC", PID: pkgTest.PID, PPID: pkgTest.PPID, Comm: pkgTest.Comm, Cmdline: pkgTest.Cmdline, Chain: []Proc{goTest}, Count: 1,
		First: t0.Add(time.Second), Action: ActionReported, Severity: SeverityLeftBehind,
		Runner: RunnerGo, Package: "example.com/app", Test: "TestA", Phase: PhaseTest}, {
		Op: "open", Path: "/home/dev/proj/state.db", RequestedPath: "state.db", Flags: "O_WRONLY|O_CREAT|O_TRUNC",
		PID: 5100, PPID: 5000, Comm: "python3", Cmdline: []string{"python3", "-m", "pytest"}, Chain: []Proc{}, Count: 1,
		First: t0.Add(10 * time.Second), Action: ActionReported, Severity: SeverityLeftBehind,
		Runner: RunnerPytest, Package: "tests/test_state.py", Test: "tests/test_state.py::test_a", Phase: "call"}}, r.Violations...)
	return r
}

func TestCrossReads(t *testing.T) {
	a, b := goTestAccess("TestA", "open", time.Second), goTestAccess("TestB", "", 2*time.Second)
	t.Run("another test's write", func(t *testing.T) {
		var c CrossReads
		c.Wrote(stateFile, a)
		if !c.Read(stateFile, "/p/state.json", b) {
			t.Fatal("TestB's read of TestA's file is not a cross-test read")
		}
		want := []CrossTestRead{{Path: "/p/state.json", WrittenBy: []Access{a}, ReadBy: b}}
		if got := c.Reads(); !reflect.DeepEqual(got, want) {
			t.Errorf("Reads() = %+v, want %+v", got, want)
		}
	})
	t.Run("its own write", func(t *testing.T) {
		var c CrossReads
		c.Wrote(stateFile, a)
		cleanup := a
		cleanup.Op, cleanup.Phase = "", PhaseCleanup
		if c.Read(stateFile, "/p/state.json", cleanup) {
			t.Error("TestA's read, in its cleanup, of its own write is a cross-test read")
		}
		c.Wrote(stateFile, b)
		if c.Read(stateFile, "/p/state.json", b) {
			t.Error("TestB read what it wrote itself after TestA: reported")
		}
		if n := len(c.Reads()); n != 0 {
			t.Errorf("%d cross-test reads, want none", n)
		}
	})
	t.Run("once per reader", func(t *testing.T) {
		var c CrossReads
		c.Wrote(stateFile, a)
		c.Wrote(stateFile, a) // a repeat adds no writer
		for range 3 {
			c.Read(stateFile, "/p/state.json", b)
		}
		got := c.Reads()
		if len(got) != 1 || len(got[0].WrittenBy) != 1 {
			t.Errorf("Reads() = %+v, want one read with one writer", got)
		}
	})
	t.Run("a new file with the inode number", func(t *testing.T) {
		var c CrossReads
		c.Wrote(stateFile, a)
		c.Created(stateFile)
		if c.Written(stateFile) || c.Read(stateFile, "/p/other", b) {
			t.Error("a file made anew keeps the writers of the one before")
		}
	})
	t.Run("another generation of the inode number", func(t *testing.T) {
		var c CrossReads
		c.Wrote(stateFile, a)
		later := stateFile
		later.Gen++
		if c.Written(later) || c.Read(later, "/p/other", b) {
			t.Error("a file with the inode number and another generation keeps the writers of the one before")
		}
	})
	t.Run("no test", func(t *testing.T) {
		var c CrossReads
		pkg := a
		pkg.Test, pkg.Phase = "", PhaseSetup
		c.Wrote(stateFile, pkg)
		if c.Written(stateFile) {
			t.Error("a write outside the tests counts as a test's")
		}
		c.Wrote(stateFile, a)
		if c.Read(stateFile, "/p/state.json", Access{PID: 1, Comm: "cat"}) {
			t.Error("a read by a process no runner attributes is a cross-test read")
		}
	})
	t.Run("limit", func(t *testing.T) {
		c := CrossReads{Limit: 1}
		c.Wrote(stateFile, a)
		c.Read(stateFile, "/p/state.json", b)
		c.Read(stateFile, "/p/state.json", goTestAccess("TestC", "", 3*time.Second))
		if len(c.Reads()) != 1 || c.Unlisted != 1 {
			t.Errorf("%d listed, %d unlisted; want 1 and 1", len(c.Reads()), c.Unlisted)
		}
	})
}
