package runners

import (
	"path/filepath"
	"strings"

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

// GoLinker has the uprobes of each Go test binary that the Go linker
// writes readied as soon as it has written it (tracer.PrepareGoTest),
// before go test runs it. The zero value is ready to use.
type GoLinker struct {
	out map[uint32]string // linker processes -> the test binary each writes
}

// Observe follows a record: a linker's exec, then its exit.
func (g *GoLinker) Observe(tr *tracer.Tracer, ev *tracer.Event) {
	switch ev.Kind {
	case tracer.KindExec:
		out := linkedTestBinary(ev.String(tracer.SlotPath), ev.Args())
		switch {
		case out != "" && g.out == nil:
			g.out = map[uint32]string{ev.TGID: out}
		case out != "":
			g.out[ev.TGID] = out
		default:
			delete(g.out, ev.TGID)
		}
	case tracer.KindExit:
		if out, ok := g.out[ev.TGID]; ok {
			delete(g.out, ev.TGID)
			tr.PrepareGoTest(out)
		}
	}
}

// linkedTestBinary is the test binary that a run of the Go linker (exe,
// with args) writes, as go test runs it: "link ... -o
// $WORK/b001/pkg.test ...". It is "" for another program or output.
func linkedTestBinary(exe string, args []string) string {
	if filepath.Base(exe) != "link" {
		return ""
	}
	for i, a := range args {
		out, ok := strings.CutPrefix(a, "-o=")
		if a == "-o" && i+1 < len(args) {
			out, ok = args[i+1], true
		}
		if ok {
			if filepath.IsAbs(out) && strings.HasSuffix(out, ".test") {
				return out
			}
			return ""
		}
	}
	return ""
}
