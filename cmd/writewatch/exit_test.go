package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/outfile"
	"github.com/writewatch/writewatch/internal/run"
	"github.com/writewatch/writewatch/internal/sandbox"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

func TestExitCode(t *testing.T) {
	clean := func(exit int) *report.Report { return &report.Report{CommandExit: exit} }
	dirty := func(exit int) *report.Report { return &report.Report{CommandExit: exit, UnlistedViolations: 1} }
	blind := func(r *report.Report) *report.Report { r.Incomplete = []string{"records were lost"}; return r }
	failed := func(kinds ...failKind) (f [failKinds]bool) {
		for _, k := range kinds {
			f[k] = true
		}
		return f
	}
	for _, tc := range []struct {
		name string
		o    outcome
		want int
	}{
		{"clean", outcome{rep: clean(0)}, 0},
		{"COMMAND's own code", outcome{rep: clean(3)}, 3},
		{"violations", outcome{rep: dirty(0)}, exitViolations},
		{"violations, --audit", outcome{rep: dirty(3), audit: true}, 3},
		{"tracing failed", outcome{rep: dirty(0), traceErr: errors.New("x")}, exitInternal},
		{"incomplete", outcome{rep: blind(clean(0))}, exitIncomplete},
		{"incomplete, COMMAND failed", outcome{rep: blind(clean(3))}, exitIncomplete},
		{"incomplete, violations", outcome{rep: blind(dirty(0))}, exitViolations},
		{"incomplete, --accept-incomplete", outcome{rep: blind(clean(3)), acceptIncomplete: true}, 3},
		{"incomplete, violations, --accept-incomplete", outcome{rep: blind(dirty(0)), acceptIncomplete: true}, exitViolations},
		{"incomplete, --audit", outcome{rep: blind(clean(3)), audit: true}, 3},
		{"incomplete, tracing failed", outcome{rep: blind(clean(0)), traceErr: errors.New("x")}, exitInternal},
		{"incomplete, output failed", outcome{rep: blind(clean(0)), failed: failed(failRun, failIfClean)}, exitIncomplete},
		{"not found", outcome{startErr: fmt.Errorf("x: %w", launch.ErrNotFound), rep: clean(report.NotStarted)}, exitNotFound},
		{"not executable", outcome{startErr: launch.ErrNotExecutable, rep: clean(report.NotStarted)}, exitNotExec},
		{"no privileges", outcome{startErr: tracer.ErrPermission, rep: clean(report.NotStarted)}, exitCannot},
		{"cannot trace", outcome{startErr: run.ErrTracer, rep: clean(report.NotStarted)}, exitCannot},
		{"cannot confine", outcome{startErr: launch.ErrConfine, rep: clean(report.NotStarted)}, exitCannot},
		{"other start failure", outcome{startErr: errors.New("x"), rep: clean(report.NotStarted)}, exitInternal},
		{"output failed", outcome{rep: clean(3), failed: failed(failRun)}, exitInternal},
		{"output failed after violations", outcome{rep: dirty(0), failed: failed(failRun)}, exitViolations},
		{"output failed, --audit", outcome{rep: dirty(3), audit: true, failed: failed(failRun)}, exitInternal},
		{"output failed, COMMAND not started", outcome{startErr: launch.ErrNotFound, rep: clean(report.NotStarted), failed: failed(failRun)}, exitNotFound},
		{"summary failed", outcome{rep: clean(0), failed: failed(failIfClean)}, exitInternal},
		{"summary failed, COMMAND failed", outcome{rep: clean(3), failed: failed(failIfClean)}, 3},
	} {
		if got := exitCode(&tc.o); got != tc.want {
			t.Errorf("%s: exit code %d, want %d", tc.name, got, tc.want)
		}
	}
}

// An output that cannot be written says so and fails the run, or only
// warns, as its row in the table says.
func TestOutputFailures(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": filepath.Join(dir, "missing", "summary.md")}
	for _, tc := range []struct {
		name     string
		cfg      Config
		exit     int
		want     int
		warnings []string
	}{
		{"json", Config{Files: map[string]string{"json": "/dev/full"}}, 0, exitInternal, []string{"--json /dev/full:", "GITHUB_STEP_SUMMARY:"}},
		{"junit, COMMAND failed", Config{Files: map[string]string{"junit": "/dev/full"}}, 3, exitInternal, []string{"--junit /dev/full:"}},
		{"step summary only", Config{}, 0, 0, []string{"GITHUB_STEP_SUMMARY:"}},
		{"textfile", Config{MetricsTextfile: filepath.Join(dir, "gone", "ww.prom")}, 0, exitInternal, []string{"--metrics-textfile " + filepath.Join(dir, "gone", "ww.prom") + ":"}},
		{"push", Config{Pushgateway: "http://127.0.0.1:1"}, 0, 0, []string{"--pushgateway:"}},
		{"push required", Config{Pushgateway: "http://127.0.0.1:1", MetricsRequired: true}, 0, exitInternal, []string{"--pushgateway:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs := tc.cfg.outputs(func(k string) string { return env[k] })
			files := make([]*outfile.File, len(outs))
			for i, out := range outs {
				if out.file != "" {
					// A directory that is gone by the time the run
					// ends: opened, then removed.
					gone := filepath.Base(filepath.Dir(out.file)) == "gone"
					if gone {
						must(t, os.MkdirAll(filepath.Dir(out.file), 0o755))
					}
					f, err := outfile.Open(out.file, outfile.Options{})
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					files[i] = f
					if gone {
						must(t, os.RemoveAll(filepath.Dir(out.file)))
					}
				}
			}
			var stderr bytes.Buffer
			rep := &report.Report{CommandExit: tc.exit}
			w := newWriting(&tc.cfg, &stderr, new(live.Counters), outfile.Options{})
			w.out = &outcome{rep: rep}
			if got := writeOutputs(w, outs, files); got != tc.want {
				t.Errorf("exit code %d, want %d\n%s", got, tc.want, stderr.String())
			}
			for _, want := range tc.warnings {
				if !strings.Contains(stderr.String(), "writewatch: "+want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

// The run's metrics, and so any Prometheus registry, are made only when
// a metrics output is asked for.
func TestMetricsOnlyWhenAsked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--", "true"}, false},
		{[]string{"--json", "r.json", "--junit", "r.xml", "--enforce", "--", "true"}, false},
		{[]string{"--metrics-addr", "localhost:0", "--", "true"}, true},
		{[]string{"--pushgateway", "http://pgw:9091", "--", "true"}, true},
		{[]string{"--metrics-textfile", "w.prom", "--", "true"}, true},
	} {
		cfg, err := parseConfig(c.args)
		must(t, err)
		w := newWriting(cfg, io.Discard, new(live.Counters), outfile.Options{})
		if got := w.mrun != nil; got != c.want {
			t.Errorf("%q: metrics made: %v, want %v", c.args, got, c.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// --sandbox's one line tells to run as root only when privilege is what
// is missing: root, on a kernel without overlayfs, is told to go
// without --sandbox.
func TestSandboxUnavailableAdvice(t *testing.T) {
	for _, tc := range []struct {
		err        error
		why, after string
	}{
		{fmt.Errorf("%w, which this process lacks", sandbox.ErrNoPrivilege),
			"needs CAP_SYS_ADMIN, which this process lacks", "; run writewatch as root (sudo writewatch --sandbox ...), or without --sandbox"},
		{fmt.Errorf("%w: the kernel has no overlayfs (modprobe overlay)", sandbox.ErrUnavailable),
			"the kernel has no overlayfs (modprobe overlay)", "; run writewatch without --sandbox"},
	} {
		f := startFailureOf(tc.err)
		if line := f.explain("go", tc.err, nil); f.code != exitCannot || !strings.HasSuffix(line, tc.why+tc.after) {
			t.Errorf("%v: exit %d, %q", tc.err, f.code, line)
		}
	}
}
