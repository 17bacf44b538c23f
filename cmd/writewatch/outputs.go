package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/metrics"
	"github.com/writewatch/writewatch/internal/outfile"
	"github.com/writewatch/writewatch/internal/render"
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
	// file is the path of the file the output goes to, checked and its
	// directory opened before COMMAND starts (package outfile), so that
	// a bad path stops writewatch first and nothing the run plants
	// redirects it; "" for an output that opens nothing ahead.
	file string
	// mode is the file's mode; 0: 0666 less the umask.
	mode os.FileMode
	// write writes the report to the file, or wherever it goes.
	write func(o *writing, f *outfile.File) error
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
	// mrun is the run's metrics; nil without a metrics output.
	mrun *metrics.Run
	// files says as whom output files are opened, and for whom they must
	// be safe.
	files outfile.Options
	// out is the run as it stands: its report, and the outputs that
	// failed so far.
	out *outcome
}

// newWriting is what the outputs of a run whose live counters are
// counters are written with. The run's metrics are made only when a
// metrics output is asked for: otherwise mrun is nil, and no registry of
// the Prometheus client library is ever made.
func newWriting(cfg *Config, stderr io.Writer, counters *live.Counters, files outfile.Options) *writing {
	w := &writing{cfg: cfg, stderr: stderr, files: files}
	if cfg.wantsMetrics() {
		w.mrun = metrics.New(counters, cfg.reportMode(), version)
	}
	return w
}

// outputs is the table of the outputs the command line asks for, in the
// order they are written.
func (c *Config) outputs(getenv func(string) string) []output {
	var outs []output
	outs = append(outs, output{write: writeSummary, fail: failIfClean})
	for _, f := range render.Formats() {
		if path := c.Files[f.Name]; path != "" {
			outs = append(outs, output{name: "--" + f.Name, file: path, write: writeFormat(f), fail: failRun})
		}
	}
	if c.SuggestConfig != "" {
		// Written at the end, through a new file renamed into place: FILE
		// may be the config in use, which is read at the end.
		outs = append(outs, output{name: "--suggest-config", file: c.SuggestConfig, mode: 0o644,
			write: func(o *writing, f *outfile.File) error { return writeSuggestion(o, f, c.SuggestConfig) }, fail: failRun})
	}
	if getenv("GITHUB_ACTIONS") == "true" {
		// Annotations go to stderr, which the runner reads for workflow
		// commands too, so COMMAND's stdout stays untouched.
		outs = append(outs, output{name: "GitHub annotations", write: writeAnnotations})
		if path := getenv("GITHUB_STEP_SUMMARY"); path != "" {
			outs = append(outs, output{name: "GITHUB_STEP_SUMMARY", write: func(o *writing, _ *outfile.File) error { return writeStepSummary(o, path) }})
		}
	}
	if c.MetricsTextfile != "" {
		outs = append(outs, output{name: "--metrics-textfile", file: c.MetricsTextfile, mode: metrics.TextfileMode,
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

// openOutputs checks the outputs' files and opens their directories
// before COMMAND starts, as opts says. It returns the files, in the order
// of outs (nil for an output with no file), and an error for the first
// that cannot be written.
func openOutputs(outs []output, opts outfile.Options) ([]*outfile.File, error) {
	files := make([]*outfile.File, len(outs))
	for i, out := range outs {
		if out.file == "" {
			continue
		}
		o := opts
		o.Mode = out.mode
		f, err := outfile.Open(out.file, o)
		if err != nil {
			closeAll(files)
			return nil, outputError(out, err)
		}
		files[i] = f
	}
	return files, nil
}

// outputError says why an output's file cannot be written, and what to
// do about it.
func outputError(out output, err error) error {
	dir := filepath.Dir(filepath.Clean(out.file))
	switch {
	case errors.Is(err, outfile.ErrIsDir):
		return fmt.Errorf("%s %s: is a directory; name a file, such as %s", out.name, out.file,
			filepath.Join(filepath.Clean(out.file), exampleFile(strings.TrimPrefix(out.name, "--"))))
	case errors.Is(err, outfile.ErrSharedDir):
		return fmt.Errorf("%s %s: %s is not yours, yet you can write it, as others can: a test could plant a file or link in its place; write it in a directory you own, such as the project's",
			out.name, out.file, dir)
	}
	return fmt.Errorf("%s %s: %w", out.name, out.file, err)
}

func closeAll(files []*outfile.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// writeOutputs writes the outputs, notes in o.out those that failed, and
// returns the exit code. The run's session matched the report against
// the --baseline report.
func writeOutputs(o *writing, outs []output, files []*outfile.File) int {
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
func writeSummary(o *writing, _ *outfile.File) error {
	rep := o.out.rep
	if o.cfg.Quiet && !rep.Failed() && !rep.Blind() && len(rep.Violations) == 0 && rep.LostEvents == 0 {
		return nil
	}
	return render.WriteText(o.stderr, rep, render.TextOptions{Color: o.color})
}

// writeFormat writes the report in format f.
func writeFormat(f render.Format) func(o *writing, file *outfile.File) error {
	return func(o *writing, file *outfile.File) error {
		// As late as it can be read: after the summary was rendered.
		o.out.rep.PeakRSS = run.PeakRSS()
		return file.Replace(func(w io.Writer) error { return f.Write(w, o.out.rep) })
	}
}

// writeSuggestion writes the proposed config to f, named name: the
// config the run used, read now, with the entries the run needs, written
// for where name is (render.WriteSuggestedConfig). Replace writes a new
// file and renames it over FILE, so FILE may be that config itself.
func writeSuggestion(o *writing, f *outfile.File, name string) error {
	file, err := filepath.Abs(name)
	if err != nil {
		return err
	}
	var config []byte
	if path := o.out.rep.ConfigFile; path != "" && path != os.DevNull {
		if config, err = os.ReadFile(path); err != nil {
			return err
		}
	}
	return f.Replace(func(w io.Writer) error { return render.WriteSuggestedConfig(w, o.out.rep, config, file) })
}

func writeAnnotations(o *writing, _ *outfile.File) error {
	return render.WriteGitHubAnnotations(o.stderr, o.out.rep, os.Getenv("GITHUB_WORKSPACE"))
}

// writeStepSummary adds a summary table to the file GitHub Actions shows
// as the step's summary, never through a symbolic link.
func writeStepSummary(o *writing, path string) error {
	return outfile.Append(path, o.files, func(w io.Writer) error { return render.WriteGitHubSummary(w, o.out.rep) })
}

// finishMetrics gives the metrics the report, with writewatch's exit
// code as it stands.
func finishMetrics(o *writing) {
	o.out.rep.ExitCode = exitCode(o.out)
	o.mrun.Finish(o.out.rep, o.out.traceErr)
}

func writeTextfile(o *writing, f *outfile.File) error {
	finishMetrics(o)
	return o.mrun.WriteTextfile(f, o.cfg.MetricsLabels)
}

func push(o *writing, _ *outfile.File) error {
	finishMetrics(o)
	return o.mrun.Push(context.Background(), o.cfg.Pushgateway, o.cfg.MetricsLabels)
}

// outputFiles says as whom the output files are opened and created: the
// user who invoked sudo (also under --as-root), never root for them; and
// for whom they must be safe: the user COMMAND runs as, whose tests could
// plant links or files for writewatch to follow.
func (inv *invocation) outputFiles() outfile.Options {
	if u := inv.user; u != nil {
		as := &outfile.User{UID: u.UID, GID: u.GID, Groups: u.Groups}
		return outfile.Options{As: as, Command: as}
	}
	if os.Geteuid() != 0 {
		// A user's own run (a setcap copy): COMMAND runs as that user,
		// who opens the files already.
		self := &outfile.User{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
		if gids, err := os.Getgroups(); err == nil {
			for _, g := range gids {
				self.Groups = append(self.Groups, uint32(g))
			}
		}
		return outfile.Options{Command: self}
	}
	// COMMAND runs as root; under sudo --as-root, the files are still
	// opened as the user who invoked it.
	return outfile.Options{As: sudoCaller()}
}

// sudoCaller is the user who invoked sudo (SUDO_UID, SUDO_GID and that
// user's groups), or nil when writewatch is not running under sudo.
func sudoCaller() *outfile.User {
	uid, err1 := strconv.ParseUint(os.Getenv("SUDO_UID"), 10, 32)
	gid, err2 := strconv.ParseUint(os.Getenv("SUDO_GID"), 10, 32)
	if err1 != nil || err2 != nil || uid == 0 {
		return nil
	}
	u := &outfile.User{UID: uint32(uid), GID: uint32(gid)}
	if a, ok := launch.LookupAccount(u.UID); ok {
		u.Groups = a.Groups
	}
	return u
}
