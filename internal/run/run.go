// Package run carries out one writewatch run: it loads the tracer, starts
// COMMAND inside the traced tree, judges every write the tree makes
// against the allowlist and builds the report.
package run

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/internal/crossread"
	"github.com/writewatch/writewatch/internal/judge"
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/metaguard"
	"github.com/writewatch/writewatch/internal/phases"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/runners"
	"github.com/writewatch/writewatch/internal/severity"
	"github.com/writewatch/writewatch/internal/status"
	"github.com/writewatch/writewatch/internal/stream"
	"github.com/writewatch/writewatch/tracer"
	"github.com/writewatch/writewatch/report"
)

// Config describes one run.
type Config struct {
	Args    []string // COMMAND and its arguments
	Mode    string   // report.ModeGate or report.ModeAudit
	Allow   *allowlist.List
	WorkDir string
	Env     []string         // COMMAND's environment
	User    *launch.Identity // nil: run COMMAND as this process's user

	Stdin, Stdout, Stderr *os.File

	// Signals are forwarded to COMMAND.
	Signals <-chan os.Signal
	// Grace is how long to wait, once COMMAND has exited, for processes it
	// left behind before reporting them as survivors.
	Grace time.Duration
	// KillSurvivors kills the processes still alive after Grace.
	KillSurvivors bool
	// RingBufferBytes sizes the kernel ring buffer (0: default).
	RingBufferBytes uint32
	// IgnoreMetadata leaves chmod, chown, utimes, xattr and inode flag changes out.
	IgnoreMetadata bool
	// MaxViolations caps the violations listed (0: no cap); writes to
	// further paths are counted in Report.UnlistedViolations.
	MaxViolations int
	// Live, when not nil, receives the run's live counters, for the
	// metrics endpoint and the status line to read while the run lasts.
	Live *live.Counters
	// Enforce, when set, makes the kernel refuse writes outside the
	// allowlist (Mode is then report.ModeEnforce).
	Enforce *policy.Enforcement
	// Launched, when not nil, is called once COMMAND has started, or
	// failed to start, before the run follows it.
	Launched func()
}

// ErrTracer wraps a failure to start tracing: no privileges, an
// unsupported kernel.
var ErrTracer = errors.New("cannot trace here")

// poll is how often the loop looks up from reading records to check on
// COMMAND and its survivors.
const poll = 50 * time.Millisecond

// statsEvery is how often the loop reads the kernel's counters (lost
// events, events settled in the kernel, truncated paths) into the live
// counters.
const statsEvery = time.Second

// Run carries out the run. It returns a report whenever COMMAND ran, even
// together with an error from tracing.
func Run(cfg Config) (*report.Report, error) {
	path, err := launch.Resolve(cfg.Args[0], cfg.Env)
	if err != nil {
		return nil, err
	}
	env, cleanup, goflags := runners.PrepareEnv(cfg.Env, cfg.Args, cfg.WorkDir)
	defer cleanup()
	cfg.Env = env
	if cfg.Enforce != nil {
		cfg.Env = cfg.Enforce.Env(cfg.Env)
	}
	opts, landlock := tracerOptions(cfg)
	end := phases.Start("tracer")
	tr, err := tracer.New(opts)
	end()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTracer, err)
	}
	defer tr.Close()

	rep := newReport(cfg)
	if cfg.Live == nil {
		cfg.Live = new(live.Counters)
	}
	cfg.Live.Start(rep.Started)
	s := &session{
		cfg:      cfg,
		live:     cfg.Live,
		tr:       tr,
		events:   stream.New(tr),
		judge:    judge.New(cfg.Allow),
		builder:  &report.Builder{Limit: cfg.MaxViolations},
		xreads:   crossread.New(cfg.MaxViolations),
		severity: severity.New(rep.Started),
		repeatOf: map[tracer.RepeatKey][]group{},
	}
	// The filesystem witness watches from before COMMAND runs.
	fs, removePrivate := startWatch(cfg, tr)
	defer removePrivate()
	defer fs.Close()
	s.fs, s.judge.Held, s.judge.Landlock = fs, fs.HeldFile, landlock != nil
	s.judge.Replaced = func(*tracer.Event, string) {
		fs.Incompletely("a truncate, a change of a file's times or a hard link followed a path whose symlink was replaced after the call, or that was gone when writewatch followed it: writewatch could not tell which file it changed")
	}
	if fs.Active() {
		s.events = stream.New(tr, fs.Source)
	}
	end = phases.Start("launch")
	err = s.launch(path, landlock, opts.Enforce)
	end()
	if cfg.Launched != nil {
		cfg.Launched()
	}
	if err != nil {
		return nil, err
	}
	end = phases.Start("follow and finish")
	loopErr := s.follow()
	err = s.finish(rep)
	end()
	if s.tree != nil {
		rep.Notes = append(rep.Notes, goflags.Notes(runners.GoTests(s.tree.Cmdlines()))...)
	}
	return rep, errors.Join(loopErr, err)
}

// tracerOptions are the kernel's settings for the run, and the Landlock
// ruleset COMMAND starts under, if any.
func tracerOptions(cfg Config) (tracer.Options, *launch.Landlock) {
	opts := tracer.Options{RingBufferBytes: cfg.RingBufferBytes, IgnoreMetadata: cfg.IgnoreMetadata, FollowGoTests: true,
		GoTestsEarly: allowlist.MayRunGo(cfg.Args, cfg.WorkDir, func(k string) string { return launch.Getenv(cfg.Env, k) })}
	var landlock *launch.Landlock
	switch {
	case cfg.Enforce != nil:
		landlock = cfg.Enforce.Landlock()
		landlock.Prepare() // built while the BPF programs load
		opts.Marks, opts.Enforce = cfg.Enforce.Kernel()
		opts.Enforce.MetadataGuarded = cfg.Enforce.GuardMetadata() && !cfg.IgnoreMetadata
	case cfg.Allow != nil:
		// The list may wait for go env: the programs load meanwhile.
		opts.MarksLater = func() []tracer.Mark { return policy.ObserveMarks(cfg.Allow.Entries()) }
	}
	return opts, landlock
}

// newReport starts the run's report.
func newReport(cfg Config) *report.Report {
	rep := &report.Report{
		Version: report.SchemaVersion,
		Mode:    cfg.Mode,
		Command: cfg.Args,
		WorkDir: cfg.WorkDir,
		Home:    launch.Getenv(cfg.Env, "HOME"),
		Started: time.Now(),
	}
	if cfg.Enforce != nil {
		rep.Enforcement = cfg.Enforce.Tier.String()
		rep.EnforcementNote = cfg.Enforce.Tier.Note()
	}
	if cfg.Allow != nil {
		rep.ConfigFile = cfg.Allow.ConfigFile()
	}
	return rep
}

// launch starts COMMAND as the root of the traced tree, with the metadata
// guard answering its calls when e says so.
func (s *session) launch(path string, landlock *launch.Landlock, e *tracer.EnforceOptions) error {
	if err := s.tr.Arm(); err != nil {
		return err
	}
	// With go test -json, each test's own result is read from COMMAND's
	// stdout on its way through, unchanged, for the JUnit report.
	stdout := s.cfg.Stdout
	if s.tee = runners.NewGoJSON(s.cfg.Args, s.cfg.Stdout); s.tee != nil {
		stdout = s.tee.Writer()
	}
	proc, err := launch.Start(path, launch.Spec{
		Args: s.cfg.Args, Env: s.cfg.Env, Dir: s.cfg.WorkDir,
		Stdin: s.cfg.Stdin, Stdout: stdout, Stderr: s.cfg.Stderr,
		User: s.cfg.User, Landlock: landlock, MetadataGuard: e != nil && e.MetadataGuarded,
		NoIOURing: e != nil && e.MetadataGuarded && e.NoIOURing,
	})
	if s.tee != nil {
		s.tee.Started(err == nil)
	}
	if derr := s.tr.Disarm(); err == nil && derr != nil {
		proc.Signal(syscall.SIGKILL)
		proc.Wait()
		return derr
	}
	if err != nil {
		return err
	}
	if l := proc.MetadataListener(); l != nil {
		if s.guard, err = metaguard.Start(l, s.cfg.Enforce.Plan.Allows()); err != nil {
			proc.Signal(syscall.SIGKILL)
			proc.Wait()
			return err
		}
	}
	s.proc = proc
	if s.fs.Active() {
		s.fs.Joined(0, uint32(proc.Pid()))
	}
	s.tree = attribution.NewTree(uint32(proc.Pid()), uint32(os.Getpid()), s.cfg.Args)
	s.tests = attribution.NewTests(s.tree)
	s.tests.OnCurrent = func(running []string) { s.live.SetTest(status.Running(running)) }
	s.seen = s.tree.Seen()
	s.live.SetProcesses(s.seen)
	return nil
}

// follow reads the tree's events until COMMAND has exited and its tree
// is empty, or the grace period for survivors is over, passing signals
// on to COMMAND.
func (s *session) follow() error {
	exited := make(chan int, 1)
	go func() {
		code, err := s.proc.Wait()
		if err != nil {
			code = 128 + int(syscall.SIGKILL)
		}
		exited <- code
		s.events.Wake()
	}()
	signals := make(chan os.Signal, 4)
	go func() {
		for sig := range s.cfg.Signals {
			signals <- sig
			s.events.Wake()
		}
	}()
	err := s.loop(exited, signals)
	if s.guard != nil {
		// Survivors' metadata changes fail from now on (ENOSYS).
		err = errors.Join(err, s.guard.Close())
	}
	return err
}

// finish ends the run, killing the survivors when asked to, and fills in
// the report.
func (s *session) finish(rep *report.Report) error {
	alive, err := s.tr.Tracked()
	if err == nil && s.cfg.KillSurvivors {
		for _, tgid := range alive {
			syscall.Kill(int(tgid), syscall.SIGKILL)
		}
	}
	rerr := s.tr.Repeats(func(k tracer.RepeatKey, n uint64) {
		for _, g := range s.repeatOf[k] {
			s.builder.RepeatN(g.op, g.path, g.role, g.who, int(n))
		}
	})
	stats, serr := s.tr.Stats()
	stats.Programs = s.tr.ProgramStats()
	rep.Finished = time.Now()
	rep.CommandExit = s.exit
	rep.Processes = s.tree.Seen()
	rep.Events = s.writes + stats.AllowedInKernel + stats.Repeats
	rep.Violations = s.builder.Violations()
	s.severity.Survivors = len(alive) > 0
	s.severity.Assign(rep.Violations)
	report.SortBySeverity(rep.Violations)
	rep.UnlistedViolations = s.builder.Unlisted
	s.xreads.Fill(rep)
	rep.Survivors = s.tree.Survivors(alive)
	rep.SurvivorsKilled = s.cfg.KillSurvivors && len(alive) > 0
	rep.PeakRSS = PeakRSS()
	for _, p := range stats.Programs {
		if p.Runs > 0 || p.Missed > 0 {
			rep.Programs = append(rep.Programs, report.ProgramStat{Name: p.Name, Runs: p.Runs, RunNS: uint64(p.Runtime), Missed: p.Missed})
		}
	}
	if serr == nil {
		s.live.SetKernel(kernelCounters(stats))
		rep.LostEvents = stats.Lost()
		rep.LostWrites = stats.LostWrites
		rep.Lost = stats.LostByCause()
		rep.TruncatedPaths = stats.Truncated
		rep.AllowedInKernel = stats.AllowedInKernel
		if u := stats.Unattributed(); len(u) > 0 {
			rep.Unattributed = u
		}
		if s.cfg.Enforce != nil {
			rep.LostRefusals = s.cfg.Enforce.Tier.LostRefusals(stats, s.refused)
		}
		rep.Incomplete = stats.Incomplete(s.cfg.Enforce != nil, s.fs.Active())
		if stats.LostReads > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%d reads of files the run wrote were not seen (the kernel's ring buffer was full): cross-test reads among them are not listed", stats.LostReads))
		}
		if stats.WrittenFull > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%d written files were not watched for reads by other tests (the kernel's set of written files was full): cross-test reads of them are not listed", stats.WrittenFull))
		}
	}
	if s.tee != nil {
		s.tee.Results(time.Second, s.tests)
	}
	rep.Tests = s.tests.Results()
	rep.Notes = append(rep.Notes, s.tests.Notes()...)
	rep.Packages = s.tests.Packages()
	s.witnessReport(rep)
	return errors.Join(err, rerr, serr)
}

// kernelCounters are the kernel's counters the live counters show.
func kernelCounters(st tracer.Stats) live.Kernel {
	return live.Kernel{
		Lost:      [len(live.LostCauses)]uint64{st.RingbufFull, st.ProcMapFull},
		Truncated: st.Truncated,
		Settled:   st.AllowedInKernel + st.Repeats,
	}
}

// PeakRSS is this process's peak resident set size (VmHWM), in bytes.
func PeakRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
