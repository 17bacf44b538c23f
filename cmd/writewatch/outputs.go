package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/writewatch/writewatch/internal/metrics"
	"github.com/writewatch/writewatch/internal/report"
	"github.com/writewatch/writewatch/internal/run"
)

// failKind is what an output that could not be written does to the exit
// code (see exitCode).
type failKind int

const (
	failWarn    failKind = iota // nothing: a warning on stderr
	failRun                     // 70, when the code was still COMMAND's own
	failIfClean                 // 70, when the code was 0
	failKinds
)

// output is one place a run's report goes.
type output struct {
	// name is the flag or variable that asks for the output, for
	// messages; "" for the summary, which goes to stderr itself.
	name string
	// file is the path of the file the output goes to, created before
	// COMMAND starts so that a bad path stops writewatch first; "" for
	// an output that opens nothing ahead.
	file string
	// check, when set, runs before COMMAND starts too; an error is a
	// usage error.
	check func() error
	// write writes the report to the file, or wherever it goes.
	write func(o *writing, f *os.File) error
	// fail is what a failure does to the exit code.
	fail failKind
	// notStarted: written also when COMMAND did not start, so that a job
	// which cannot trace shows in Prometheus.
	notStarted bool
}

// writing is what the outputs are written with.
type writing struct {
	cfg    *Config
	stderr io.Writer
	color  bool
	mrun   *metrics.Run
	// out is the run as it stands: its report, and the outputs that
	// failed so far.
	out *outcome
}

// outputs is the table of the outputs the command line asks for, in the
// order they are written.
func (c *Config) outputs(getenv func(string) string) []output {
	var outs []output
	outs = append(outs, output{write: writeSummary, fail: failIfClean})
	if c.JSONFile != "" {
		outs = append(outs, output{name: "--json", file: c.JSONFile, write: writeJSON, fail: failRun})
	}
	if c.JUnitFile != "" {
		outs = append(outs, output{name: "--junit", file: c.JUnitFile, write: writeJUnit, fail: failRun})
	}
	if c.SuggestConfig != "" {
		// Written at the end, through a new file renamed into place: FILE
		// may be the config in use, which is read at the end.
		outs = append(outs, output{name: "--suggest-config", check: func() error { return checkSuggestion(c.SuggestConfig) },
			write: writeSuggestion, fail: failRun})
	}
	if getenv("GITHUB_ACTIONS") == "true" {
		// Annotations go to stderr, which the runner reads for workflow
		// commands too, so COMMAND's stdout stays untouched.
		outs = append(outs, output{name: "GitHub annotations", write: writeAnnotations})
		if path := getenv("GITHUB_STEP_SUMMARY"); path != "" {
			outs = append(outs, output{name: "GITHUB_STEP_SUMMARY", write: func(o *writing, _ *os.File) error { return writeStepSummary(o, path) }})
		}
	}
	if c.MetricsTextfile != "" {
		outs = append(outs, output{name: "--metrics-textfile", check: func() error { return metrics.CheckTextfile(c.MetricsTextfile) },
			write: writeTextfile, fail: failRun, notStarted: true})
	}
	if c.Pushgateway != "" {
		fail := failWarn
		if c.MetricsRequired {
			fail = failRun
		}
		outs = append(outs, output{name: "--pushgateway", write: push, fail: fail, notStarted: true})
	}
	return outs
}

// openOutputs checks the outputs and creates their files before COMMAND
// starts. It returns the files, in the order of outs (nil for an output
// with no file), and an error for the first that cannot be written.
func openOutputs(outs []output) ([]*os.File, error) {
	files := make([]*os.File, len(outs))
	for i, out := range outs {
		if out.check != nil {
			if err := out.check(); err != nil {
				closeAll(files)
				return nil, fmt.Errorf("%s: %w", out.name, err)
			}
		}
		if out.file == "" {
			continue
		}
		f, err := os.Create(out.file)
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("%s: %w", out.name, err)
		}
		files[i] = f
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// writeOutputs matches the report against the --baseline report, writes
// the outputs, notes in o.out those that failed, and returns the exit
// code.
func writeOutputs(o *writing, outs []output, files []*os.File) int {
	if o.cfg.baseline != nil && o.out.startErr == nil {
		report.ApplyBaseline(o.out.rep, o.cfg.baseline, o.cfg.Baseline)
	}
	o.out.rep.ExitCode = exitCode(o.out)
	for i, out := range outs {
		if o.out.startErr != nil && !out.notStarted {
			continue
		}
		if err := out.write(o, files[i]); err != nil {
			switch {
			case out.file != "":
				fmt.Fprintf(o.stderr, "writewatch: %s %s: %v\n", out.name, out.file, err)
			case out.name != "":
				fmt.Fprintf(o.stderr, "writewatch: %s: %v\n", out.name, err)
			}
			if out.fail != failWarn {
				o.out.failed[out.fail] = true
			}
		}
	}
	return exitCode(o.out)
}

// writeSummary prints the summary on stderr, unless --quiet and there is
// nothing to say.
func writeSummary(o *writing, _ *os.File) error {
	rep := o.out.rep
	if o.cfg.Quiet && !rep.Failed() && len(rep.Violations) == 0 && rep.LostEvents == 0 {
		return nil
	}
	return report.WriteText(o.stderr, rep, report.TextOptions{Color: o.color})
}

func writeJSON(o *writing, f *os.File) error {
	// As late as it can be read: after the summary was rendered.
	o.out.rep.PeakRSS = run.PeakRSS()
	return report.WriteJSON(f, o.out.rep)
}

func writeJUnit(o *writing, f *os.File) error { return report.WriteJUnit(f, o.out.rep) }

// checkSuggestion checks, before COMMAND starts, that a file can be
// made in the directory of the proposed config.
func checkSuggestion(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".writewatch-suggest-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// writeSuggestion writes the proposed config: the config the run used,
// read now, with the entries the run needs. It replaces the file at once
// (a new file renamed over it), so FILE may be that config itself.
func writeSuggestion(o *writing, _ *os.File) error {
	var config []byte
	if path := o.out.rep.ConfigFile; path != "" && path != os.DevNull {
		var err error
		if config, err = os.ReadFile(path); err != nil {
			return err
		}
	}
	path := o.cfg.SuggestConfig
	f, err := os.CreateTemp(filepath.Dir(path), ".writewatch-suggest-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // once renamed, a no-op
	err = report.WriteSuggestedConfig(f, o.out.rep, config)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func writeAnnotations(o *writing, _ *os.File) error {
	return report.WriteGitHubAnnotations(o.stderr, o.out.rep, os.Getenv("GITHUB_WORKSPACE"))
}

// writeStepSummary adds a summary table to the file GitHub Actions shows
// as the step's summary.
func writeStepSummary(o *writing, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	return report.WriteGitHubSummary(f, o.out.rep)
}

// finishMetrics gives the metrics the report, with writewatch's exit
// code as it stands.
func finishMetrics(o *writing) {
	o.out.rep.ExitCode = exitCode(o.out)
	o.mrun.Finish(o.out.rep, o.out.traceErr)
}

func writeTextfile(o *writing, _ *os.File) error {
	finishMetrics(o)
	return o.mrun.WriteTextfile(o.cfg.MetricsTextfile, o.cfg.MetricsLabels)
}

func push(o *writing, _ *os.File) error {
	finishMetrics(o)
	return o.mrun.Push(context.Background(), o.cfg.Pushgateway, o.cfg.MetricsLabels)
}
