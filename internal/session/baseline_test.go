package session_test

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/session/sessiontest"
	"github.com/writewatch/writewatch/report"
)

// goSuite runs Go test TestSave of example.com/app in r, which writes
// with write(bin, token).
func goSuite(r *sessiontest.Run, write func(bin uint32, in sessiontest.Option)) {
	bin := r.Fork(r.PID)
	r.Exec(bin, "/tmp/go-build1/b001/app.test", "-test.v")
	r.GoTest(bin, "example.com/app")
	r.TestStart(bin, 7, "TestSave")
	write(bin, sessiontest.InTest(7))
	r.TestEnd(bin, 7)
	r.Exit(bin)
}

var (
	created = []sessiontest.Option{sessiontest.Flags(unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC), sessiontest.Created()}
	trunc   = sessiontest.Flags(unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC)
)

// The same suite run again with --baseline: what the baseline run left
// behind and this run overwrites is no data loss, a page named after the
// time of day is the same write, a directory the test finds and does not
// make again is not fixed while it is there; an overwrite of the user's
// file that the baseline does not name fails the run, though the
// baseline has new files of that extension in that directory.
func TestBaselineRunAgain(t *testing.T) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	r.File("config.toml", "the user's\n")
	r.File("settings.toml", "the user's too\n")
	goSuite(r, func(bin uint32, in sessiontest.Option) {
		r.File("out/report.txt", "1")
		r.Write(bin, ops.Mkdir, "out", in)
		r.Write(bin, ops.Open, "out/report.txt", append(created, in)...)
		r.File("pages/page_cover-05-14-10-22-31.pdf", "")
		r.Write(bin, ops.Open, "pages/page_cover-05-14-10-22-31.pdf", append(created, in)...)
		r.Write(bin, ops.Open, "config.toml", trunc, in)
		for _, name := range []string{"debug.toml", "trace.toml"} {
			r.File(name, "")
			r.Write(bin, ops.Open, name, append(created, in)...)
		}
	})
	base := r.Report()
	if base.ExitCode != report.ExitViolations {
		t.Fatalf("the baseline run: exit %d", base.ExitCode)
	}

	again := func(overwriteSettings, writeOut bool) *report.Report {
		r = r.Next()
		r.Config.Baseline, r.Config.BaselineFile = base, "base.json"
		goSuite(r, func(bin uint32, in sessiontest.Option) {
			if writeOut { // out is there: MkdirAll makes nothing
				r.Write(bin, ops.Open, "out/report.txt", trunc, in)
			}
			r.File("pages/page_cover-05-15-09-01-02.pdf", "")
			r.Write(bin, ops.Open, "pages/page_cover-05-15-09-01-02.pdf", append(created, in)...)
			r.Write(bin, ops.Open, "config.toml", trunc, in)
			for _, name := range []string{"debug.toml", "trace.toml"} {
				r.Write(bin, ops.Open, name, trunc, in)
			}
			if overwriteSettings {
				r.Write(bin, ops.Open, "settings.toml", trunc, in)
			}
		})
		return r.Report()
	}
	rep := again(true, true)
	if rep.ExitCode != report.ExitViolations {
		t.Errorf("an overwrite of settings.toml: exit %d, want %d", rep.ExitCode, report.ExitViolations)
	}
	for _, want := range []struct {
		path, severity      string
		leftover, baselined bool
	}{
		{"out/report.txt", report.SeverityLeftBehind, true, true},
		{"debug.toml", report.SeverityLeftBehind, true, true},
		{"pages/page_cover-05-15-09-01-02.pdf", report.SeverityLeftBehind, false, true},
		{"config.toml", report.SeverityDataLoss, false, true},
		{"settings.toml", report.SeverityDataLoss, false, false},
	} {
		v := sessiontest.Violation(rep, "open", want.path)
		if v == nil || v.Severity != want.severity || v.BaselineLeftover != want.leftover || v.Baselined != want.baselined {
			t.Errorf("%s: %+v, want %+v", want.path, v, want)
		}
	}
	var leftovers []string
	for _, v := range rep.Leftovers {
		leftovers = append(leftovers, v.Op+" "+v.Path)
	}
	if len(rep.Fixed) != 0 || !slices.Equal(leftovers, []string{"mkdir " + r.Path("out")}) {
		t.Errorf("fixed %+v, leftovers %q: want none fixed, out still there", rep.Fixed, leftovers)
	}

	if rep := again(false, true); rep.ExitCode != 0 {
		t.Errorf("the same suite again: exit %d, want 0: %+v", rep.ExitCode, rep.Violations)
	}

	// The test writes no more in out, which is removed: fixed.
	r.Remove("out")
	rep = again(false, false)
	var fixed []string
	for _, v := range rep.Fixed {
		fixed = append(fixed, v.Op+" "+v.Path)
	}
	if rep.ExitCode != 0 || len(rep.Leftovers) != 0 || !slices.Equal(fixed, []string{"mkdir " + r.Path("out"), "open " + r.Path("out/report.txt")}) {
		t.Errorf("out no longer made: exit %d, fixed %q, leftovers %+v", rep.ExitCode, fixed, rep.Leftovers)
	}
}
