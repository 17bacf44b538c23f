package session_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/session/sessiontest"
)

// A Go test and its own subtests are one test for cross-test reads: a
// subtest always runs inside its parent. TestParent writes state.txt
// and its subtest reads it; the subtest writes child.txt and its parent
// reads it after t.Run: no cross-test read. Two subtests of one parent
// are two tests: TestParent/b reading what TestParent/a wrote is one.
func TestSubtestReadsItsParentsWrite(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	bin := r.Fork(r.PID)
	r.Exec(bin, "/tmp/go-build1/b001/app.test", "-test.v")
	r.GoTest(bin, "example.com/app")
	created := []sessiontest.Option{sessiontest.Flags(unix.O_WRONLY | unix.O_CREAT), sessiontest.Created()}
	r.TestStart(bin, 1, "TestParent")
	r.File("state.txt", "")
	r.Write(bin, ops.Open, "state.txt", append(created, sessiontest.InTest(1))...)
	r.TestStart(bin, 2, "TestParent/child")
	r.Read(bin, "state.txt", sessiontest.InTest(2))
	r.File("child.txt", "")
	r.Write(bin, ops.Open, "child.txt", append(created, sessiontest.InTest(2))...)
	r.TestEnd(bin, 2)
	r.Read(bin, "child.txt", sessiontest.InTest(1))
	r.TestStart(bin, 3, "TestParent/a")
	r.File("sibling.txt", "")
	r.Write(bin, ops.Open, "sibling.txt", append(created, sessiontest.InTest(3))...)
	r.TestEnd(bin, 3)
	r.TestStart(bin, 4, "TestParent/b")
	r.Read(bin, "sibling.txt", sessiontest.InTest(4))
	r.TestEnd(bin, 4)
	// A test whose name starts with its neighbour's is no subtest of it.
	r.TestStart(bin, 5, "TestParentless")
	r.Read(bin, "state.txt", sessiontest.InTest(5))
	r.TestEnd(bin, 5)
	r.TestEnd(bin, 1)
	r.Exit(bin)
	rep := r.Report()

	got := map[string]string{}
	for _, x := range rep.CrossTestReads {
		got[x.ReadBy.Test] = x.WrittenBy[0].Test
	}
	want := map[string]string{"TestParent/b": "TestParent/a", "TestParentless": "TestParent"}
	if len(got) != len(want) || got["TestParent/b"] != "TestParent/a" || got["TestParentless"] != "TestParent" {
		t.Errorf("cross-test reads (reader: writer) %v, want %v", got, want)
	}
}

// A pytest test reading what the setup of its own fixture wrote, though
// that setup ran in an earlier test (a fixture of module scope), reads
// no other test's write: run alone, it would set the fixture up itself.
// A test that does not use the fixture and reads its file does.
func TestPytestFixtureSetUpInAnotherTest(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	py := r.Fork(r.PID)
	begin := func(query string) { r.Announce(py, "begin", "runner=pytest&suite=test_ws.py&"+query) }
	begin("id=test_ws.py::test_c&phase=setup&fixtures=workspace,tmp_path")
	begin("id=test_ws.py::test_c&phase=setup&fixture=workspace")
	r.File("ws.txt", "")
	r.Write(py, ops.Open, "ws.txt", sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT), sessiontest.Created())
	begin("id=test_ws.py::test_c&phase=call")
	r.Read(py, "ws.txt")
	begin("id=test_ws.py::test_d&phase=setup&fixtures=request,workspace")
	begin("id=test_ws.py::test_d&phase=call")
	r.Read(py, "ws.txt")
	begin("id=test_ws.py::test_e&phase=setup&fixtures=tmp_path")
	begin("id=test_ws.py::test_e&phase=call")
	r.Read(py, "ws.txt")
	r.Exit(py)
	rep := r.Report()

	if len(rep.CrossTestReads) != 1 || rep.CrossTestReads[0].ReadBy.Test != "test_ws.py::test_e" {
		t.Errorf("cross-test reads %+v, want test_e's alone", rep.CrossTestReads)
	}
}
