// Command writewatch runs a test command, follows its whole process tree
// in the kernel and reports every filesystem write it makes outside the
// project's allowlist.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/metrics"
	"github.com/writewatch/writewatch/internal/phases"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/render"
	"github.com/writewatch/writewatch/internal/run"
	"github.com/writewatch/writewatch/internal/status"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

func main() {
	if launch.IsTrampoline() {
		os.Exit(launch.Trampoline()) // returns only when it could not exec COMMAND
	}
	end := phases.Start("kernel version")
	launch.CacheKernelVersion() // before any BPF load: see its comment on file capabilities
	end()
	code := realMain(os.Args[1:], os.Stderr)
	phases.Write(os.Stderr)
	os.Exit(code)
}

func realMain(argv []string, stderr io.Writer) int {
	cfg, err := parseConfig(argv)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Print(helpText(new(Config).flagSet()))
			return 0
		}
		return usageError(stderr, err)
	}
	if err := cfg.check(); err != nil {
		return usageError(stderr, err)
	}
	switch {
	case cfg.Version:
		fmt.Print(versionText(readBuildInfo()))
		return 0
	case cfg.Doctor:
		return doctor(os.Stdout)
	}
	resumeGC := func() {}
	if !cfg.PrintConfig {
		resumeGC = pauseGC()
		defer resumeGC()
		// The BPF object, the kernel's BTF and the largest maps are
		// prepared while the allowlist and the enforcement are; the map
		// of goroutines is smaller when COMMAND is unlikely to run go
		// (as run decides it again).
		wd, _ := os.Getwd()
		tracer.Warm(allowlist.MayRunGo(cfg.Args, wd, os.Getenv))
	}
	inv := &invocation{cfg: cfg, stderr: stderr, launched: resumeGC}
	end := phases.Start("allowlist")
	err = inv.prepare()
	end()
	if err == nil && inv.user != nil && !cfg.PrintConfig {
		// COMMAND is looked up in the sudo caller's PATH, not in this
		// process's.
		err = cfg.checkFileValues(taskRun, inv.env)
	}
	if err != nil {
		return usageError(stderr, err)
	}
	var enf *enforcement
	if cfg.PrintConfig || cfg.Enforce.on {
		end := phases.Start("enforcement plan")
		enf, err = inv.enforcement()
		end()
		if err != nil {
			return usageError(stderr, err)
		}
		defer func() {
			if err := enf.dirs.Remove(); err != nil {
				fmt.Fprintf(stderr, "writewatch: warning: %v\n", err)
			}
		}()
	}
	if cfg.PrintConfig {
		return inv.printConfig(enf)
	}
	var runEnf *policy.Enforcement
	if cfg.Enforce.on {
		if enf.err != nil {
			fmt.Fprintf(stderr, "writewatch: cannot trace here: %v\n", enf.err)
			return exitCannot
		}
		runEnf = inv.enforce(enf)
	}
	return inv.execute(runEnf)
}

// invocation is one writewatch command line being carried out.
type invocation struct {
	cfg    *Config
	stderr io.Writer
	wd     string
	user   *launch.Identity // nil: COMMAND runs as this process's user
	env    []string         // COMMAND's environment
	list   *allowlist.List
	// launched is called once COMMAND has started (or failed to).
	launched func()
}

// prepare finds who COMMAND runs as, where, with which environment, and
// the allowlist that applies.
func (inv *invocation) prepare() error {
	var err error
	if inv.wd, err = os.Getwd(); err != nil {
		return fmt.Errorf("cannot read the working directory: %w", err)
	}
	if !inv.cfg.AsRoot {
		if inv.user, err = launch.SudoIdentity(); err != nil {
			return fmt.Errorf("%w; pass --as-root to run COMMAND as root", err)
		}
	}
	inv.env = os.Environ()
	home := os.Getenv("HOME")
	if inv.user != nil {
		inv.env = inv.user.Env(inv.env)
		home = inv.user.Home
	}
	inv.list, err = allowlist.Load(allowlist.Options{
		ConfigPath: inv.cfg.ConfigFile,
		WorkDir:    inv.wd,
		Home:       home,
		Getenv:     func(key string) string { return launch.Getenv(inv.env, key) },
		ExtraAllow: inv.cfg.Allow,
		Outputs:    outputs(),
		Command:    inv.cfg.Args,
		Warn:       func(msg string) { fmt.Fprintf(inv.stderr, "writewatch: warning: %s\n", msg) },
		GoEnv:      inv.goEnv,
	})
	return err
}

// outputs returns the files writewatch's stdout and stderr write to, when
// they are regular files: COMMAND inherits them, and what it writes there
// is the run's output, sent where the user asked.
func outputs() []allowlist.Output {
	var outs []allowlist.Output
	for _, f := range []struct {
		name string
		file *os.File
	}{{"stdout", os.Stdout}, {"stderr", os.Stderr}} {
		if o, ok := allowlist.OutputFile(f.name, f.file); ok && (len(outs) == 0 || outs[0].Path != o.Path) {
			outs = append(outs, o)
		}
	}
	return outs
}

// goEnv runs go env as COMMAND would: COMMAND's own go when it names
// one by its path, else the go in COMMAND's PATH (under sudo the invoking
// user's, not sudo's secure_path). Without one it returns no variables,
// and the go-cache default takes Go's documented locations.
func (inv *invocation) goEnv() (map[string]string, error) {
	goBin := ""
	if args := inv.cfg.Args; len(args) > 0 && strings.Contains(args[0], "/") && filepath.Base(args[0]) == "go" {
		goBin = args[0]
	} else if p, err := launch.Resolve("go", inv.env); err == nil {
		goBin = p
	}
	if goBin == "" {
		return nil, nil
	}
	if !filepath.IsAbs(goBin) {
		goBin = filepath.Join(inv.wd, goBin)
	}
	return allowlist.RunGoEnv(context.Background(), func(c *exec.Cmd) {
		c.Path, c.Err = goBin, nil
		c.Env = inv.env
		if u := inv.user; u != nil {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}}
		}
	})
}

// enforcement is how --enforce would enforce the allowlist here.
type enforcement struct {
	plan    *policy.Plan
	dirs    *policy.Dirs // made for COMMAND, unless for --print-config
	support policy.Support
	tier    policy.Tier
	why     string // why this tier
	err     error  // why --enforce cannot work here
}

// enforcement plans the allowlist's enforcement and picks the tier. An
// error is an allowlist the plan cannot take.
func (inv *invocation) enforcement() (*enforcement, error) {
	// The kernel is probed while the plan waits for the allowlist (which
	// may wait for go env).
	probed := make(chan policy.Support, 1)
	go func() {
		end := phases.Start("probe kernel support")
		probed <- policy.Probe()
		end()
	}()
	// The directories COMMAND gets exist before the plan, which grants
	// them.
	dirs := policy.PlanDirs(inv.list, policy.DirsOptions{Env: inv.env, Owner: inv.user, Command: inv.cfg.Args, WorkDir: inv.wd})
	if !inv.cfg.PrintConfig {
		for _, w := range dirs.Make() {
			fmt.Fprintf(inv.stderr, "writewatch: warning: %s\n", w)
		}
	}
	plan, err := policy.NewPlan(inv.list.Entries(), dirs.Grants()...)
	if err != nil {
		dirs.Remove()
		return nil, err
	}
	e := &enforcement{plan: plan, dirs: dirs, support: <-probed}
	e.tier, e.why, e.err = e.support.Choose(inv.cfg.Tier)
	if e.err == nil && inv.cfg.Enforce.block && !e.tier.Refuses() {
		e.err = errors.New("--enforce=block: the " + e.tier.String() + " tier cannot refuse a write, only kill its writer (" + e.why + ")")
	}
	return e, nil
}

// printConfig prints the allowlist and how --enforce would enforce it,
// for --print-config.
func (inv *invocation) printConfig(e *enforcement) int {
	err := allowlist.WritePrintConfig(os.Stdout, inv.list)
	if err == nil && e.err == nil {
		err = policy.WriteExplain(os.Stdout, e.plan, e.tier, e.why, e.dirs)
		if err == nil {
			_, err = fmt.Printf("  metadata changes (chmod, chown, utimes, xattrs): %s\n",
				metadataEnforcement(inv.cfg.IgnoreMetadata, !inv.cfg.Enforce.block, e.support.MetadataGuardErr))
		}
	} else if err == nil {
		_, err = fmt.Printf("\nunder --enforce: %v\n", e.err)
	}
	if err != nil {
		fmt.Fprintf(inv.stderr, "writewatch: %v\n", err)
		return exitInternal
	}
	return 0
}

// enforce says how the run enforces, and says so on stderr.
func (inv *invocation) enforce(e *enforcement) *policy.Enforcement {
	fmt.Fprintf(inv.stderr, "writewatch: enforcing with %s (%s)\n", e.tier, e.why)
	if note := e.tier.Note(); note != "" {
		fmt.Fprintf(inv.stderr, "writewatch: warning: %s\n", note)
	}
	return &policy.Enforcement{Tier: e.tier, Kill: !inv.cfg.Enforce.block, Plan: e.plan, Support: e.support, Dirs: e.dirs}
}

// execute runs COMMAND, with the live metrics and status line while it
// runs, and writes the outputs.
func (inv *invocation) execute(enf *policy.Enforcement) int {
	cfg, stderr := inv.cfg, inv.stderr
	outs := cfg.outputs(os.Getenv)
	fileOpts := inv.outputFiles()
	files, err := openOutputs(outs, fileOpts)
	if err != nil {
		return usageError(stderr, err)
	}
	defer closeAll(files)
	counters := new(live.Counters)
	w := newWriting(cfg, stderr, counters, fileOpts)
	w.color = status.IsTerminal(os.Stderr) && os.Getenv("NO_COLOR") == ""
	var server *metrics.Server
	if cfg.MetricsAddr != "" {
		if server, err = w.mrun.Serve(cfg.MetricsAddr, cfg.MetricsLabels); err != nil {
			return usageError(stderr, fmt.Errorf("--metrics-addr: %w", err))
		}
		defer server.Close()
		if !cfg.Quiet {
			fmt.Fprintf(stderr, "writewatch: serving metrics on http://%s/metrics\n", server.Addr())
		}
	}
	if !cfg.Quiet {
		for _, note := range cfg.emptyMetricsFlags() {
			fmt.Fprintf(stderr, "writewatch: %s\n", note)
		}
	}
	var line *status.Status
	if !cfg.Quiet && status.Supported(os.Stderr, os.Getenv) {
		line = status.Start(stderr, counters, status.Terminal(os.Stderr, w.color))
	}

	rep, err := inv.run(counters, enf, killedLine(line, stderr))
	if line != nil {
		line.Stop()
	}
	if server != nil {
		if cerr := server.Close(); cerr != nil {
			fmt.Fprintf(stderr, "writewatch: --metrics-addr: %v\n", cerr)
		}
	}
	w.out = inv.outcome(rep, err)
	return writeOutputs(w, outs, files)
}

// killedLine says on stderr, as soon as the run sees it, that --enforce
// killed a process: on a row of its own above the status line when it
// is shown, else after a newline (COMMAND may have left a line
// unfinished: pytest's progress dots).
func killedLine(line *status.Status, stderr io.Writer) func(k *report.Kill) {
	return func(k *report.Kill) {
		if line != nil {
			line.Say(render.KillLine(k))
			return
		}
		io.WriteString(stderr, "\n"+render.KillLine(k)+"\n")
	}
}

// run runs COMMAND, passing the signals writewatch gets on to it.
func (inv *invocation) run(counters *live.Counters, enf *policy.Enforcement, killed func(*report.Kill)) (*report.Report, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	cfg := inv.cfg
	record, closeRecord := inv.recording()
	defer closeRecord()
	return run.Run(run.Config{
		Record:          record,
		Args:            cfg.Args,
		Mode:            cfg.reportMode(),
		Allow:           inv.list,
		WorkDir:         inv.wd,
		Env:             inv.env,
		User:            inv.user,
		Stdin:           os.Stdin,
		Stdout:          os.Stdout,
		Stderr:          os.Stderr,
		Signals:         sigs,
		Grace:           cfg.Grace,
		KillSurvivors:   cfg.KillSurvivors,
		RingBufferBytes: uint32(cfg.RingbufMiB) << 20,
		IgnoreMetadata:  cfg.IgnoreMetadata,
		Sandbox:         cfg.Sandbox || cfg.SandboxKeep != "",
		SandboxKeep:     cfg.SandboxKeep,
		MaxViolations:   cfg.MaxViolations,
		Live:            counters,
		Enforce:         enf,
		Launched:        inv.launched,
		Baseline:        cfg.baseline,
		BaselineFile:    cfg.Baseline,
		Killed:          killed,
	})
}

// recordEnv names the file a run's recording goes to, for a replay with
// no kernel (docs/development.md); COMMAND does not inherit it.
const recordEnv = "WRITEWATCH_RECORD"

// recording opens the file recordEnv names, if any; a file that cannot
// be written is said, and the run goes on unrecorded.
func (inv *invocation) recording() (io.Writer, func()) {
	path := os.Getenv(recordEnv)
	inv.env = slices.DeleteFunc(inv.env, func(kv string) bool { return strings.HasPrefix(kv, recordEnv+"=") })
	if path == "" {
		return nil, func() {}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Fprintf(inv.stderr, "writewatch: %s: %v; the run is not recorded\n", recordEnv, err)
		return nil, func() {}
	}
	return f, func() { f.Close() }
}

// outcome is what the run came to, said on stderr when it went wrong.
func (inv *invocation) outcome(rep *report.Report, err error) *outcome {
	if rep == nil {
		// COMMAND never ran (not found, not executable, cannot trace
		// here): the metrics still record the run and its exit code.
		fmt.Fprintln(inv.stderr, startFailureOf(err).explain(inv.cfg.Args[0], err, inv.user))
		now := time.Now()
		return &outcome{startErr: err, rep: &report.Report{
			Version: report.SchemaVersion, Mode: inv.cfg.reportMode(), Command: inv.cfg.Args, WorkDir: inv.wd,
			Started: now, Finished: now, CommandExit: report.NotStarted,
		}, traceErr: err}
	}
	if err != nil {
		fmt.Fprintf(inv.stderr, "writewatch: tracing failed while COMMAND ran: %v\n", err)
	}
	return &outcome{rep: rep, traceErr: err, audit: inv.cfg.Audit, acceptIncomplete: inv.cfg.AcceptIncomplete}
}

// metadataEnforcement says how --enforce treats metadata changes, for
// --print-config.
func metadataEnforcement(ignored, kill bool, guardErr error) string {
	switch {
	case ignored:
		return "not watched (--ignore-metadata)"
	case guardErr != nil:
		return "judged at the syscall's entry, and the writer killed; the change may take effect (" + guardErr.Error() + ")"
	case kill:
		return "refused outside the grants by the metadata guard (EPERM) before they run, and the writer killed"
	}
	return "refused outside the grants by the metadata guard (EPERM) before they run"
}
