package attribution

import (
	"fmt"
	"strings"

	"github.com/writewatch/writewatch/internal/gobin"
	"github.com/writewatch/writewatch/report"
)

// plan is the tests a process announced it would run (the protocol's
// plan verb), in order, as indexes into Tests.planned.
type plan struct {
	runner string
	tests  []int32
	// total is the number of tests announced in all, -1 when two
	// announcements disagreed; over, that some were past MaxTests.
	total int
	over  bool
}

// Stop is what the death of a killed process ends, taken when the kill
// is seen (Stopped), before its later records: the tests it ran itself,
// those running then, and where to find those it would have run next.
type Stop struct {
	// Runner is the runner of the tests the process ran itself:
	// report.RunnerGo for a Go test binary, the runner it announced
	// for; "" when it ran no tests itself (it only worked for one).
	Runner string
	// Running are the tests running in it, in the order they started
	// (the test killed among them).
	Running []report.TestRef
	bin     *goBin
	plan    *plan
}

// Stopped is what the death of process tgid, killed now, ends.
func (ts *Tests) Stopped(tgid uint32) Stop {
	if bin := ts.bins[tgid]; bin != nil {
		s := Stop{Runner: report.RunnerGo, bin: bin}
		for _, t := range bin.running {
			s.Running = append(s.Running, report.TestRef{Package: t.Package, ID: t.ID})
		}
		return s
	}
	runner, ok := ts.announcers[tgid]
	if !ok {
		return Stop{}
	}
	s := Stop{Runner: runner, plan: ts.plans[tgid]}
	if w := ts.ctx[tgid]; w.Test != "" {
		s.Running = []report.TestRef{{Package: w.Package, ID: w.Test}}
	}
	return s
}

// NotRun lists the tests that did not run because the process of stop
// died: those it would have run that never started. For a Go test
// binary these are funcs (its test functions, as its arguments select
// them; funcsErr says why they are not known) that it never started;
// for a runner, those of its plan that no process of the run began.
// When the list cannot be known, why says why.
func (ts *Tests) NotRun(stop Stop, funcs []gobin.TestFunc, funcsErr error) (notRun []report.TestResult, why string) {
	switch {
	case stop.bin != nil:
		return ts.goNotRun(stop.bin, funcs, funcsErr)
	case stop.Runner == "":
		return nil, ""
	case stop.plan == nil:
		return nil, "the runner had not announced which tests it would run (docs/protocol.md: plan)"
	}
	p := stop.plan
	switch {
	case p.over:
		return nil, fmt.Sprintf("the runner announced more tests than the %d a run keeps", MaxTests)
	case ts.unlisted > 0: // tests past MaxTests began unseen
		return nil, fmt.Sprintf("the run had more tests than the %d it keeps", MaxTests)
	case p.total < 0:
		return nil, "the runner's announcements of the tests it would run disagree on how many there are"
	case p.total != len(p.tests):
		return nil, fmt.Sprintf("the runner announced %d of the %d tests it would run", len(p.tests), p.total)
	}
	for _, i := range p.tests {
		ref := ts.planned[i]
		if ts.byKey[p.runner+"\x00"+ref.Package+"\x00"+ref.ID] == nil {
			notRun = append(notRun, report.TestResult{Runner: p.runner, Package: ref.Package, ID: ref.ID})
		}
	}
	return notRun, ""
}

// goNotRun lists funcs that bin never started.
func (ts *Tests) goNotRun(bin *goBin, funcs []gobin.TestFunc, funcsErr error) ([]report.TestResult, string) {
	switch {
	case !bin.follow:
		return nil, "its tests were not followed: " + bin.problem
	case funcsErr != nil:
		return nil, "its test functions could not be read: " + funcsErr.Error()
	}
	var out []report.TestResult
	for _, f := range funcs {
		if !bin.tops[f.Name] {
			out = append(out, report.TestResult{Runner: report.RunnerGo, Package: bin.pkg, ID: f.Name, File: f.File, Line: f.Line})
		}
	}
	return out, ""
}

// Conclude gives test r (found by its runner, package and id, or added)
// writewatch's outcome and message: those of a test a kill ended. A
// failure its runner told stays as the runner told it; its place is
// set when it was not known.
func (ts *Tests) Conclude(r report.TestResult) {
	t := ts.test(r.Runner, r.Package, r.ID)
	if t.File == "" {
		t.File, t.Line = r.File, r.Line
	}
	if t.Outcome != report.OutcomeFailed {
		t.Outcome, t.Message = r.Outcome, r.Message
	}
}

// announced notes that process tgid announced for runner.
func (ts *Tests) announced(tgid uint32, runner string) {
	if ts.announcers == nil {
		ts.announcers = map[uint32]string{}
	}
	ts.announcers[tgid] = runner
}

// addPlan adds to the plan of process tgid the tests ids of suite,
// total being the number of tests the plan holds in all.
func (ts *Tests) addPlan(tgid uint32, runner, suite string, ids []string, total int) {
	if ts.plans == nil {
		ts.plans, ts.plannedAt = map[uint32]*plan{}, map[string]int32{}
	}
	p := ts.plans[tgid]
	if p == nil || p.runner != runner {
		p = &plan{runner: runner, total: total}
		ts.plans[tgid] = p
	}
	if p.total != total {
		p.total = -1
	}
	for _, id := range ids {
		key := runner + "\x00" + suite + "\x00" + id
		i, ok := ts.plannedAt[key]
		if !ok {
			if len(ts.planned) >= MaxTests {
				p.over = true
				continue
			}
			i = int32(len(ts.planned))
			ts.planned = append(ts.planned, report.TestRef{Package: suite, ID: id})
			ts.plannedAt[key] = i
		}
		if len(p.tests) >= MaxTests {
			p.over = true
			continue
		}
		p.tests = append(p.tests, i)
	}
}

// topLevel is the top-level test of a Go test id: TestX of TestX/sub.
func topLevel(id string) string {
	top, _, _ := strings.Cut(id, "/")
	return top
}
