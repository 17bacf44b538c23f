package attribution

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

const (
	goCmd = 100 // go test
	bin   = 200 // pkg.test
	child = 300 // a process a test started
)

// run replays records in order and returns who made each write.
type replay struct {
	tree  *Tree
	tests *Tests
}

func newReplay() *replay {
	tree := NewTree(1, 0, []string{"go", "test", "./..."})
	tree.SetRoot(goCmd)
	tree.Observe(&tracer.Event{Kind: tracer.KindFork, TGID: bin, PPID: goCmd})
	tests := NewTests(tree)
	tests.GoBinary(bin, bin, "example.com/app", true, "", true)
	return &replay{tree: tree, tests: tests}
}

func (r *replay) start(token uint64, name string) {
	ev := &tracer.Event{Kind: tracer.KindTestStart, TGID: bin, Test: token, Go: tracer.GoProc | tracer.GoG | tracer.GoTest}
	ev.SetSlot(tracer.SlotPath, []byte(name))
	r.tests.Observe(ev, nil)
}

func (r *replay) end(token uint64) {
	r.tests.Observe(&tracer.Event{Kind: tracer.KindTestEnd, TGID: bin, Test: token}, nil)
}

// write by the test binary's goroutine working for token (0: a
// goroutine no test started).
func (r *replay) write(token uint64) report.Who {
	ev := &tracer.Event{Kind: tracer.KindWrite, TGID: bin, Go: tracer.GoProc | tracer.GoG}
	if token != 0 {
		ev.Go |= tracer.GoTest
		ev.Test = token
	}
	return r.tests.Attribute(ev)
}

func TestGoAttributionFollowsRecordOrder(t *testing.T) {
	r := newReplay()
	if w := r.write(0); w.Phase != report.PhaseSetup || w.Test != "" || w.Package != "example.com/app" {
		t.Errorf("before the tests: %+v", w)
	}
	r.start(1, "") // the root T on the main goroutine
	r.start(2, "TestA")
	if w := r.write(2); w.Test != "TestA" || w.Phase != report.PhaseTest {
		t.Errorf("TestA: %+v", w)
	}
	r.end(2)
	if w := r.write(2); w.Test != "TestA" || w.Phase != report.PhaseCleanup {
		t.Errorf("TestA's cleanup: %+v", w)
	}
	r.start(3, "TestP1")
	r.start(4, "TestP2")
	if w := r.write(4); w.Test != "TestP2" || len(w.AmbiguousTests) != 0 {
		t.Errorf("a parallel test's own goroutine: %+v", w)
	}
	// A goroutine no test is known to have started, while two run: both
	// named, neither chosen.
	if w := r.write(0); w.Test != "" || !slices.Equal(w.AmbiguousTests, []string{"TestP1", "TestP2"}) {
		t.Errorf("unknown goroutine: %+v", w)
	}
	// A process forked by TestP1's goroutine, and its writes.
	r.tests.Observe(&tracer.Event{Kind: tracer.KindFork, TGID: child, PPID: bin, Test: 3}, nil)
	r.tree.Observe(&tracer.Event{Kind: tracer.KindFork, TGID: child, PPID: bin})
	if w := r.tests.Attribute(&tracer.Event{Kind: tracer.KindWrite, TGID: child}); w.Test != "TestP1" {
		t.Errorf("child of TestP1: %+v", w)
	}
	r.end(3)
	r.end(4)
	if w := r.write(0); w.Phase != report.PhaseTeardown || len(w.AmbiguousTests) != 0 {
		t.Errorf("after the tests: %+v", w)
	}
	if w := r.write(1); w.Phase != report.PhaseTeardown || w.Test != "" {
		t.Errorf("main goroutine after m.Run: %+v", w)
	}
	var ids []string
	for _, tr := range r.tests.Results() {
		ids = append(ids, tr.ID)
	}
	if !slices.Equal(ids, []string{"TestA", "TestP1", "TestP2"}) {
		t.Errorf("tests: %v", ids)
	}
}

func TestCurrentTests(t *testing.T) {
	r := newReplay()
	r.start(1, "")
	r.start(2, "TestA")
	r.start(3, "TestB")
	if got := r.tests.Current(); !slices.Equal(got, []string{"TestA", "TestB"}) {
		t.Errorf("Current() = %v", got)
	}
	r.end(2)
	if got := r.tests.Current(); !slices.Equal(got, []string{"TestB"}) {
		t.Errorf("Current() = %v", got)
	}
}

func TestProtocolMarkers(t *testing.T) {
	tree := NewTree(1, 0, []string{"pytest"})
	tree.SetRoot(10)
	ts := NewTests(tree)
	mark := func(tgid uint32, path string) {
		t.Helper()
		if !ts.Marker(tgid, path) {
			t.Fatalf("%s: not taken as a marker", path)
		}
	}
	if ts.Marker(10, "/dev/null") || ts.Marker(10, "/tmp/dev/null/.writewatch/1/begin") {
		t.Error("a path outside the prefix was taken as a marker")
	}
	mark(10, "/dev/null/.writewatch/1/begin?runner=pytest&suite=t.py&id=t.py%3A%3Atest_a%5Bx%2Fy%5D&phase=setup&fixture=db&file=%2Fsrc%2Ft.py&line=3")
	w := ts.Attribute(&tracer.Event{Kind: tracer.KindWrite, TGID: 10})
	want := report.Who{Runner: "pytest", Package: "t.py", Test: "t.py::test_a[x/y]", Phase: "setup", Fixture: "db", TestFile: "/src/t.py", TestLine: 3}
	if !reflect.DeepEqual(w, want) || w.TestFile != want.TestFile || w.TestLine != 3 || w.Fixture != "db" {
		t.Errorf("after begin: %+v", w)
	}
	// A child forked now works for the same test, whatever its parent
	// does next.
	ts.Observe(&tracer.Event{Kind: tracer.KindFork, TGID: 11, PPID: 10}, nil)
	mark(10, "/dev/null/.writewatch/1/end?runner=pytest&suite=t.py&phase=session")
	if w := ts.Attribute(&tracer.Event{Kind: tracer.KindWrite, TGID: 11}); w.Test != "t.py::test_a[x/y]" {
		t.Errorf("child: %+v", w)
	}
	if w := ts.Attribute(&tracer.Event{Kind: tracer.KindWrite, TGID: 10}); w.Test != "" || w.Phase != "session" {
		t.Errorf("after end: %+v", w)
	}
	mark(10, "/dev/null/.writewatch/1/result?runner=pytest&suite=t.py&id=t.py%3A%3Atest_a%5Bx%2Fy%5D&outcome=failed&seconds=0.25&message=boom")
	res := ts.Results()
	if len(res) != 1 || res[0].Outcome != "failed" || res[0].Seconds != 0.25 || res[0].Message != "boom" || res[0].File != "/src/t.py" {
		t.Errorf("results: %+v", res)
	}
	// Unknown versions and verbs are markers too, ignored.
	mark(10, "/dev/null/.writewatch/2/begin?id=x")
	mark(10, "/dev/null/.writewatch/1/frobnicate?id=x")
	if w := ts.Attribute(&tracer.Event{Kind: tracer.KindWrite, TGID: 10}); w.Test != "" {
		t.Errorf("an unknown marker changed the state: %+v", w)
	}
}

func TestOnCurrent(t *testing.T) {
	r := newReplay()
	var calls [][]string
	r.tests.OnCurrent = func(running []string) { calls = append(calls, running) }
	r.start(1, "")
	r.start(2, "TestA")
	r.end(2)
	want := [][]string{{"TestA"}, nil}
	if len(calls) != len(want) || !slices.Equal(calls[0], want[0]) || len(calls[1]) != 0 {
		t.Errorf("OnCurrent calls: %q, want %q", calls, want)
	}
}

// A process that exits no longer counts as running its test, and its
// entry is gone; the children it started keep theirs.
func TestExitForgetsTheProcess(t *testing.T) {
	tree := NewTree(1, 0, []string{"pytest"})
	tree.SetRoot(10)
	ts := NewTests(tree)
	if !ts.Marker(10, "/dev/null/.writewatch/1/begin?runner=pytest&suite=t.py&id=t.py%3A%3Atest_a&phase=call") {
		t.Fatal("not a marker")
	}
	ts.Observe(&tracer.Event{Kind: tracer.KindFork, TGID: 11, PPID: 10}, nil)
	ts.Observe(&tracer.Event{Kind: tracer.KindFork, TGID: 12, PPID: 11}, nil)
	ts.Observe(&tracer.Event{Kind: tracer.KindExit, TGID: 11}, nil)
	if _, ok := ts.ctx[11]; ok || len(ts.ctx) != 2 {
		t.Errorf("after 11 exited: %v", ts.ctx)
	}
	if w := ts.Attribute(&tracer.Event{Kind: tracer.KindWrite, TGID: 12}); w.Test != "t.py::test_a" {
		t.Errorf("the grandchild lost its test: %+v", w)
	}
	if !ts.Marker(10, "/dev/null/.writewatch/1/end?runner=pytest&suite=t.py&phase=session") {
		t.Fatal("not a marker")
	}
	ts.Observe(&tracer.Event{Kind: tracer.KindExit, TGID: 12}, nil)
	if got := ts.Current(); len(got) != 0 {
		t.Errorf("Current() = %v after every process of the test exited", got)
	}
}

func TestProtocolValuesAreValidated(t *testing.T) {
	ts := NewTests(NewTree(1, 0, []string{"pytest"}))
	for _, q := range []string{
		"result?id=a&outcome=passed&seconds=NaN",
		"result?id=b&outcome=passed&seconds=1e999",
		"result?id=c&outcome=passed&seconds=-1",
		"result?id=d&outcome=exploded&seconds=0.5",
		"begin?id=e&line=x",
		"result?id=f&outcome=failed&seconds=2.5&line=7&file=t.py",
	} {
		if !ts.Marker(10, MarkerPrefix+"1/"+q) {
			t.Fatalf("%s: not taken as an announcement", q)
		}
	}
	got := map[string]report.TestResult{}
	for _, r := range ts.Results() {
		got[r.ID] = r
	}
	for _, id := range []string{"a", "b", "c"} {
		if got[id].Seconds != 0 || got[id].Outcome != "passed" {
			t.Errorf("%s: %+v, want seconds 0 and outcome passed", id, got[id])
		}
	}
	if got["d"].Outcome != "" || got["d"].Seconds != 0.5 {
		t.Errorf("d: %+v, want no outcome and 0.5 s", got["d"])
	}
	if f := got["f"]; f.Outcome != "failed" || f.Seconds != 2.5 || f.Line != 7 {
		t.Errorf("f: %+v", f)
	}
	notes := ts.Notes()
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "5 runner-protocol values were not valid") ||
		!strings.Contains(notes[0], `result seconds="NaN" (test "a")`) || !strings.Contains(notes[0], `begin line="x" (test "e")`) {
		t.Errorf("notes = %q", notes)
	}
	if _, err := json.Marshal(ts.Results()); err != nil {
		t.Errorf("results do not encode: %v", err)
	}
}

func TestProtocolTestsAreBounded(t *testing.T) {
	ts := NewTests(NewTree(1, 0, []string{"pytest"}))
	for i := range MaxTests + 5 {
		ts.Marker(10, fmt.Sprintf("%s1/result?id=t%d&outcome=passed", MarkerPrefix, i))
	}
	if n := len(ts.Results()); n != MaxTests {
		t.Errorf("%d tests kept, want %d", n, MaxTests)
	}
	notes := ts.Notes()
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "5 test announcements past the first 100000 tests") {
		t.Errorf("notes = %q", notes)
	}
}

// Examples, benchmarks and fuzz targets are named like tests. An example
// runs on the main goroutine and has no cleanups: after it, that
// goroutine is the package's again. A benchmark runs in rounds, each
// starting anew (on a goroutine of its own) and ending with its
// cleanups. Without TestMain, the phases outside the tests are init and
// after.
func TestGoExamplesBenchmarksFuzz(t *testing.T) {
	r := newReplay()
	r.tests.bins[bin].main = false
	if w := r.write(0); w.Phase != report.PhaseInit {
		t.Errorf("before the tests, no TestMain: %+v", w)
	}
	r.start(1, "")
	r.start(2, "FuzzParse")
	if w := r.write(2); w.Test != "FuzzParse" || w.Phase != report.PhaseTest {
		t.Errorf("fuzz target: %+v", w)
	}
	r.start(3, "FuzzParse/seed#0")
	r.end(3)
	r.end(2)
	r.start(4, "ExampleSave")
	if w := r.write(4); w.Test != "ExampleSave" || w.Phase != report.PhaseTest {
		t.Errorf("example: %+v", w)
	}
	r.end(4)
	if w := r.write(4); w.Test != "" || w.Phase != report.PhaseAfter {
		t.Errorf("after the example, on the main goroutine: %+v", w)
	}
	r.start(5, "Main") // the B running the benchmarks
	if w := r.write(5); w.Test != "" || w.Phase != report.PhaseAfter {
		t.Errorf("the benchmarks' root: %+v", w)
	}
	r.start(6, "BenchmarkSave")
	r.end(6)
	r.start(7, "BenchmarkSave") // the next round, on another goroutine
	for _, tok := range []uint64{6, 7} {
		if w := r.write(tok); w.Test != "BenchmarkSave" || w.Phase != report.PhaseTest {
			t.Errorf("benchmark round %d: %+v", tok, w)
		}
	}
	var ids []string
	for _, res := range r.tests.Results() {
		ids = append(ids, res.ID)
	}
	if want := []string{"FuzzParse", "FuzzParse/seed#0", "ExampleSave", "BenchmarkSave"}; !slices.Equal(ids, want) {
		t.Errorf("tests %q, want %q", ids, want)
	}
}
