// Package run carries out one writewatch run: it loads the tracer, starts
// COMMAND inside the traced tree, judges every write the tree makes
// against the allowlist and builds the report.
package run

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/phases"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/runners"
	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
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
	// Record, when not nil, receives a recording of the run's items, for
	// a replay with no kernel (session.ReadRecording).
	Record io.Writer
	// Sandbox runs COMMAND in a sandbox whose overlays keep what it
	// writes outside the allowlist (package sandbox); SandboxKeep is
	// where a copy of what it would have changed is kept, "" for none.
	Sandbox     bool
	SandboxKeep string
	// Baseline is the --baseline report, BaselineFile its name as the
	// user gave it; nil without one.
	Baseline     *report.Report
	BaselineFile string
	// Killed, when not nil, is told of each process --enforce kills, as
	// soon as its record is read (session.Config.Killed).
	Killed func(k *report.Kill)
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
	if cfg.Live == nil {
		cfg.Live = new(live.Counters)
	}
	r := &runner{cfg: cfg, tr: tr}
	sc, h := sessionConfig(cfg, goflags, tr), host.Live{Source: tr.GoTestSource, Funcs: tr.GoTestFuncs, Mounts: tr.MountCalls}
	if !cfg.Sandbox {
		sc.StartDevs = r.mountsAtStart()
	}
	if cfg.Sandbox {
		if r.sb, err = startSandbox(cfg); err != nil {
			return nil, err
		}
		defer r.sb.Close()
		sc.Sandbox, h.Root = sandboxConfig(r.sb), r.sb.Root()
	}
	sess, err := session.New(sc, h)
	if err != nil {
		return nil, err
	}
	r.sess = sess
	// The filesystem witness watches from before COMMAND runs.
	removePrivate := r.startWatch()
	defer removePrivate()
	defer r.fs.Close()
	end = phases.Start("launch")
	err = r.launch(path, landlock, opts.Enforce)
	end()
	if cfg.Launched != nil {
		cfg.Launched()
	}
	if err != nil {
		return nil, err
	}
	end = phases.Start("follow and finish")
	loopErr := r.follow()
	last, err := r.end()
	if r.sb != nil {
		r.sandboxed(&last)
	}
	rep := sess.Finish(last)
	end()
	return rep, errors.Join(loopErr, err, sess.RecordErr())
}

// sessionConfig is what the run's session knows before COMMAND starts.
func sessionConfig(cfg Config, goflags runners.GoFlags, tr *tracer.Tracer) session.Config {
	sc := session.Config{
		Mode: cfg.Mode, Command: cfg.Args, WorkDir: cfg.WorkDir, Home: launch.Getenv(cfg.Env, "HOME"), Started: time.Now(),
		Allow: cfg.Allow, MaxViolations: cfg.MaxViolations, KillSurvivors: cfg.KillSurvivors,
		InitialPIDNS: witness.InitialPIDNamespace(), Self: int32(os.Getpid()), Roots: roots(cfg),
		GoFlags: goflags, Live: cfg.Live, Tracked: tr.IsTracked, Record: cfg.Record,
		Baseline: cfg.Baseline, BaselineFile: cfg.BaselineFile,
		Resume: func(ev *tracer.Event) { ev.Resume() }, Killed: cfg.Killed,
	}
	if cfg.Enforce != nil {
		sc.Tier = cfg.Enforce.Tier.String()
	}
	return sc
}

// roots are where the run's files lie: the project, the home directory.
func roots(cfg Config) []string {
	project := cfg.WorkDir
	if cfg.Allow != nil && cfg.Allow.ConfigFile() != "" {
		project = filepath.Dir(cfg.Allow.ConfigFile())
	}
	home := launch.Getenv(cfg.Env, "HOME")
	if cfg.User != nil && cfg.User.Home != "" {
		home = cfg.User.Home
	}
	return []string{project, home}
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
