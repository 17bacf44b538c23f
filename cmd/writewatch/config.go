package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/metrics"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/report"
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
  88             writewatch could not see everything (records lost, processes
                 not followed...): the verdict is unknown; the report says why
                 (--accept-incomplete gives COMMAND's own code instead)
  126            COMMAND is not executable
  127            COMMAND was not found
`

// Config is writewatch's command line: every flag, parsed and checked
// in one place.
type Config struct {
	Args           []string // COMMAND and its arguments
	ConfigFile     string   // --config
	Allow          []string // --allow, in order
	Audit          bool
	JSONFile       string
	JUnitFile      string
	PrintConfig    bool
	AsRoot         bool
	Quiet          bool
	Grace          time.Duration
	KillSurvivors  bool
	RingbufMiB     uint
	Version        bool
	IgnoreMetadata bool
	MaxViolations  int
	// SuggestConfig is --suggest-config: where to write a proposed config.
	SuggestConfig string
	// Baseline is --baseline, a report of an earlier run; baseline is
	// that report, read by check.
	Baseline string
	baseline *report.Report

	MetricsAddr     string
	Pushgateway     string
	MetricsLabels   metrics.Labels
	MetricsTextfile string
	MetricsRequired bool

	Enforce     enforceFlag
	EnforceWith string      // as given
	Tier        policy.Tier // EnforceWith parsed by check; nil for auto
	Doctor      bool

	// AcceptIncomplete lets a run that could not see everything exit
	// with COMMAND's own code instead of 88.
	AcceptIncomplete bool

	given []string // the flags on the command line, by name
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

// parseConfig reads the command line into a Config, unchecked. --help
// prints the help on stderr and returns flag.ErrHelp; other errors are
// usage errors.
func parseConfig(argv []string, stderr io.Writer) (*Config, error) {
	c := &Config{}
	fs := c.flagSet()
	if err := fs.Parse(argv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			var b strings.Builder
			fs.SetOutput(&b)
			fs.PrintDefaults()
			fmt.Fprintf(stderr, usageText, b.String())
		}
		return nil, err
	}
	c.Args = fs.Args()
	fs.Visit(func(f *flag.Flag) { c.given = append(c.given, f.Name) })
	return c, nil
}

// flagSet declares every flag, each stored in c. It prints nothing: the
// caller says what went wrong.
func (c *Config) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("writewatch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&c.ConfigFile, "config", "", "use this config `FILE` instead of searching for .writewatch.yaml")
	fs.Func("allow", "also allow `PATTERN` (path or glob, relative to the working directory); repeatable", func(s string) error {
		c.Allow = append(c.Allow, s)
		return nil
	})
	fs.BoolVar(&c.Audit, "audit", false, "observe only: report, then exit with COMMAND's own code")
	fs.BoolVar(&c.AcceptIncomplete, "accept-incomplete", false, "when writewatch could not see everything (records lost, processes not followed), exit with COMMAND's own code instead of 88: a run that missed writes outside the allowlist may then pass")
	fs.StringVar(&c.JSONFile, "json", "", "write the machine-readable report to `FILE`")
	fs.StringVar(&c.JUnitFile, "junit", "", "write a JUnit XML report to `FILE`: a testcase per test, each write a failure of the test that made it")
	fs.BoolVar(&c.PrintConfig, "print-config", false, "print the effective allowlist and where each entry comes from, then exit")
	fs.BoolVar(&c.AsRoot, "as-root", false, "under sudo, run COMMAND as root instead of as the invoking user")
	fs.BoolVar(&c.Quiet, "quiet", false, "print the summary only when something was found")
	fs.DurationVar(&c.Grace, "grace", 2*time.Second, "after COMMAND exits, wait this long for the processes it left running")
	fs.BoolVar(&c.KillSurvivors, "kill-survivors", false, "kill the processes of the tree still running after --grace")
	fs.UintVar(&c.RingbufMiB, "ringbuf-mib", 8, "size of the kernel ring buffer in MiB (a power of two)")
	fs.BoolVar(&c.IgnoreMetadata, "ignore-metadata", false, "do not report chmod, chown, utimes, xattr and inode flag changes")
	fs.IntVar(&c.MaxViolations, "max-violations", 10000, "list at most `N` paths written outside the allowlist; writes to more are counted (0: no limit)")
	fs.StringVar(&c.SuggestConfig, "suggest-config", "", "write a proposed .writewatch.yaml to `FILE`: the config in use plus the fewest allow entries that let this run's writes pass, each commented with its tests and severity (write it in the project's directory: relative entries are relative to the config's)")
	fs.StringVar(&c.Baseline, "baseline", "", "the --json report of an earlier run, `FILE`: writes it lists (same test, operation and path, or path pattern) are marked baselined and fail nothing; only new ones fail the run, and those no longer made are listed as fixed")
	fs.BoolVar(&c.Version, "version", false, "print the version and exit")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on http://`ADDR`/metrics (host:port) while COMMAND runs")
	fs.StringVar(&c.Pushgateway, "pushgateway", "", "when the run ends, push its metrics to the Pushgateway at `URL`, grouped under job=writewatch and the --metrics-label labels")
	fs.Var(&c.MetricsLabels, "metrics-label", "add `key=value` to the push's grouping key and to every metric served or written; repeatable")
	fs.StringVar(&c.MetricsTextfile, "metrics-textfile", "", "when the run ends, write its metrics to `PATH` in node_exporter's textfile format, atomically")
	fs.BoolVar(&c.MetricsRequired, "metrics-required", false, "a failed push to --pushgateway makes writewatch exit with 70")
	fs.Var(&c.Enforce, "enforce", "refuse writes outside the allowlist in the kernel and kill the writer (`--enforce=block`: refuse only); exit 86 when any was tried")
	fs.StringVar(&c.EnforceWith, "enforce-with", "auto", "enforcement `TIER`: lsm, landlock, kill, or auto (the strongest this kernel offers)")
	fs.BoolVar(&c.Doctor, "doctor", false, "say whether this user can trace here and what to do if not (exit 87), then what this machine supports (BTF, LSMs, Landlock, the --enforce tier)")
	return fs
}

// task is what an invocation does.
type task string

// The tasks, each named by the flag that asks for it.
const (
	taskRun         task = ""
	taskPrintConfig task = "print-config"
	taskDoctor      task = "doctor"
	taskVersion     task = "version"
)

// alsoFor names the tasks other than a run in which a flag means
// something. Every flag not listed means something in a run only.
var alsoFor = map[string][]task{
	"config":          {taskPrintConfig},
	"allow":           {taskPrintConfig},
	"as-root":         {taskPrintConfig},
	"ignore-metadata": {taskPrintConfig},
	"enforce":         {taskPrintConfig},
	"enforce-with":    {taskPrintConfig},
	"print-config":    {taskPrintConfig},
	"doctor":          {taskDoctor},
	"version":         {taskVersion},
}

// task is the task the flags ask for; more than one is a usage error.
func (c *Config) task() (task, error) {
	var asked []task
	for _, t := range []struct {
		on bool
		t  task
	}{{c.PrintConfig, taskPrintConfig}, {c.Doctor, taskDoctor}, {c.Version, taskVersion}} {
		if t.on {
			asked = append(asked, t.t)
		}
	}
	switch len(asked) {
	case 0:
		return taskRun, nil
	case 1:
		return asked[0], nil
	}
	return "", fmt.Errorf("--%s and --%s exclude each other", asked[0], asked[1])
}

// check finds the flags that cannot work, alone or together, before
// anything runs: each is a usage error. A flag given where it means
// nothing is one too.
func (c *Config) check() error {
	t, err := c.task()
	if err != nil {
		return err
	}
	if t != taskRun {
		for _, name := range c.given {
			if !slices.Contains(alsoFor[name], t) {
				return fmt.Errorf("--%s means nothing with --%s", name, t)
			}
		}
		if len(c.Args) > 0 {
			return fmt.Errorf("--%s runs no COMMAND (%q)", t, c.Args[0])
		}
	}
	if t == taskDoctor || t == taskVersion {
		return nil
	}
	if c.Tier, err = policy.ParseTier(c.EnforceWith); err != nil {
		return err
	}
	if err := c.checkCombinations(t); err != nil {
		return err
	}
	if c.Baseline != "" {
		if c.baseline, err = report.ReadBaseline(c.Baseline); err != nil {
			return fmt.Errorf("--baseline: %w", err)
		}
	}
	return c.checkValues()
}

// checkCombinations finds flags that mean nothing together, or alone.
func (c *Config) checkCombinations(t task) error {
	if err := c.checkOutputs(); err != nil {
		return err
	}
	switch {
	case c.Enforce.on && c.Audit:
		return errors.New("--enforce and --audit exclude each other")
	case c.AcceptIncomplete && c.Audit:
		return errors.New("--accept-incomplete means nothing with --audit, which never fails a run")
	case t == taskRun && len(c.Args) == 0:
		return errors.New("no COMMAND given: writewatch [flags] [--] COMMAND [ARGS...]")
	case t == taskRun && c.isGiven("enforce-with") && !c.Enforce.on:
		return fmt.Errorf("--enforce-with %s needs --enforce", c.EnforceWith)
	case c.Enforce.block && c.Tier != nil && !c.Tier.Refuses():
		return fmt.Errorf("--enforce=block with --enforce-with %s: the %s tier cannot refuse a write, only kill its writer", c.Tier, c.Tier)
	}
	return c.checkMetricsFlags()
}

// checkOutputs finds two output flags that name the same file.
func (c *Config) checkOutputs() error {
	outputs := map[string]string{}
	for _, o := range []struct{ flag, path string }{{"--json", c.JSONFile}, {"--junit", c.JUnitFile}, {"--metrics-textfile", c.MetricsTextfile}, {"--suggest-config", c.SuggestConfig}} {
		if o.path == "" {
			continue
		}
		p := filepath.Clean(o.path)
		if other, ok := outputs[p]; ok {
			return fmt.Errorf("%s and %s name the same file, %s", other, o.flag, o.path)
		}
		outputs[p] = o.flag
	}
	return nil
}

// checkMetricsFlags finds metrics flags given without the flag they need.
func (c *Config) checkMetricsFlags() error {
	switch {
	case c.MetricsRequired && c.Pushgateway == "":
		return errors.New("--metrics-required needs --pushgateway")
	case len(c.MetricsLabels) > 0 && c.MetricsAddr == "" && c.Pushgateway == "" && c.MetricsTextfile == "":
		return errors.New("--metrics-label needs --metrics-addr, --pushgateway or --metrics-textfile")
	}
	return nil
}

// checkValues finds values out of range or malformed.
func (c *Config) checkValues() error {
	switch {
	case c.MaxViolations < 0:
		return fmt.Errorf("--max-violations %d: must be 0 (no limit) or more", c.MaxViolations)
	case c.RingbufMiB == 0 || c.RingbufMiB&(c.RingbufMiB-1) != 0 || c.RingbufMiB > 1024:
		return fmt.Errorf("--ringbuf-mib %d: must be a power of two from 1 to 1024", c.RingbufMiB)
	case c.Grace < 0:
		return fmt.Errorf("--grace %v: must be 0 or more", c.Grace)
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr %s: want host:port (%w)", c.MetricsAddr, err)
		}
	}
	if c.Pushgateway != "" {
		if err := checkPushgateway(c.Pushgateway); err != nil {
			return fmt.Errorf("--pushgateway %w", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.MetricsLabels)) {
		switch v := c.MetricsLabels[k]; {
		case v == "":
			return fmt.Errorf("--metrics-label %s=: an empty value is no label to Prometheus", k)
		case !utf8.ValidString(v):
			return fmt.Errorf("--metrics-label %s: the value is not valid UTF-8", k)
		}
	}
	return nil
}

// checkPushgateway checks the Pushgateway's URL: http:// or https://, a
// host, and nothing Push adds itself.
func checkPushgateway(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https"):
		return fmt.Errorf("%s: want an http:// or https:// URL", raw)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%s: no host", raw)
	}
	return metrics.CheckPushURL(raw)
}

// isGiven reports whether the flag was on the command line.
func (c *Config) isGiven(name string) bool { return slices.Contains(c.given, name) }

// reportMode is the report's mode: gate (the default), audit or enforce.
func (c *Config) reportMode() string {
	switch {
	case c.Audit:
		return report.ModeAudit
	case c.Enforce.on:
		return report.ModeEnforce
	}
	return report.ModeGate
}

// usageError says what is wrong with the command line, in one line, and
// returns the exit code for it.
func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "writewatch: %v; see writewatch --help\n", err)
	return exitUsage
}
