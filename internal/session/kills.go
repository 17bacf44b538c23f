package session

import (
	"fmt"
	"strings"

	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/internal/gobin"
	"github.com/writewatch/writewatch/internal/judge"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/runners"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// killed is a process enforcement killed, as its kill record told: the
// kill, what its death ended (attribution.Stop) and, for a Go test
// binary, its test functions its arguments select, read while the
// tracer still follows it.
type killed struct {
	kill     report.Kill
	stop     attribution.Stop
	funcs    []gobin.TestFunc
	funcsErr error
}

// kill notes that enforcement killed the process of write record ev,
// judged as verdicts, once per process (the first record that says
// so), and tells Config.Killed at once.
func (s *Session) kill(ev *tracer.Event, verdicts []judge.Verdict) {
	if ev.Action&tracer.ActionKilled == 0 || s.killedProcs[ev.TGID] {
		return
	}
	if s.killedProcs == nil {
		s.killedProcs = map[uint32]bool{}
	}
	s.killedProcs[ev.TGID] = true
	p := s.tree.Report(ev.TGID)
	k := report.Kill{PID: p.PID, Comm: string(ev.Comm), Exe: p.Exe, Cmdline: p.Cmdline, Time: ev.Time,
		Action: policy.Action(ev.Action), Who: s.tests.Attribute(ev)}
	if len(verdicts) > 0 {
		v := &verdicts[0]
		k.Op, k.Path, k.Role, k.DeniedBy, k.NotEnforced = v.Op, strings.Clone(v.Path), v.Role, v.DeniedBy(), v.NotEnforced()
	} else {
		k.Op, k.Path = ev.Op.String(), ev.String(tracer.SlotPath)
	}
	if ev.Op.Opens() {
		k.Flags = judge.OpenFlags(ev.Flags)
	}
	rec := &killed{kill: k, stop: s.tests.Stopped(ev.TGID)}
	rec.kill.RanTests = rec.stop.Runner != ""
	if rec.stop.Runner == report.RunnerGo {
		rec.funcs, rec.funcsErr = s.host.GoTestFuncs(ev.TGID)
		if rec.funcsErr == nil {
			rec.funcs, rec.funcsErr = runners.SelectGoTests(rec.funcs, p.Cmdline)
		}
	}
	s.kills = append(s.kills, rec)
	if s.cfg.Killed != nil {
		told := rec.kill
		s.cfg.Killed(&told)
	}
}

// finishKills adds the kills to the report, and to its tests what the
// death of each process that ran tests ended: the test killed (and the
// tests whose subtest it is) failed, the others running did not finish,
// and those it would have run next did not run (skipped). Call it once
// the runner's own results are in, before the tests are listed.
func (s *Session) finishKills(rep *report.Report) {
	listed := map[report.TestRef]bool{}
	for _, rec := range s.kills {
		k := rec.kill
		if k.RanTests {
			s.ended(&k, rec, listed)
		}
		rep.Kills = append(rep.Kills, k)
	}
}

// ended concludes the tests of rec's process, and lists in k those that
// did not finish and did not run; listed are those listed by earlier
// kills.
func (s *Session) ended(k *report.Kill, rec *killed, listed map[report.TestRef]bool) {
	runner := rec.stop.Runner
	notRun, why := s.tests.NotRun(rec.stop, rec.funcs, rec.funcsErr)
	by := fmt.Sprintf("writewatch --enforce killed %s (pid %d)", k.Comm, k.PID)
	if k.Test != "" {
		by += " in " + k.Test
	}
	by += ": " + k.Reason()
	if k.Test != "" {
		s.tests.Conclude(report.TestResult{Runner: runner, Package: k.Package, ID: k.Test, Outcome: report.OutcomeFailed,
			Message: "killed by writewatch --enforce: " + k.Reason()})
	}
	for _, r := range rec.stop.Running {
		tr := report.TestResult{Runner: runner, Package: r.Package, ID: r.ID}
		switch {
		case r.ID == k.Test:
			continue
		case runner == report.RunnerGo && strings.HasPrefix(k.Test, r.ID+"/"):
			tr.Outcome, tr.Message = report.OutcomeFailed, "killed by writewatch --enforce in its subtest "+k.Test+": "+k.Reason()
		default:
			tr.Outcome, tr.Message = report.OutcomeSkipped, "did not finish: "+by
		}
		k.Interrupted = append(k.Interrupted, r)
		s.tests.Conclude(tr)
	}
	k.NotRunUnknown = why
	for _, tr := range notRun {
		ref := report.TestRef{Package: tr.Package, ID: tr.ID}
		if listed[ref] {
			continue
		}
		listed[ref] = true
		k.NotRun = append(k.NotRun, ref)
		tr.Outcome, tr.Message = report.OutcomeSkipped, "not run: "+by
		s.tests.Conclude(tr)
	}
}
