package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/metrics"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/render"
	"github.com/writewatch/writewatch/report"
)

// Config is writewatch's command line: every flag, parsed and checked
// in one place.
type Config struct {
	Args       []string // COMMAND and its arguments
	ConfigFile string   // --config
	Allow      []string // --allow, in order
	Audit      bool
	// Files are the files of the report formats asked for (--json,
	// --junit: render.Formats), by format name.
	Files          map[string]string
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

	// Sandbox is --sandbox; SandboxKeep --sandbox-keep (which implies
	// it).
	Sandbox     bool
	SandboxKeep string

	given    []string // the flags on the command line, by name
	dashdash bool     // -- ended the flags
}

// enforceFlag is --enforce (refuse and kill) or --enforce=block (refuse
// only); =true and =false as every boolean flag.
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
	case "true":
		*f = enforceFlag{on: true}
	case "block":
		*f = enforceFlag{on: true, block: true}
	case "false":
		*f = enforceFlag{}
	case "kill":
		return errors.New("want --enforce (refuse and kill the writer) or --enforce=block (refuse only); the kill tier is --enforce-with kill")
	default:
		return errors.New("want --enforce (refuse and kill the writer) or --enforce=block (refuse only)")
	}
	return nil
}

// parseConfig reads the command line into a Config, unchecked. --help
// returns flag.ErrHelp; other errors are usage errors.
func parseConfig(argv []string) (*Config, error) {
	c := &Config{}
	fs := c.flagSet()
	var err error
	if c.Args, c.dashdash, err = parseArgs(fs, argv); err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { c.given = append(c.given, f.Name) })
	return c, nil
}

// flagSet declares every flag, each stored in c. A flag's usage is its
// line in the help: the word in backquotes names its value.
func (c *Config) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("writewatch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	boolVar := func(p *bool, name, usage string) { fs.Var(boolValue{p, name}, name, usage) }
	fs.StringVar(&c.ConfigFile, "config", "", "use `FILE` as the config, not .writewatch.yaml")
	fs.Func("allow", "also allow `PATTERN` (a path or glob); repeatable", func(s string) error {
		c.Allow = append(c.Allow, s)
		return nil
	})
	boolVar(&c.Audit, "audit", "report only, and exit with COMMAND's own code")
	boolVar(&c.AcceptIncomplete, "accept-incomplete", "give COMMAND's code, not 88, when not all was seen")
	for _, f := range render.Formats() {
		fs.Func(f.Name, f.Usage, func(path string) error {
			if c.Files == nil {
				c.Files = map[string]string{}
			}
			c.Files[f.Name] = path
			return nil
		})
	}
	boolVar(&c.PrintConfig, "print-config", "print the allowlist and how --enforce applies it")
	boolVar(&c.AsRoot, "as-root", "under sudo, run COMMAND as root, not as you")
	boolVar(&c.Quiet, "quiet", "print the summary only when something was found")
	fs.DurationVar(&c.Grace, "grace", 2*time.Second, "wait `DURATION` for leftover processes")
	boolVar(&c.KillSurvivors, "kill-survivors", "kill what is still running after --grace")
	fs.UintVar(&c.RingbufMiB, "ringbuf-mib", 8, "a ring buffer of `N` MiB (a power of two)")
	boolVar(&c.IgnoreMetadata, "ignore-metadata", "do not report chmod, chown, utimes, xattr, chattr")
	fs.IntVar(&c.MaxViolations, "max-violations", 10000, "list at most `N` paths (0: all)")
	fs.StringVar(&c.SuggestConfig, "suggest-config", "", "write to `FILE` a config that lets this run pass")
	fs.StringVar(&c.Baseline, "baseline", "", "writes `FILE` (a --json report) lists fail nothing")
	boolVar(&c.Version, "version", "print the version and exit")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve metrics on http://`ADDR`/metrics (host:port)")
	fs.StringVar(&c.Pushgateway, "pushgateway", "", "push the metrics to the Pushgateway at `URL`")
	fs.Var(&c.MetricsLabels, "metrics-label", "add the label `KEY=VALUE` to each metric; repeatable")
	fs.StringVar(&c.MetricsTextfile, "metrics-textfile", "", "write the metrics to `FILE` for node_exporter")
	boolVar(&c.MetricsRequired, "metrics-required", "exit with 70 when the push to --pushgateway fails")
	boolVar(&c.Sandbox, "sandbox", "run COMMAND where nothing outside the allowlist changes for real")
	fs.StringVar(&c.SandboxKeep, "sandbox-keep", "", "--sandbox, keeping in `DIR` what would have changed")
	fs.Var(&c.Enforce, "enforce", "refuse writes outside the allowlist; kill writers")
	fs.StringVar(&c.EnforceWith, "enforce-with", "auto", "`TIER`: auto (the default), lsm, landlock or kill")
	boolVar(&c.Doctor, "doctor", "say whether you can trace here, and what to do")
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
	if err := c.checkFileValues(t, os.Environ()); err != nil {
		return err
	}
	if t == taskDoctor || t == taskVersion {
		return nil
	}
	if c.ConfigFile != "" {
		if _, err := os.Stat(c.ConfigFile); err != nil {
			return fmt.Errorf("--config %s: %w", c.ConfigFile, pathError(err))
		}
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

// fileFlag is a flag whose value is a file (or, --allow, a path): what
// it takes, and an example of it for messages.
type fileFlag struct {
	name, takes, example string
	values               []string
}

// exampleFile is an example of file flag name's value (a report
// format's from its Format).
func exampleFile(name string) string {
	for _, f := range render.Formats() {
		if f.Name == name {
			return f.Example
		}
	}
	return fileExample[name]
}

// fileExample is an example of each file flag's value but the report
// formats'.
var fileExample = map[string]string{
	"config":           "ci.writewatch.yaml",
	"allow":            "build",
	"suggest-config":   ".writewatch.yaml.new",
	"baseline":         "baseline.json",
	"metrics-textfile": "writewatch.prom",
}

func (c *Config) fileFlags() []fileFlag {
	flags := []fileFlag{
		{name: "config", values: []string{c.ConfigFile}},
		{name: "allow", takes: "a path or glob", values: c.Allow},
		{name: "suggest-config", values: []string{c.SuggestConfig}},
		{name: "baseline", values: []string{c.Baseline}},
		{name: "metrics-textfile", values: []string{c.MetricsTextfile}},
	}
	for _, f := range render.Formats() {
		flags = append(flags, fileFlag{name: f.Name, values: []string{c.Files[f.Name]}})
	}
	for i := range flags {
		flags[i].example = exampleFile(flags[i].name)
		if flags[i].takes == "" {
			flags[i].takes = "a file name"
		}
	}
	return flags
}

// checkFileValues refuses a file flag's value that looks like a slip:
// a flag (its value forgotten: --json --audit), or, in a run whose flags
// no -- ended, a command in env's PATH or an executable file (--json go
// test ./...): the flag took COMMAND's first word, and writewatch would
// run the rest, and write over a file of that name.
func (c *Config) checkFileValues(t task, env []string) error {
	for _, f := range c.fileFlags() {
		for _, v := range f.values {
			rest := strings.Join(append([]string{v}, c.Args...), " ")
			switch {
			case strings.HasPrefix(v, "-"):
				return fmt.Errorf("--%s takes %s; got %q, which is a flag: write --%s %s %s (./%s for a file of that name)",
					f.name, f.takes, v, f.name, f.example, rest, v)
			case t == taskRun && !c.dashdash && v != "" && isCommand(v, env):
				return fmt.Errorf("--%s takes %s; got %q, which is a command: write --%s %s %s, or put -- before COMMAND",
					f.name, f.takes, v, f.name, f.example, rest)
			}
		}
	}
	if c.Enforce.on && !c.Enforce.block && !c.dashdash && len(c.Args) > 0 && c.Args[0] == "block" {
		return errors.New("--enforce takes block after =: write --enforce=block")
	}
	return nil
}

// isCommand says whether name is a command a shell would run, in env's
// PATH: an executable file.
func isCommand(name string, env []string) bool {
	_, err := launch.Resolve(name, env)
	return err == nil
}

// pathError is the reason of a file's error, without the operation and
// the path, which the message says already.
func pathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkCombinations finds flags that mean nothing together, or alone.
func (c *Config) checkCombinations(t task) error {
	if err := c.checkOutputs(); err != nil {
		return err
	}
	switch {
	case c.Enforce.on && c.Audit:
		return errors.New("--enforce and --audit exclude each other")
	case c.Enforce.on && (c.Sandbox || c.SandboxKeep != ""):
		return errors.New("--enforce and --sandbox exclude each other: the sandbox keeps writes outside the allowlist from the real files without refusing them")
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
	var files []struct{ flag, path string }
	for _, f := range render.Formats() {
		files = append(files, struct{ flag, path string }{"--" + f.Name, c.Files[f.Name]})
	}
	files = append(files, struct{ flag, path string }{"--metrics-textfile", c.MetricsTextfile}, struct{ flag, path string }{"--suggest-config", c.SuggestConfig})
	for _, o := range files {
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

// wantsMetrics reports whether a metrics output is asked for
// (--metrics-addr, --pushgateway, --metrics-textfile): only then are the
// run's metrics made, and with them the Prometheus client library's
// registries.
func (c *Config) wantsMetrics() bool {
	return c.MetricsAddr != "" || c.Pushgateway != "" || c.MetricsTextfile != ""
}

// checkMetricsFlags finds metrics flags given without the flag they need.
// A metrics output given an empty value (--pushgateway "", as a CI
// variable left unset expands) is off, and the labels given with it are
// checked but unused; --metrics-required still needs a URL to push to.
func (c *Config) checkMetricsFlags() error {
	switch {
	case c.MetricsRequired && c.isGiven("pushgateway") && c.Pushgateway == "":
		return errors.New(`--metrics-required needs a URL to push to: --pushgateway is ""`)
	case c.MetricsRequired && c.Pushgateway == "":
		return errors.New("--metrics-required needs --pushgateway")
	case len(c.MetricsLabels) > 0 && !c.metricsFlagGiven():
		return errors.New("--metrics-label needs --metrics-addr, --pushgateway or --metrics-textfile")
	}
	return nil
}

// emptyMetricsFlags says, for each metrics output flag given an empty
// value, that it is off.
func (c *Config) emptyMetricsFlags() []string {
	var notes []string
	for _, f := range []struct{ name, value, off string }{
		{"metrics-addr", c.MetricsAddr, "no metrics are served"},
		{"pushgateway", c.Pushgateway, "the metrics are not pushed"},
		{"metrics-textfile", c.MetricsTextfile, "no textfile is written"},
	} {
		if f.value == "" && c.isGiven(f.name) {
			notes = append(notes, fmt.Sprintf("--%s is empty: %s", f.name, f.off))
		}
	}
	return notes
}

// metricsFlagGiven reports whether a metrics output flag is on the
// command line, with a value or empty.
func (c *Config) metricsFlagGiven() bool {
	return c.isGiven("metrics-addr") || c.isGiven("pushgateway") || c.isGiven("metrics-textfile")
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

// usageError says what is wrong, in one line, and returns the exit code
// for it. A mistake in the config file names the file and the line; any
// other (a flag, its value, a file it names) points to --help.
func usageError(stderr io.Writer, err error) int {
	var ce *allowlist.ConfigError
	if errors.As(err, &ce) {
		fmt.Fprintf(stderr, "writewatch: %v\n", err)
	} else {
		fmt.Fprintf(stderr, "writewatch: %v; see writewatch --help\n", err)
	}
	return exitUsage
}
