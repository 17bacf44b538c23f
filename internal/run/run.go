// Package run carries out one writewatch run: it loads the tracer, starts
// COMMAND inside the traced tree, judges every write the tree makes
// against the allowlist and builds the report.
package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/metaguard"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/report"
	"github.com/writewatch/writewatch/internal/tracer"
	"golang.org/x/sys/unix"
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
	// IgnoreMetadata leaves chmod, chown, utimes and xattr changes out.
	IgnoreMetadata bool
	// MaxViolations caps the violations listed (0: no cap); writes to
	// further paths are counted in Report.UnlistedViolations.
	MaxViolations int
	// Live, when not nil, receives the run's live counters, for the
	// metrics endpoint and the status line to read while the run lasts.
	Live *live.Counters
	// Tests, if set, is called with the run's test tracker before
	// COMMAND's records are read (its Current method may be polled from
	// another goroutine, for a progress line).
	Tests func(*attribution.Tests)
	// Enforce, when set, makes the kernel refuse writes outside the
	// allowlist (Mode is then report.ModeEnforce).
	Enforce *policy.Enforcement
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
	env, cleanup, notes := prepareEnv(cfg)
	defer cleanup()
	cfg.Env = env
	opts := tracer.Options{RingBufferBytes: cfg.RingBufferBytes, IgnoreMetadata: cfg.IgnoreMetadata, FollowGoTests: true}
	var landlock *launch.Landlock
	switch {
	case cfg.Enforce != nil:
		opts.Marks, opts.Enforce = cfg.Enforce.Kernel()
		landlock = cfg.Enforce.Landlock()
		opts.Enforce.MetadataGuarded = cfg.Enforce.GuardMetadata() && !cfg.IgnoreMetadata
	case cfg.Allow != nil:
		opts.Marks = policy.ObserveMarks(cfg.Allow.Entries())
	}
	tr, err := tracer.New(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTracer, err)
	}
	defer tr.Close()

	rep := &report.Report{
		Version: report.SchemaVersion,
		Mode:    cfg.Mode,
		Command: cfg.Args,
		WorkDir: cfg.WorkDir,
		Started: time.Now(),
	}
	if cfg.Enforce != nil {
		rep.Enforcement = cfg.Enforce.Tier.String()
		rep.EnforcementNote = cfg.Enforce.Tier.Note()
	}
	if cfg.Allow != nil {
		rep.ConfigFile = cfg.Allow.ConfigFile()
	}
	if cfg.Live == nil {
		cfg.Live = new(live.Counters)
	}
	cfg.Live.Start(rep.Started)

	if err := tr.Arm(); err != nil {
		return nil, err
	}
	// With go test -json, each test's own result is read from COMMAND's
	// stdout on its way through, unchanged, for the JUnit report.
	stdout := cfg.Stdout
	var (
		tee     *goJSONTee
		teeSide *os.File
	)
	if cfg.Stdout != nil && looksLikeGoTest(cfg.Args) && hasJSONFlag(cfg.Args) {
		if r, w, perr := os.Pipe(); perr == nil {
			stdout, teeSide = w, w
			tee = startGoJSONTee(r, cfg.Stdout)
		}
	}
	proc, err := launch.Start(path, launch.Spec{
		Args: cfg.Args, Env: cfg.Env, Dir: cfg.WorkDir,
		Stdin: cfg.Stdin, Stdout: stdout, Stderr: cfg.Stderr,
		User: cfg.User, Landlock: landlock,
		MetadataGuard: opts.Enforce != nil && opts.Enforce.MetadataGuarded,
	})
	if teeSide != nil {
		teeSide.Close()
		if err != nil {
			tee.finish(0)
		}
	}
	if derr := tr.Disarm(); err == nil && derr != nil {
		proc.Signal(syscall.SIGKILL)
		proc.Wait()
		return nil, derr
	}
	if err != nil {
		return nil, err
	}
	var guard *metaguard.Guard
	if l := proc.MetadataListener(); l != nil {
		if guard, err = metaguard.Start(l, cfg.Enforce.Plan.Allows()); err != nil {
			proc.Signal(syscall.SIGKILL)
			proc.Wait()
			return nil, err
		}
	}

	tree := attribution.NewTree(uint32(proc.Pid()), uint32(os.Getpid()), cfg.Args)
	s := &session{
		cfg:      cfg,
		live:     cfg.Live,
		tr:       tr,
		builder:  &report.Builder{Limit: cfg.MaxViolations},
		repeatOf: map[tracer.RepeatKey][]group{},
		tree:     tree,
		tests:    attribution.NewTests(tree),
	}
	s.tests.OnCurrent = func(running []string) { s.live.SetTest(runningText(running)) }
	if cfg.Tests != nil {
		cfg.Tests(s.tests)
	}
	s.seen = s.tree.Seen()
	s.live.SetProcesses(s.seen)
	exited := make(chan int, 1)
	go func() {
		code, err := proc.Wait()
		if err != nil {
			code = 128 + int(syscall.SIGKILL)
		}
		exited <- code
		tr.Wake()
	}()
	signals := make(chan os.Signal, 4)
	go func() {
		for sig := range cfg.Signals {
			signals <- sig
			tr.Wake()
		}
	}()

	loopErr := s.loop(proc, exited, signals)
	if guard != nil {
		// Survivors' metadata changes fail from now on (ENOSYS).
		loopErr = errors.Join(loopErr, guard.Close())
	}

	alive, err := tr.Tracked()
	if err == nil && cfg.KillSurvivors {
		for _, tgid := range alive {
			syscall.Kill(int(tgid), syscall.SIGKILL)
		}
	}
	rerr := tr.Repeats(func(k tracer.RepeatKey, n uint64) {
		for _, g := range s.repeatOf[k] {
			s.builder.RepeatN(g.op, g.path, g.role, g.who, int(n))
		}
	})
	stats, serr := tr.Stats()
	rep.Finished = time.Now()
	rep.CommandExit = s.exit
	rep.Processes = s.tree.Seen()
	rep.Events = s.writes + stats.AllowedInKernel + stats.Repeats
	rep.Violations = s.builder.Violations()
	rep.UnlistedViolations = s.builder.Unlisted
	rep.Survivors = s.tree.Survivors(alive)
	rep.SurvivorsKilled = cfg.KillSurvivors && len(alive) > 0
	rep.PeakRSS = PeakRSS()
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
		if cfg.Enforce != nil {
			rep.LostRefusals = cfg.Enforce.Tier.LostRefusals(stats, s.refused)
		}
	}
	if tee != nil {
		for _, res := range tee.finish(time.Second) {
			s.tests.Result(report.RunnerGo, res.pkg, res.test, res.outcome, res.seconds, res.output)
		}
	}
	rep.Tests = s.tests.Results()
	rep.Notes = append(rep.Notes, s.tests.Notes()...)
	rep.Packages = s.tests.Packages()
	rep.ToolchainWrites = s.toolchain
	if len(rep.Packages) > 0 || looksLikeGoTest(cfg.Args) {
		rep.Notes = append(rep.Notes, notes...)
	}
	return rep, errors.Join(loopErr, err, rerr, serr)
}

// group names one violation group.
type group struct{ op, path, role, who string }

type session struct {
	// repeatOf maps a sent write's repeat key to the violations it made,
	// so the kernel's counts of its repeats can be added at the end.
	repeatOf map[tracer.RepeatKey][]group
	cfg      Config
	live     *live.Counters
	tr       *tracer.Tracer
	tree     *attribution.Tree
	tests    *attribution.Tests
	builder  *report.Builder
	judge    judge
	targets  []target
	writes   uint64
	// refused counts the records of writes enforcement acted on.
	refused   policy.Refusals
	toolchain uint64
	seen      int // processes, as last stored in the live counters
	exit      int
}

// loop reads records until COMMAND has exited and its tree is empty (or
// the grace period for survivors is over), then drains what is left.
func (s *session) loop(proc *launch.Process, exited <-chan int, signals <-chan os.Signal) error {
	var (
		ev        tracer.Event
		done      bool
		graceEnds time.Time
	)
	stats := time.NewTicker(statsEvery)
	defer stats.Stop()
	s.tr.SetDeadline(time.Now().Add(poll))
	for {
		err := s.tr.Next(&ev)
		switch {
		case err == nil:
			s.handle(&ev)
		case errors.Is(err, tracer.ErrTimeout):
			s.tr.SetDeadline(time.Now().Add(poll))
		default:
			return err
		}
		select {
		case sig := <-signals:
			proc.Signal(sig)
		case <-stats.C:
			if st, err := s.tr.Stats(); err == nil {
				s.live.SetKernel(kernelCounters(st))
			}
		case code := <-exited:
			done, s.exit = true, code
			graceEnds = time.Now().Add(s.cfg.Grace)
			// Look at the tree as soon as the ring buffer is empty.
			s.tr.SetDeadline(time.Now())
		default:
		}
		if !done || err == nil {
			continue
		}
		alive, terr := s.tr.Tracked()
		if terr != nil {
			return terr
		}
		if len(alive) == 0 || time.Now().After(graceEnds) {
			return s.drain(&ev)
		}
	}
}

// drain handles the records already in the ring buffer.
func (s *session) drain(ev *tracer.Event) error {
	s.tr.SetDeadline(time.Now())
	for {
		err := s.tr.Next(ev)
		if errors.Is(err, tracer.ErrTimeout) {
			return nil
		}
		if err != nil {
			return err
		}
		s.handle(ev)
	}
}

func (s *session) handle(ev *tracer.Event) {
	if ev.Kind == tracer.KindFork && ev.Flags == 1 {
		s.tree.SetRoot(ev.TGID)
		return
	}
	s.tree.Observe(ev)
	if n := s.tree.Seen(); n != s.seen {
		s.seen = n
		s.live.SetProcesses(n)
	}
	switch ev.Kind {
	case tracer.KindWrite:
		// Only an announcement's path is copied for Marker, which keeps
		// parts of it.
		if ev.Op == tracer.OpOpen && strings.HasPrefix(slotView(ev, tracer.SlotPath), attribution.MarkerPrefix) &&
			s.tests.Marker(ev.TGID, ev.String(tracer.SlotPath)) {
			return // a test boundary, not a write
		}
	case tracer.KindExec:
		if ev.Flags&tracer.ExecStopped != 0 {
			s.followGoTest(ev)
		}
		return
	case tracer.KindExit:
		s.tests.Observe(ev, nil)
		s.tr.ForgetGoTest(ev.TGID)
		return
	default:
		s.tests.Observe(ev, s.tr.GoTestSource)
		return
	}
	s.writes++
	s.live.AddEvent()
	s.refused.Count(ev.Action)
	s.targets = s.judge.targets(ev, s.targets[:0])
	rk, repeatable := ev.RepeatKey()
	var (
		who        attribution.Who
		whoKey     string
		attributed bool
		toolchain  bool
	)
	// A write the allowlist allows but enforcement refused (an entry it
	// cannot express exactly) is reported too: its writer saw an error,
	// or was killed. Unless another path of the same call was outside
	// the allowlist: that one explains it.
	refusedAllowed := ev.Action != 0
	for i := 0; refusedAllowed && i < len(s.targets); i++ {
		if ok, _ := s.cfg.Allow.Match(s.targets[i].path); !ok || s.targets[i].truncated {
			refusedAllowed = false
		}
	}
	for _, t := range s.targets {
		allowed, entry := s.cfg.Allow.Match(t.path)
		// A cut path cannot be judged for sure: report it rather than
		// let it pass.
		if allowed && !t.truncated && !refusedAllowed {
			continue
		}
		if !attributed {
			attributed = true
			who = s.tests.Attribute(ev)
			toolchain = s.tests.IsToolchain(ev.TGID)
			var probe report.Violation
			who.Fill(&probe)
			whoKey = report.WhoKey(&probe)
		}
		if toolchain {
			s.toolchain++
			continue
		}
		if s.builder.Repeat(t.op, t.path, t.role, whoKey) {
			s.live.Violation(t.op, policy.Action(ev.Action), false)
			if repeatable && !slices.Contains(s.repeatOf[rk], group{t.op, t.path, t.role, whoKey}) {
				s.repeatOf[rk] = append(s.repeatOf[rk], group{t.op, strings.Clone(t.path), t.role, whoKey})
			}
			continue
		}
		if s.builder.Full() {
			s.builder.Unlisted++
			s.live.Violation(t.op, policy.Action(ev.Action), false)
			continue
		}
		// A new violation: keep copies of the strings, which are views of
		// buffers the next record reuses.
		t.path, t.requested = strings.Clone(t.path), strings.Clone(t.requested)
		if repeatable {
			s.repeatOf[rk] = append(s.repeatOf[rk], group{t.op, t.path, t.role, whoKey})
		}
		p := s.tree.Report(ev.TGID)
		v := report.Violation{
			Op:            t.op,
			Path:          t.path,
			RequestedPath: t.requested,
			Role:          t.role,
			Truncated:     t.truncated,
			PID:           p.PID,
			PPID:          p.PPID,
			Comm:          string(ev.Comm),
			Cmdline:       p.Cmdline,
			Chain:         s.tree.Chain(ev.TGID),
			First:         ev.Time,
			Action:        policy.Action(ev.Action),
			Exe:           p.Exe,
		}
		who.Fill(&v)
		if ev.Op == tracer.OpOpen || ev.Op == tracer.OpCreat {
			v.Flags = openFlags(ev.Flags)
		}
		if ev.ViaIOUring {
			v.Via = report.ViaIOUring
		} else if ev.Ret < 0 {
			v.Errno = unix.ErrnoName(syscall.Errno(-ev.Ret))
		}
		if entry != nil && entry.Kind == allowlist.Deny {
			v.DeniedBy = entry.Source
		}
		if refusedAllowed {
			v.DeniedBy = "--enforce: allowed by " + entry.Source + ", but not enforceable exactly (see --print-config)"
		}
		s.builder.Add(v)
		s.live.Violation(v.Op, v.Action, true)
	}
}

// runningText names the tests running for the status line: the first,
// and how many more.
func runningText(running []string) string {
	switch len(running) {
	case 0:
		return ""
	case 1:
		return running[0]
	}
	return fmt.Sprintf("%s (+%d more)", running[0], len(running)-1)
}

// followGoTest attaches the test-boundary uprobes to a Go test binary the
// kernel paused at exec, then lets it run. It always lets it run.
func (s *session) followGoTest(ev *tracer.Event) {
	pid := ev.NSTGID
	if pid == 0 {
		pid = ev.TGID
	}
	lay, err := s.tr.FollowGoTest(ev.TGID, pid)
	problem := ""
	if err != nil {
		problem = err.Error()
	}
	pkg := lay.Package
	if pkg == "" {
		pkg = filepath.Base(ev.String(tracer.SlotPath))
	}
	s.tests.GoBinary(ev.TGID, int(pid), pkg, err == nil, problem)
	syscall.Kill(int(pid), syscall.SIGCONT)
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
