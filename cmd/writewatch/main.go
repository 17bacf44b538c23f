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
	"strings"
	"syscall"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/metrics"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/report"
	"github.com/writewatch/writewatch/internal/run"
	"github.com/writewatch/writewatch/internal/status"
	"github.com/writewatch/writewatch/internal/tracer"
)

// Exit codes, documented in README.md and in the usage text.
const (
	exitUsage      = 2   // bad flags, bad config, unwritable report file
	exitInternal   = 70  // writewatch failed during the run, or an output asked for was not written
	exitViolations = 86  // writes outside the allowlist were found (default mode)
	exitCannot     = 87  // cannot trace here: privileges, BTF, kernel
	exitNotExec    = 126 // COMMAND exists but cannot be executed
	exitNotFound   = 127 // COMMAND not found
)

const usageText = `Usage: writewatch [flags] [--] COMMAND [ARGS...]
       writewatch --print-config [--config FILE] [--allow PATTERN]...
       writewatch --doctor

Runs COMMAND, follows every process it starts in the kernel (eBPF), and
reports every filesystem write outside the allowlist in .writewatch.yaml
(found by walking up from the working directory).

Flags:
%s
Exit codes:
  COMMAND's own  when nothing outside the allowlist was written (or --audit)
  128+N          COMMAND died of signal N
  2              usage or configuration error; COMMAND was not started
  70             writewatch failed while COMMAND ran (the report says what),
                 or --json, --metrics-textfile or (with --metrics-required)
                 the push to --pushgateway could not be written
  86             writes outside the allowlist were found (and, with --enforce, refused)
  87             cannot trace here: no privileges, no BTF, kernel too old, or
                 the enforcement asked for is not available or was refused
  126            COMMAND is not executable
  127            COMMAND was not found
`

type options struct {
	config        string
	allow         []string
	audit         bool
	jsonFile      string
	junitFile     string
	printConfig   bool
	asRoot        bool
	quiet         bool
	grace         time.Duration
	killSurvivors bool
	ringbufMiB    uint
	version       bool
	noMetadata    bool
	maxViolations int

	metricsAddr     string
	pushgateway     string
	metricsLabels   metrics.Labels
	metricsTextfile string
	metricsRequired bool

	enforce     enforceFlag
	enforceWith string
	doctor      bool
}

// enforceFlag is --enforce (refuse and kill) or --enforce=block (refuse
// only).
type enforceFlag struct {
	on, block bool
}

func (f *enforceFlag) IsBoolFlag() bool { return true }

func (f *enforceFlag) String() string {
	switch {
	case f == nil || !f.on:
		return "false"
	case f.block:
		return "block"
	}
	return "true"
}

func (f *enforceFlag) Set(s string) error {
	switch s {
	case "true", "kill":
		*f = enforceFlag{on: true}
	case "block":
		*f = enforceFlag{on: true, block: true}
	case "false":
		*f = enforceFlag{}
	default:
		return fmt.Errorf("want --enforce or --enforce=block, not %q", s)
	}
	return nil
}

func main() {
	if launch.IsTrampoline() {
		os.Exit(launch.Trampoline()) // returns only when it could not exec COMMAND
	}
	launch.CacheKernelVersion() // before any BPF load: see its comment on file capabilities
	os.Exit(realMain(os.Args[1:], os.Stderr))
}

func realMain(argv []string, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("writewatch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.config, "config", "", "use this config `FILE` instead of searching for .writewatch.yaml")
	fs.Func("allow", "also allow `PATTERN` (path or glob, relative to the working directory); repeatable", func(s string) error {
		o.allow = append(o.allow, s)
		return nil
	})
	fs.BoolVar(&o.audit, "audit", false, "observe only: report, then exit with COMMAND's own code")
	fs.StringVar(&o.jsonFile, "json", "", "write the machine-readable report to `FILE`")
	fs.StringVar(&o.junitFile, "junit", "", "write a JUnit XML report to `FILE`: a testcase per test, each write a failure of the test that made it")
	fs.BoolVar(&o.printConfig, "print-config", false, "print the effective allowlist and where each entry comes from, then exit")
	fs.BoolVar(&o.asRoot, "as-root", false, "under sudo, run COMMAND as root instead of as the invoking user")
	fs.BoolVar(&o.quiet, "quiet", false, "print the summary only when something was found")
	fs.DurationVar(&o.grace, "grace", 2*time.Second, "after COMMAND exits, wait this long for the processes it left running")
	fs.BoolVar(&o.killSurvivors, "kill-survivors", false, "kill the processes of the tree still running after --grace")
	fs.UintVar(&o.ringbufMiB, "ringbuf-mib", 8, "size of the kernel ring buffer in MiB (a power of two)")
	fs.BoolVar(&o.noMetadata, "ignore-metadata", false, "do not report chmod, chown, utimes and xattr changes")
	fs.IntVar(&o.maxViolations, "max-violations", 10000, "list at most `N` paths written outside the allowlist; writes to more are counted (0: no limit)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on http://`ADDR`/metrics (host:port) while COMMAND runs")
	fs.StringVar(&o.pushgateway, "pushgateway", "", "when the run ends, push its metrics to the Pushgateway at `URL`, grouped under job=writewatch and the --metrics-label labels")
	fs.Var(&o.metricsLabels, "metrics-label", "add `key=value` to the push's grouping key and to every metric served or written; repeatable")
	fs.StringVar(&o.metricsTextfile, "metrics-textfile", "", "when the run ends, write its metrics to `PATH` in node_exporter's textfile format, atomically")
	fs.BoolVar(&o.metricsRequired, "metrics-required", false, "a failed push to --pushgateway makes writewatch exit with 70")
	fs.Var(&o.enforce, "enforce", "refuse writes outside the allowlist in the kernel and kill the writer (`--enforce=block`: refuse only); exit 86 when any was tried")
	fs.StringVar(&o.enforceWith, "enforce-with", "auto", "enforcement `TIER`: lsm, landlock, kill, or auto (the strongest this kernel offers)")
	fs.BoolVar(&o.doctor, "doctor", false, "say whether this user can trace here and what to do if not (exit 87), then what this machine supports (BTF, LSMs, Landlock, the --enforce tier)")
	fs.Usage = func() {
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, usageText, b.String())
	}
	if err := fs.Parse(argv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if o.version {
		fmt.Print(versionText(readBuildInfo()))
		return 0
	}
	if o.doctor {
		return doctor(os.Stdout)
	}
	args := fs.Args()
	forced, err := policy.ParseTier(o.enforceWith)
	if err != nil {
		fmt.Fprintf(stderr, "writewatch: %v\n", err)
		return exitUsage
	}
	if o.enforce.on && o.audit {
		fmt.Fprintln(stderr, "writewatch: --enforce and --audit exclude each other")
		return exitUsage
	}
	if !o.printConfig && len(args) == 0 {
		fmt.Fprintln(stderr, "writewatch: no COMMAND given; usage: writewatch [flags] [--] COMMAND [ARGS...] (see --help)")
		return exitUsage
	}
	if o.maxViolations < 0 {
		fmt.Fprintf(stderr, "writewatch: --max-violations %d: must be 0 (no limit) or more\n", o.maxViolations)
		return exitUsage
	}
	if o.ringbufMiB == 0 || o.ringbufMiB&(o.ringbufMiB-1) != 0 || o.ringbufMiB > 1024 {
		fmt.Fprintf(stderr, "writewatch: --ringbuf-mib %d: must be a power of two from 1 to 1024\n", o.ringbufMiB)
		return exitUsage
	}

	if o.metricsRequired && o.pushgateway == "" {
		fmt.Fprintln(stderr, "writewatch: --metrics-required needs --pushgateway")
		return exitUsage
	}
	if o.pushgateway != "" {
		if err := metrics.CheckPushURL(o.pushgateway); err != nil {
			fmt.Fprintf(stderr, "writewatch: --pushgateway: %v\n", err)
			return exitUsage
		}
	}

	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "writewatch: cannot read the working directory: %v\n", err)
		return exitUsage
	}

	var user *launch.Identity
	if !o.asRoot {
		if user, err = launch.SudoIdentity(); err != nil {
			fmt.Fprintf(stderr, "writewatch: %v; pass --as-root to run COMMAND as root\n", err)
			return exitUsage
		}
	}
	env := os.Environ()
	home := os.Getenv("HOME")
	if user != nil {
		env = user.Env(env)
		home = user.Home
	}

	list, err := allowlist.Load(allowlist.Options{
		ConfigPath: o.config,
		WorkDir:    wd,
		Home:       home,
		Getenv:     func(key string) string { return launch.Getenv(env, key) },
		ExtraAllow: o.allow,
		Command:    args,
		Warn:       func(msg string) { fmt.Fprintf(stderr, "writewatch: warning: %s\n", msg) },
		GoEnv: func() (map[string]string, error) {
			return allowlist.RunGoEnv(context.Background(), func(c *exec.Cmd) {
				c.Env = env
				if user != nil {
					c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: user.UID, Gid: user.GID, Groups: user.Groups}}
				}
			})
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "writewatch: %v\n", err)
		return exitUsage
	}
	var (
		plan    *policy.Plan
		support policy.Support
		tier    policy.Tier
		why     string
		tierErr error
	)
	if o.printConfig || o.enforce.on {
		if plan, err = policy.NewPlan(list.Entries()); err != nil {
			fmt.Fprintf(stderr, "writewatch: %v\n", err)
			return exitUsage
		}
		support = policy.Probe()
		tier, why, tierErr = support.Choose(forced)
		if tierErr == nil && o.enforce.block && !tier.Refuses() {
			tierErr = errors.New("--enforce=block: the " + tier.String() + " tier cannot refuse a write, only kill its writer (" + why + ")")
		}
	}
	if o.printConfig {
		err := allowlist.WritePrintConfig(os.Stdout, list)
		if err == nil && tierErr == nil {
			err = policy.WriteExplain(os.Stdout, plan, tier, why)
			if err == nil {
				_, err = fmt.Printf("  metadata changes (chmod, chown, utimes, xattrs): %s\n", metadataEnforcement(o.noMetadata, !o.enforce.block, support.MetadataGuardErr))
			}
		} else if err == nil {
			_, err = fmt.Printf("\nunder --enforce: %v\n", tierErr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "writewatch: %v\n", err)
			return exitInternal
		}
		return 0
	}
	var enf *policy.Enforcement
	if o.enforce.on {
		if tierErr != nil {
			fmt.Fprintf(stderr, "writewatch: cannot trace here: %v\n", tierErr)
			return exitCannot
		}
		enf = &policy.Enforcement{Tier: tier, Kill: !o.enforce.block, Plan: plan, Support: support}
		fmt.Fprintf(stderr, "writewatch: enforcing with %s (%s)\n", tier, why)
		if note := tier.Note(); note != "" {
			fmt.Fprintf(stderr, "writewatch: warning: %s\n", note)
		}
	}

	// Open the report file now, so a bad path stops us before COMMAND runs.
	var jsonOut *os.File
	if o.jsonFile != "" {
		if jsonOut, err = os.Create(o.jsonFile); err != nil {
			fmt.Fprintf(stderr, "writewatch: --json: %v\n", err)
			return exitUsage
		}
		defer jsonOut.Close()
	}
	var junitOut *os.File
	if o.junitFile != "" {
		if junitOut, err = os.Create(o.junitFile); err != nil {
			fmt.Fprintf(stderr, "writewatch: --junit: %v\n", err)
			return exitUsage
		}
		defer junitOut.Close()
	}

	if o.metricsTextfile != "" {
		if err := metrics.CheckTextfile(o.metricsTextfile); err != nil {
			fmt.Fprintf(stderr, "writewatch: --metrics-textfile: %v\n", err)
			return exitUsage
		}
	}

	mode := report.ModeGate
	switch {
	case o.audit:
		mode = report.ModeAudit
	case o.enforce.on:
		mode = report.ModeEnforce
	}
	progress := new(live.Counters)
	mrun := metrics.New(progress, mode, version)
	var server *metrics.Server
	if o.metricsAddr != "" {
		if server, err = mrun.Serve(o.metricsAddr, o.metricsLabels); err != nil {
			fmt.Fprintf(stderr, "writewatch: --metrics-addr: %v\n", err)
			return exitUsage
		}
		defer server.Close()
		if !o.quiet {
			fmt.Fprintf(stderr, "writewatch: serving metrics on http://%s/metrics\n", server.Addr())
		}
	}
	color := status.IsTerminal(os.Stderr) && os.Getenv("NO_COLOR") == ""
	var line *status.Status
	if !o.quiet && status.IsTerminal(os.Stderr) {
		line = status.Start(stderr, progress, status.Options{Color: color, Width: status.Width(os.Stderr)})
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	rep, err := run.Run(run.Config{
		Args:            args,
		Mode:            mode,
		Allow:           list,
		WorkDir:         wd,
		Env:             env,
		User:            user,
		Stdin:           os.Stdin,
		Stdout:          os.Stdout,
		Stderr:          os.Stderr,
		Signals:         sigs,
		Grace:           o.grace,
		KillSurvivors:   o.killSurvivors,
		RingBufferBytes: uint32(o.ringbufMiB) << 20,
		IgnoreMetadata:  o.noMetadata,
		MaxViolations:   o.maxViolations,
		Live:            progress,
		Enforce:         enf,
	})
	if line != nil {
		line.Stop()
	}
	if server != nil {
		if cerr := server.Close(); cerr != nil {
			fmt.Fprintf(stderr, "writewatch: --metrics-addr: %v\n", cerr)
		}
	}
	if rep == nil {
		// COMMAND never ran (not found, not executable, cannot trace
		// here): the metrics still record the run and its exit code, so
		// that a job which cannot trace shows in Prometheus.
		code := startError(stderr, args[0], err, user)
		now := time.Now()
		return writeMetrics(stderr, &o, mrun, &report.Report{
			Version: report.SchemaVersion, Mode: mode, Command: args, WorkDir: wd,
			Started: now, Finished: now, CommandExit: report.NotStarted,
		}, err, code)
	}

	code := rep.CommandExit
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "writewatch: tracing failed while COMMAND ran: %v\n", err)
		code = exitInternal
	case mode != report.ModeAudit && rep.Failed():
		code = exitViolations
	}
	rep.ExitCode = code

	if !o.quiet || rep.Failed() || rep.LostEvents > 0 {
		if werr := report.WriteText(stderr, rep, report.TextOptions{Color: color}); werr != nil && code == 0 {
			code = exitInternal
		}
	}
	if jsonOut != nil {
		// As late as it can be read: after the summary was rendered.
		rep.PeakRSS = run.PeakRSS()
		if werr := report.WriteJSON(jsonOut, rep); werr != nil {
			fmt.Fprintf(stderr, "writewatch: --json %s: %v\n", o.jsonFile, werr)
			if code == rep.CommandExit {
				code = exitInternal
			}
		}
	}
	if junitOut != nil {
		if werr := report.WriteJUnit(junitOut, rep); werr != nil {
			fmt.Fprintf(stderr, "writewatch: --junit %s: %v\n", o.junitFile, werr)
			if code == rep.CommandExit {
				code = exitInternal
			}
		}
	}
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		githubReport(stderr, rep)
	}
	return writeMetrics(stderr, &o, mrun, rep, err, code)
}

// writeMetrics writes the textfile and pushes the run's metrics, as asked,
// and returns the exit code, changed to 70 when the textfile, or a push
// with --metrics-required, failed and nothing more serious had happened.
func writeMetrics(stderr io.Writer, o *options, mrun *metrics.Run, rep *report.Report, traceErr error, code int) int {
	if o.metricsTextfile == "" && o.pushgateway == "" {
		return code
	}
	rep.ExitCode = code
	mrun.Finish(rep, traceErr)
	if o.metricsTextfile != "" {
		if err := mrun.WriteTextfile(o.metricsTextfile, o.metricsLabels); err != nil {
			fmt.Fprintf(stderr, "writewatch: --metrics-textfile: %v\n", err)
			if code == rep.CommandExit {
				code = exitInternal
				rep.ExitCode = code
			}
		}
	}
	if o.pushgateway != "" {
		if err := mrun.Push(context.Background(), o.pushgateway, o.metricsLabels); err != nil {
			fmt.Fprintf(stderr, "writewatch: --pushgateway: %v\n", err)
			if o.metricsRequired && code == rep.CommandExit {
				code = exitInternal
			}
		}
	}
	return code
}

// githubReport adds GitHub Actions annotations (on stderr, which the
// runner reads for workflow commands too, so COMMAND's stdout stays
// untouched) and a summary table to $GITHUB_STEP_SUMMARY.
func githubReport(stderr io.Writer, rep *report.Report) {
	if err := report.WriteGitHubAnnotations(stderr, rep, os.Getenv("GITHUB_WORKSPACE")); err != nil {
		fmt.Fprintf(stderr, "writewatch: GitHub annotations: %v\n", err)
	}
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "writewatch: GITHUB_STEP_SUMMARY: %v\n", err)
		return
	}
	defer f.Close()
	if err := report.WriteGitHubSummary(f, rep); err != nil {
		fmt.Fprintf(stderr, "writewatch: GITHUB_STEP_SUMMARY: %v\n", err)
	}
}

// startError explains why COMMAND could not be run and picks the code.
// user is the sudo caller COMMAND runs as, or nil.
func startError(stderr io.Writer, name string, err error, user *launch.Identity) int {
	switch {
	case errors.Is(err, launch.ErrNotFound):
		fmt.Fprintf(stderr, "writewatch: %s: command not found%s\n", name, user.NotFoundHint(name))
		return exitNotFound
	case errors.Is(err, launch.ErrNotExecutable):
		fmt.Fprintf(stderr, "writewatch: %v\n", err)
		return exitNotExec
	case errors.Is(err, tracer.ErrPermission):
		if advice := launch.CurrentPrivileges().Advice(); advice != "" {
			fmt.Fprintln(stderr, "writewatch: cannot trace here: "+advice)
		} else {
			// Root, or the capabilities are there: the kernel refused for
			// another reason, which the error tells.
			fmt.Fprintf(stderr, "writewatch: cannot trace here: %v\n", err)
		}
		return exitCannot
	case errors.Is(err, run.ErrTracer):
		fmt.Fprintf(stderr, "writewatch: %v\n", err)
		return exitCannot
	case errors.Is(err, launch.ErrConfine):
		fmt.Fprintf(stderr, "writewatch: cannot enforce here: %v (--enforce-with picks another tier; --ignore-metadata goes without the metadata guard)\n", err)
		return exitCannot
	}
	fmt.Fprintf(stderr, "writewatch: %v\n", err)
	return exitInternal
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
