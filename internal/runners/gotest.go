package runners

import (
	"path/filepath"

	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/internal/phases"
	"github.com/writewatch/writewatch/internal/tracer"
)

// FollowGoTest attaches the test-boundary uprobes to a Go test binary the
// kernel paused at exec (ev, a KindExec record with tracer.ExecStopped),
// tells tests about it, then lets it run. It always lets it run.
func FollowGoTest(tr *tracer.Tracer, tests *attribution.Tests, ev *tracer.Event) {
	pid := ev.NSTGID
	if pid == 0 {
		pid = ev.TGID
	}
	end := phases.Start("Go test binary: uprobes")
	lay, err := tr.FollowGoTest(ev.TGID, pid)
	end()
	problem := ""
	if err != nil {
		problem = err.Error()
	}
	pkg := lay.Package
	if pkg == "" {
		pkg = filepath.Base(ev.String(tracer.SlotPath))
	}
	tests.GoBinary(ev.TGID, int(pid), pkg, err == nil, problem, lay.HasTestMain())
	ev.Resume()
	// From exec, in the kernel's clock, to here.
	phases.Since("Go test binary: paused", ev.Time)
}
