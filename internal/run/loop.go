package run

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/metaguard"
	"github.com/writewatch/writewatch/internal/mountinfo"
	"github.com/writewatch/writewatch/internal/phases"
	"github.com/writewatch/writewatch/internal/runners"
	"github.com/writewatch/writewatch/internal/sandbox"
	"github.com/writewatch/writewatch/internal/session"
	"github.com/writewatch/writewatch/internal/stream"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/tracer"
)

// runner is one run's lifecycle: the tracer, the filesystem witness,
// COMMAND, and the pump that hands what they tell to the session.
type runner struct {
	cfg    Config
	tr     *tracer.Tracer
	sess   *session.Session
	events *stream.Stream // the tracer's records, and the witness's changes
	fs     *witness.Watch
	proc   *launch.Process
	guard  *metaguard.Guard // nil: no metadata guard
	tee    *runners.GoJSON  // nil: not go test -json
	gobins runners.GoBinaries
	exit   int
	sb     *sandbox.Sandbox // nil: no sandbox
	// withheld are the descriptors COMMAND did not inherit in the
	// sandbox (withhold).
	withheld []string
	// early holds what the session is told before COMMAND starts.
	early []session.Item
}

// settlePatience is how long the end of a run waits for the witness to
// hand over the changes queued before COMMAND's tree was done.
const settlePatience = 30 * time.Second

// startWatch starts the filesystem witness on the filesystems that hold
// what the allowlist protects, before COMMAND runs. It returns a function
// removing the run's private directory.
func (r *runner) startWatch() func() {
	defer phases.Start("witness")()
	rs := roots(r.cfg)
	opts := witness.WatchOptions{
		Checker: r.sess.Checker(), Allow: r.cfg.Allow,
		// No trampoline: contents on demand (witness's watchcontents.go).
		ContentsLater: r.cfg.Enforce == nil, Inherited: launch.InheritedFDs(r.cfg.Stdin, r.cfg.Stdout, r.cfg.Stderr),
		Later: r.tr.ContentsLater, Watched: r.tr.ContentsWatched,
		Incomplete: func(reason string) { r.tell(session.Item{Incomplete: reason}) },
	}
	if r.sb != nil {
		r.withhold()
		r.fs = witness.Off(r.sess.Checker(), "not used in a sandbox, whose overlays hold what changed")
		r.events = stream.New(&stream.Tracer{Tracer: r.tr})
		return func() {}
	}
	private, err := os.MkdirTemp("", "writewatch-run-")
	if err != nil {
		private = ""
	}
	r.fs = witness.StartWatch(opts, witness.WatchPaths(r.cfg.Allow, rs[0], rs[1]), private)
	r.sess.Watching(r.fs.Active())
	if r.fs.Active() {
		r.events = stream.New(&stream.Tracer{Tracer: r.tr}, &stream.Witness{Queue: r.fs.Queue})
	} else {
		r.events = stream.New(&stream.Tracer{Tracer: r.tr})
	}
	return func() { os.RemoveAll(private) } // "" removes nothing
}

// mountsAtStart tells the kernel the mounts of COMMAND's mount
// namespace (writewatch's) as the run begins (tracer.MountsAtStart), and
// returns their devices, for the session (session.Config.StartDevs).
// When they cannot be read, every mount counts as made during the run
// once the tree has mounted anything: paths through them are doubted,
// never trusted; and no filesystem is the tree's own.
func (r *runner) mountsAtStart() []uint64 {
	defer phases.Start("mounts at start")()
	mounts, err := mountinfo.Read()
	if err != nil {
		return nil
	}
	start := make([]tracer.StartMount, len(mounts))
	var devs []uint64
	for i, m := range mounts {
		start[i] = tracer.StartMount{ID: m.ID, Dev: m.Dev}
		if !slices.Contains(devs, m.Dev) {
			devs = append(devs, m.Dev)
		}
	}
	if r.tr.MountsAtStart(start) != nil {
		return nil // a mount it could not note is doubted, as above
	}
	return devs
}

// tell hands the session an item of the run's own, stamped now; before
// COMMAND starts, it waits for it.
func (r *runner) tell(it session.Item) {
	if r.proc == nil {
		r.early = append(r.early, it)
		return
	}
	r.handle(&it)
}

// launch starts COMMAND as the root of the traced tree, with the metadata
// guard answering its calls when e says so.
func (r *runner) launch(path string, landlock *launch.Landlock, e *tracer.EnforceOptions) error {
	if err := r.tr.Arm(); err != nil {
		return err
	}
	// With go test -json, each test's own result is read from COMMAND's
	// stdout on its way through, unchanged, for the JUnit report.
	stdout := r.cfg.Stdout
	if r.tee = runners.NewGoJSON(r.cfg.Args, r.cfg.Stdout); r.tee != nil {
		stdout = r.tee.Writer()
	}
	proc, err := launch.Start(path, launch.Spec{
		Args: r.cfg.Args, Env: r.cfg.Env, Dir: r.cfg.WorkDir,
		Stdin: r.cfg.Stdin, Stdout: stdout, Stderr: r.cfg.Stderr,
		User: r.cfg.User, Landlock: landlock, MetadataGuard: e != nil && e.MetadataGuarded,
		NoIOURing: e != nil && e.MetadataGuarded && e.NoIOURing,
		Thread:    r.thread(),
	})
	if r.tee != nil {
		r.tee.Started(err == nil)
	}
	if derr := r.tr.Disarm(); err == nil && derr != nil {
		proc.Signal(syscall.SIGKILL)
		proc.Wait()
		return derr
	}
	if err != nil {
		return err
	}
	if l := proc.MetadataListener(); l != nil {
		if r.guard, err = metaguard.Start(l, r.cfg.Enforce.Plan.Allows()); err != nil {
			proc.Signal(syscall.SIGKILL)
			proc.Wait()
			return err
		}
	}
	r.proc = proc
	r.handle(&session.Item{Launched: &session.Launched{PID: uint32(proc.Pid()), Launcher: uint32(os.Getpid())}})
	for i := range r.early {
		r.handle(&r.early[i])
	}
	r.early = nil
	return nil
}

// thread is where COMMAND starts: in the sandbox, else anywhere.
func (r *runner) thread() func(func()) {
	if r.sb == nil {
		return nil
	}
	return r.sb.Do
}

// follow reads the tree's items until COMMAND has exited and its tree
// is empty, or the grace period for survivors is over, passing signals
// on to COMMAND.
func (r *runner) follow() error {
	exited := make(chan int, 1)
	go func() {
		code, err := r.proc.Wait()
		if err != nil {
			code = 128 + int(syscall.SIGKILL)
		}
		exited <- code
		r.events.Wake()
	}()
	signals := make(chan os.Signal, 4)
	go func() {
		for sig := range r.cfg.Signals {
			signals <- sig
			r.events.Wake()
		}
	}()
	err := r.loop(exited, signals)
	if r.guard != nil {
		// Survivors' metadata changes fail from now on (ENOSYS).
		err = errors.Join(err, r.guard.Close())
	}
	return err
}

// loop reads items until COMMAND has exited and its tree is empty (or
// the grace period for survivors is over), then drains what is left.
func (r *runner) loop(exited <-chan int, signals <-chan os.Signal) error {
	var (
		it        session.Item
		done      bool
		graceEnds time.Time
	)
	stats := time.NewTicker(statsEvery)
	defer stats.Stop()
	r.events.SetDeadline(time.Now().Add(poll))
	for {
		err := r.events.Next(&it)
		switch {
		case err == nil:
			r.handle(&it)
		case errors.Is(err, tracer.ErrTimeout):
			r.tick()
			r.events.SetDeadline(time.Now().Add(poll))
		default:
			return err
		}
		select {
		case sig := <-signals:
			r.proc.Signal(sig)
		case <-stats.C:
			if st, err := r.tr.Stats(); err == nil {
				r.cfg.Live.SetKernel(session.KernelCounters(st))
			}
			r.tick()
		case code := <-exited:
			done, r.exit = true, code
			graceEnds = time.Now().Add(r.cfg.Grace)
			// Look at the tree as soon as the ring buffer is empty.
			r.events.SetDeadline(time.Now())
		default:
		}
		if !done || err == nil {
			continue
		}
		alive, terr := r.tr.Tracked()
		if terr != nil {
			return terr
		}
		if len(alive) == 0 || time.Now().After(graceEnds) {
			return r.drain(&it)
		}
	}
}

// drain handles the items already waiting, and the witness's changes up
// to the end of the tree.
func (r *runner) drain(it *session.Item) error {
	if r.fs.Active() {
		if err := r.settle(it); err != nil {
			return err
		}
	}
	r.events.SetDeadline(time.Now())
	for {
		err := r.events.Next(it)
		if errors.Is(err, tracer.ErrTimeout) {
			return nil
		}
		if err != nil {
			return err
		}
		r.handle(it)
	}
}

// settle reads the stream until the witness has handed over every change
// the kernel queued before the tree was done.
func (r *runner) settle(it *session.Item) error {
	placed := r.fs.Finish(settlePatience)
	deadline := time.Now().Add(settlePatience + time.Second)
	for !r.sess.Settled() {
		r.events.SetDeadline(time.Now().Add(poll))
		err := r.events.Next(it)
		switch {
		case err == nil:
			r.handle(it)
			continue
		case !errors.Is(err, tracer.ErrTimeout):
			return err
		}
		r.tick()
		select {
		case err := <-placed:
			if err != nil {
				r.tell(session.Item{Incomplete: fmt.Sprintf("the filesystem witness could not account for the end of the run: %v", err)})
				return nil
			}
		default:
		}
		if time.Now().After(deadline) {
			r.tell(session.Item{Incomplete: "the filesystem witness had not handed over every change " + settlePatience.String() + " after the run"})
			return nil
		}
	}
	return nil
}

// tick tells the session that time passed, so that the witness's held
// changes go when they waited enough, and places the barrier that lets
// processes that left go.
func (r *runner) tick() {
	if !r.fs.Active() {
		return
	}
	r.handle(&session.Item{Tick: true, Boot: witness.BootNow()})
	if id, ok := r.sess.Barrier(); ok {
		r.fs.PlaceBarrier(id)
	}
}

// handle hands one item to the session, stamped now, then does what the
// kernel waits for after a record: contents watched and the process let
// go, a Go test binary followed.
func (r *runner) handle(it *session.Item) {
	it.Now = time.Now()
	r.sess.Handle(it)
	ev := it.Record
	if ev == nil {
		return
	}
	switch ev.Kind {
	case tracer.KindExec:
		r.fs.Contents(ev)
		r.gobins.Exec(r.tr, goBinaries{r}, ev)
	case tracer.KindContents:
		r.fs.Contents(ev)
	case tracer.KindExit:
		r.gobins.Exit(r.tr, ev)
	}
}

// goBinaries tells the session of the Go test binaries the run follows.
type goBinaries struct{ r *runner }

// GoBinary hands the session a Go test binary followed.
func (g goBinaries) GoBinary(tgid uint32, pid int, pkg string, follow bool, problem string, testMain bool) {
	g.r.tell(session.Item{GoBinary: &session.GoBinary{TGID: tgid, PID: pid, Package: pkg, Followed: follow, Problem: problem, TestMain: testMain}})
}

// end is what the run knows once COMMAND and its tree are done, killing
// the survivors when asked to.
func (r *runner) end() (session.End, error) {
	alive, err := r.tr.Tracked()
	if err == nil && r.cfg.KillSurvivors {
		for _, tgid := range alive {
			syscall.Kill(int(tgid), syscall.SIGKILL)
		}
	}
	e := session.End{CommandExit: r.exit, Alive: alive, Witness: r.fs.Info()}
	rerr := r.tr.Repeats(func(k tracer.RepeatKey, n uint64) {
		if r.sess.Repeated(k) {
			e.Repeats = append(e.Repeats, session.Repeat{Key: k, N: n})
		}
	})
	stats, serr := r.tr.Stats()
	stats.Programs = r.tr.ProgramStats()
	e.Stats = stats
	if serr != nil {
		e.StatsErr = serr.Error()
	}
	if r.tee != nil {
		e.TestResults = r.tee.Results(time.Second)
	}
	e.PeakRSS = PeakRSS()
	e.Finished = time.Now()
	return e, errors.Join(err, rerr, serr)
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
