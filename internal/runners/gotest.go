package runners

import (
	"path/filepath"
	"strings"

	"github.com/writewatch/writewatch/internal/gobin"
	"github.com/writewatch/writewatch/internal/phases"
	"github.com/writewatch/writewatch/tracer"
)

// Teller is told of each Go test binary the tree runs: followed, with
// its package and whether it has TestMain, or why not
// (attribution.Tests.GoBinary, or what carries it to the run's session).
type Teller interface {
	GoBinary(tgid uint32, pid int, pkg string, follow bool, problem string, testMain bool)
}

// FollowGoTest attaches the test-boundary uprobes to a Go test binary the
// kernel paused at exec (ev, a KindExec record with tracer.ExecStopped),
// tells tests about it, then lets it run. It always lets it run.
func FollowGoTest(tr *tracer.Tracer, tests Teller, ev *tracer.Event) {
	end := phases.Start("Go test binary: uprobes")
	lay, err := tr.FollowGoTest(ev.TGID, ev.LocalTGID())
	end()
	goBinary(tests, ev, lay, err)
	ev.Resume()
	// From exec, in the kernel's clock, to here.
	phases.Since("Go test binary: paused", ev.Time)
}

// FollowPreparedGoTest tells tests about a Go test binary whose file had
// its uprobes when it started (ev, a KindExec record with
// tracer.ExecPrepared): the kernel did not pause it.
func FollowPreparedGoTest(tr *tracer.Tracer, tests Teller, ev *tracer.Event) {
	lay, err := tr.FollowPreparedGoTest(ev.TGID, ev.Ino, ev.Dev)
	goBinary(tests, ev, lay, err)
}

// goBinary tells tests about the Go test binary ev started, followed
// with layout lay unless err says why not.
func goBinary(tests Teller, ev *tracer.Event, lay gobin.Layout, err error) {
	problem := ""
	if err != nil {
		problem = err.Error()
	}
	pkg := lay.Package
	if pkg == "" {
		pkg = filepath.Base(ev.String(tracer.SlotPath))
	}
	tests.GoBinary(ev.TGID, int(ev.LocalTGID()), pkg, err == nil, problem, lay.HasTestMain())
}

// GoBinaries follows the Go test binaries of the tree: the uprobes of
// each are readied when the Go linker has written it
// (tracer.PrepareGoTest), before go test runs it; attached, or taken
// from there, when it runs (FollowGoTest); detached when it exits. The
// zero value is ready to use.
type GoBinaries struct {
	linking map[uint32]string // linker processes -> the test binary each writes
}

// Exec follows an exec record: a test binary the kernel paused, or the
// Go linker starting.
func (g *GoBinaries) Exec(tr *tracer.Tracer, tests Teller, ev *tracer.Event) {
	switch {
	case ev.Flags&tracer.ExecStopped != 0:
		FollowGoTest(tr, tests, ev)
	case ev.Flags&tracer.ExecPrepared != 0:
		FollowPreparedGoTest(tr, tests, ev)
	}
	out := linkedTestBinary(ev.String(tracer.SlotPath), ev.Args())
	switch {
	case out != "" && g.linking == nil:
		g.linking = map[uint32]string{ev.TGID: out}
	case out != "":
		g.linking[ev.TGID] = out
	default:
		delete(g.linking, ev.TGID)
	}
}

// Exit follows an exit record: a test binary's, or the linker's, whose
// test binary is then written.
func (g *GoBinaries) Exit(tr *tracer.Tracer, ev *tracer.Event) {
	tr.ForgetGoTest(ev.TGID)
	if out, ok := g.linking[ev.TGID]; ok {
		delete(g.linking, ev.TGID)
		tr.PrepareGoTest(out)
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
