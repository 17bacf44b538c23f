package session_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/reporttest"
	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/report"
)

func TestCrossReads(t *testing.T) {
	a, b := reporttest.GoTestAccess("TestA", "open", time.Second), reporttest.GoTestAccess("TestB", "", 2*time.Second)
	t.Run("another test's write", func(t *testing.T) {
		var c session.CrossReads
		c.Wrote(reporttest.StateFile, a)
		if !c.Read(reporttest.StateFile, "/p/state.json", b) {
			t.Fatal("TestB's read of TestA's file is not a cross-test read")
		}
		want := []report.CrossTestRead{{Path: "/p/state.json", WrittenBy: []report.Access{a}, ReadBy: b}}
		if got := c.Reads(); !reflect.DeepEqual(got, want) {
			t.Errorf("Reads() = %+v, want %+v", got, want)
		}
	})
	t.Run("its own write", func(t *testing.T) {
		var c session.CrossReads
		c.Wrote(reporttest.StateFile, a)
		cleanup := a
		cleanup.Op, cleanup.Phase = "", report.PhaseCleanup
		if c.Read(reporttest.StateFile, "/p/state.json", cleanup) {
			t.Error("TestA's read, in its cleanup, of its own write is a cross-test read")
		}
		c.Wrote(reporttest.StateFile, b)
		if c.Read(reporttest.StateFile, "/p/state.json", b) {
			t.Error("TestB read what it wrote itself after TestA: reported")
		}
		if n := len(c.Reads()); n != 0 {
			t.Errorf("%d cross-test reads, want none", n)
		}
	})
	t.Run("once per reader", func(t *testing.T) {
		var c session.CrossReads
		c.Wrote(reporttest.StateFile, a)
		c.Wrote(reporttest.StateFile, a) // a repeat adds no writer
		for range 3 {
			c.Read(reporttest.StateFile, "/p/state.json", b)
		}
		got := c.Reads()
		if len(got) != 1 || len(got[0].WrittenBy) != 1 {
			t.Errorf("Reads() = %+v, want one read with one writer", got)
		}
	})
	t.Run("a new file with the inode number", func(t *testing.T) {
		var c session.CrossReads
		c.Wrote(reporttest.StateFile, a)
		c.Created(reporttest.StateFile)
		if c.Written(reporttest.StateFile) || c.Read(reporttest.StateFile, "/p/other", b) {
			t.Error("a file made anew keeps the writers of the one before")
		}
	})
	t.Run("another generation of the inode number", func(t *testing.T) {
		var c session.CrossReads
		c.Wrote(reporttest.StateFile, a)
		later := reporttest.StateFile
		later.Gen++
		if c.Written(later) || c.Read(later, "/p/other", b) {
			t.Error("a file with the inode number and another generation keeps the writers of the one before")
		}
	})
	t.Run("no test", func(t *testing.T) {
		var c session.CrossReads
		pkg := a
		pkg.Test, pkg.Phase = "", report.PhaseSetup
		c.Wrote(reporttest.StateFile, pkg)
		if c.Written(reporttest.StateFile) {
			t.Error("a write outside the tests counts as a test's")
		}
		c.Wrote(reporttest.StateFile, a)
		if c.Read(reporttest.StateFile, "/p/state.json", report.Access{PID: 1, Comm: "cat"}) {
			t.Error("a read by a process no runner attributes is a cross-test read")
		}
	})
	t.Run("limit", func(t *testing.T) {
		c := session.CrossReads{Limit: 1}
		c.Wrote(reporttest.StateFile, a)
		c.Read(reporttest.StateFile, "/p/state.json", b)
		c.Read(reporttest.StateFile, "/p/state.json", reporttest.GoTestAccess("TestC", "", 3*time.Second))
		if len(c.Reads()) != 1 || c.Unlisted != 1 {
			t.Errorf("%d listed, %d unlisted; want 1 and 1", len(c.Reads()), c.Unlisted)
		}
	})
}
