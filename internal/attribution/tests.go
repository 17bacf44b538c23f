package attribution

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// Test is one test seen in the run.
type Test struct {
	Runner  string
	Package string
	ID      string
	File    string
	Line    int
	// Outcome, Seconds and Message are the runner's result, when it told.
	Outcome string
	Seconds float64
	Message string
	// Fixtures are the fixtures the test uses, as its runner named them
	// (the protocol's fixtures field).
	Fixtures []string

	root  bool   // Go: the unnamed T running a package's tests, or the B of its benchmarks
	tgid  uint32 // Go: the test binary
	ended bool   // Go: the test function returned
	kind  goKind // Go: a test, an example, a benchmark or a fuzz target
}

// goKind is what a Go test function is, from its name.
type goKind uint8

const (
	goTestFunc goKind = iota
	goExample
	goBenchmark
	goFuzz
)

// benchRoot is the name of the B that runs a package's benchmarks.
const benchRoot = "Main"

// kindOf tells a test's kind from its full name: its top-level part is
// TestX, ExampleX, BenchmarkX or FuzzX.
func kindOf(id string) goKind {
	top, _, _ := strings.Cut(id, "/")
	switch {
	case strings.HasPrefix(top, "Example"):
		return goExample
	case strings.HasPrefix(top, "Benchmark"):
		return goBenchmark
	case strings.HasPrefix(top, "Fuzz"):
		return goFuzz
	}
	return goTestFunc
}

// goBin is one followed Go test binary.
type goBin struct {
	pkg     string
	started bool    // a named test has started
	running []*Test // named tests started and not ended, in start order
	root    *Test   // the unnamed T of the current run
	follow  bool    // its uprobes are attached
	problem string  // why not
	main    bool    // the package defines TestMain
	proc    *report.PackageRun
	benches map[string]*Test // benchmarks by name: each runs in several rounds
	tops    map[string]bool  // the top-level tests started (Stop: what did not run)
}

// Tests follows test boundaries: Go tests from the kernel's uprobe
// records, other runners from the boundary protocol (see Marker). Records
// must be given in the order the kernel produced them, the order of the
// ring buffer, so a write and the boundaries around it are judged in the
// order they happened.
type Tests struct {
	tree    *Tree
	tokens  map[uint64]*Test // Go tests by kernel token
	bins    map[uint32]*goBin
	ctx     map[uint32]report.Who // per process: what it and its children work for
	byKey   map[string]*Test
	order   []*Test
	pkgRuns []*report.PackageRun

	// Past MaxTests, tests are counted, not kept: a runner that
	// announces without end cannot grow writewatch's memory without end.
	unlisted  uint64
	overflow  Test     // what test returns past MaxTests; never listed
	badValues uint64   // protocol values ignored
	badQuoted []string // the first maxBadValues of them

	mu      sync.Mutex
	current []string // for Current

	// announcers are the processes that announced tests (the
	// protocol), with the runner of their last announcement; plans,
	// the tests each said it would run, from planned, the tests of
	// every plan, each once (plannedAt: by runner, suite and id).
	announcers map[uint32]string
	plans      map[uint32]*plan
	planned    []report.TestRef
	plannedAt  map[string]int32

	// OnCurrent, if set, is called with the tests running whenever that
	// list changes, from the goroutine that feeds the records.
	OnCurrent func(running []string)
}

// MaxTests is how many tests a run keeps (their ids, results and
// messages); more are counted in the report's notes.
const MaxTests = 100_000

// NewTests starts following tests of the processes of tree.
func NewTests(tree *Tree) *Tests {
	return &Tests{
		tree:   tree,
		tokens: map[uint64]*Test{},
		bins:   map[uint32]*goBin{},
		ctx:    map[uint32]report.Who{},
		byKey:  map[string]*Test{},
	}
}

// GoBinary records that process tgid is the Go test binary of pkg; follow
// says whether its tests are told apart (uprobes attached), else problem
// says why not; testMain, whether the package defines TestMain.
func (ts *Tests) GoBinary(tgid uint32, pid int, pkg string, follow bool, problem string, testMain bool) {
	run := &report.PackageRun{Package: pkg, PID: pid, Followed: follow, Problem: problem, TestMain: testMain}
	ts.pkgRuns = append(ts.pkgRuns, run)
	ts.bins[tgid] = &goBin{pkg: pkg, follow: follow, problem: problem, main: testMain, proc: run}
	// A test binary started from inside a test keeps working for it.
	delete(ts.ctx, tgid)
}

// Observe updates the tests from one record: test starts and ends, and
// forks, whose child inherits what its parent works for.
func (ts *Tests) Observe(ev *tracer.Event, source func(tgid uint32, pc uint64, name string) (string, int)) {
	switch ev.Kind {
	case tracer.KindTestStart:
		ts.start(ev, source)
	case tracer.KindTestEnd:
		t := ts.tokens[ev.Test]
		if t == nil || t.ended {
			return
		}
		t.ended = true
		if bin := ts.bins[t.tgid]; bin != nil {
			bin.running = slices.DeleteFunc(bin.running, func(r *Test) bool { return r == t })
		}
		ts.setCurrent()
	case tracer.KindFork:
		var w report.Who
		if ev.Test != 0 {
			w = ts.goWho(ts.tokens[ev.Test], nil)
		} else if bin := ts.bins[ev.PPID]; bin != nil {
			w = ts.unknownGoroutine(bin)
		} else {
			w = ts.ctx[ev.PPID]
		}
		if w.Key() != "" || w.Runner != "" {
			ts.ctx[ev.TGID] = w
		}
	case tracer.KindExit:
		// The process makes no more records; its children keep their
		// own copy of what it worked for.
		w, had := ts.ctx[ev.TGID]
		delete(ts.ctx, ev.TGID)
		if bin := ts.bins[ev.TGID]; bin != nil {
			for _, t := range bin.running {
				t.ended = true
			}
			bin.running = nil
			ts.setCurrent()
		} else if had && w.Test != "" {
			ts.setCurrent()
		}
	}
}

// start follows a test, example, benchmark or fuzz target that starts.
func (ts *Tests) start(ev *tracer.Event, source func(tgid uint32, pc uint64, name string) (string, int)) {
	bin := ts.bins[ev.TGID]
	if bin == nil {
		return
	}
	id := ev.String(tracer.SlotPath)
	if t := bin.benches[id]; t != nil {
		// Another round of a benchmark: the same one.
		ts.tokens[ev.Test] = t
		t.ended = false
		if !slices.Contains(bin.running, t) {
			bin.running = append(bin.running, t)
			ts.setCurrent()
		}
		return
	}
	t := &Test{Runner: report.RunnerGo, Package: bin.pkg, ID: id, tgid: ev.TGID, kind: kindOf(id)}
	ts.tokens[ev.Test] = t
	if t.ID == "" || t.ID == benchRoot {
		t.root = true
		bin.root = t
		return
	}
	if t.kind == goBenchmark {
		if bin.benches == nil {
			bin.benches = map[string]*Test{}
		}
		bin.benches[id] = t
	}
	if source != nil {
		t.File, t.Line = source(ev.TGID, ev.EntryPC(), t.ID)
	}
	if bin.tops == nil {
		bin.tops = map[string]bool{}
	}
	bin.tops[topLevel(id)] = true
	bin.started = true
	bin.running = append(bin.running, t)
	if len(ts.order) < MaxTests {
		ts.order = append(ts.order, t)
	} else {
		ts.unlisted++
	}
	ts.setCurrent()
}

// Attribute says who made write record ev.
func (ts *Tests) Attribute(ev *tracer.Event) report.Who {
	bin := ts.bins[ev.TGID]
	if bin == nil {
		return ts.ctx[ev.TGID]
	}
	if ev.Go&tracer.GoTest != 0 {
		if t := ts.tokens[ev.Test]; t != nil {
			return ts.goWho(t, bin)
		}
	}
	return ts.unknownGoroutine(bin)
}

// goWho describes the work of Go test t.
func (ts *Tests) goWho(t *Test, bin *goBin) report.Who {
	if t == nil {
		return report.Who{}
	}
	if bin == nil {
		bin = ts.bins[t.tgid]
	}
	// An example has no cleanups: once it returned, its goroutine (the
	// test binary's main one) goes on with the package's own code. A
	// benchmark's rounds each end with its cleanups: between them it
	// still runs.
	if t.root || (t.ended && t.kind == goExample) {
		return ts.packageWho(bin)
	}
	w := report.Who{Runner: report.RunnerGo, Package: t.Package, Test: t.ID, Phase: report.PhaseTest, TestFile: t.File, TestLine: t.Line}
	if t.ended && t.kind != goBenchmark {
		w.Phase = report.PhaseCleanup
	}
	return w
}

// packageWho is the package outside its tests: before the first test
// started, setup (init and TestMain) or, without TestMain, init; after,
// teardown (TestMain) or, without it, after.
func (ts *Tests) packageWho(bin *goBin) report.Who {
	if bin == nil {
		return report.Who{}
	}
	w := report.Who{Runner: report.RunnerGo, Package: bin.pkg, Phase: report.PhaseInit}
	switch {
	case bin.main && bin.started:
		w.Phase = report.PhaseTeardown
	case bin.main:
		w.Phase = report.PhaseSetup
	case bin.started:
		w.Phase = report.PhaseAfter
	}
	return w
}

// unknownGoroutine describes a write by a goroutine no test is known to
// have started: the package alone when no test runs, else the set of
// tests running, never one name.
func (ts *Tests) unknownGoroutine(bin *goBin) report.Who {
	if len(bin.running) == 0 {
		return ts.packageWho(bin)
	}
	w := report.Who{Runner: report.RunnerGo, Package: bin.pkg}
	for _, t := range bin.running {
		w.AmbiguousTests = append(w.AmbiguousTests, t.ID)
	}
	slices.Sort(w.AmbiguousTests)
	w.AmbiguousTests = slices.Compact(w.AmbiguousTests)
	return w
}

// Results lists every test seen, in start order.
func (ts *Tests) Results() []report.TestResult {
	out := make([]report.TestResult, 0, len(ts.order))
	for _, t := range ts.order {
		out = append(out, report.TestResult{
			Runner: t.Runner, Package: t.Package, ID: t.ID, File: t.File, Line: t.Line,
			Outcome: t.Outcome, Seconds: t.Seconds, Message: t.Message,
		})
	}
	return out
}

// Packages lists the Go test binaries that ran.
func (ts *Tests) Packages() []report.PackageRun {
	out := make([]report.PackageRun, 0, len(ts.pkgRuns))
	for _, p := range ts.pkgRuns {
		out = append(out, *p)
	}
	return out
}

// Result records a runner's result for a test, creating the test when it
// was not seen start (go test -json output is read beside the records).
func (ts *Tests) Result(runner, pkg, id, outcome string, seconds float64, message string) {
	t := ts.test(runner, pkg, id)
	t.Outcome, t.Seconds = outcome, seconds
	if message != "" {
		t.Message = message
	}
}

// test finds or adds the test (runner, pkg, id).
func (ts *Tests) test(runner, pkg, id string) *Test {
	key := runner + "\x00" + pkg + "\x00" + id
	if t := ts.byKey[key]; t != nil {
		return t
	}
	if runner == report.RunnerGo {
		for _, t := range ts.order {
			if t.Runner == runner && t.Package == pkg && t.ID == id {
				ts.byKey[key] = t
				return t
			}
		}
	}
	if len(ts.order) >= MaxTests {
		ts.unlisted++
		ts.overflow = Test{Runner: runner, Package: pkg, ID: id}
		return &ts.overflow
	}
	t := &Test{Runner: runner, Package: pkg, ID: id}
	ts.byKey[key] = t
	ts.order = append(ts.order, t)
	return t
}

// Notes says what the run's tests could not record: tests past
// MaxTests, and protocol values that were ignored.
func (ts *Tests) Notes() []string {
	var notes []string
	if ts.unlisted > 0 {
		notes = append(notes, fmt.Sprintf("%d test announcements past the first %d tests were counted, not kept", ts.unlisted, MaxTests))
	}
	if ts.badValues > 0 {
		notes = append(notes, fmt.Sprintf("%d runner-protocol values were not valid and were ignored: %s", ts.badValues, strings.Join(ts.badQuoted, "; ")))
	}
	return notes
}

// Current lists the tests running now, as far as the records read so far
// tell; safe to call from any goroutine (for a progress line).
func (ts *Tests) Current() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.current)
}

func (ts *Tests) setCurrent() {
	var cur []string
	for _, bin := range ts.bins {
		for _, t := range bin.running {
			cur = append(cur, t.ID)
		}
	}
	for _, w := range ts.ctx {
		if w.Test != "" && !slices.Contains(cur, w.Test) {
			cur = append(cur, w.Test)
		}
	}
	slices.Sort(cur)
	ts.mu.Lock()
	changed := !slices.Equal(ts.current, cur)
	ts.current = cur
	ts.mu.Unlock()
	if changed && ts.OnCurrent != nil {
		ts.OnCurrent(cur)
	}
}
