package run

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/internal/crosscheck"
	"github.com/writewatch/writewatch/internal/crossread"
	"github.com/writewatch/writewatch/internal/judge"
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/metaguard"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/runners"
	"github.com/writewatch/writewatch/internal/severity"
	"github.com/writewatch/writewatch/internal/stream"
	"github.com/writewatch/writewatch/tracer"
	"github.com/writewatch/writewatch/report"
	"golang.org/x/sys/unix"
)

// group names one violation group.
type group struct{ op, path, role, who string }

// session is one run from COMMAND's start to its report.
type session struct {
	// repeatOf maps a sent write's repeat key to the violations it made,
	// so the kernel's counts of its repeats can be added at the end.
	repeatOf map[tracer.RepeatKey][]group
	cfg      Config
	live     *live.Counters
	tr       *tracer.Tracer
	events   *stream.Stream // the tracer's records, and the witness's changes
	fs       *crosscheck.Watch
	settled  bool // the witness handed over every change of the tree
	proc     *launch.Process
	guard    *metaguard.Guard // nil: no metadata guard
	tee      *runners.GoJSON  // nil: not go test -json
	gobins   runners.GoBinaries
	tree     *attribution.Tree
	tests    *attribution.Tests
	builder  *report.Builder
	xreads   *crossread.Tracker // reads of files another test wrote
	severity *severity.Tracker
	judge    *judge.Judge
	writes   uint64
	// refused counts the records of writes enforcement acted on.
	refused policy.Refusals
	seen    int // processes, as last stored in the live counters
	exit    int
}

// loop reads records until COMMAND has exited and its tree is empty (or
// the grace period for survivors is over), then drains what is left.
func (s *session) loop(exited <-chan int, signals <-chan os.Signal) error {
	var (
		ev        tracer.Event
		done      bool
		graceEnds time.Time
	)
	stats := time.NewTicker(statsEvery)
	defer stats.Stop()
	s.events.SetDeadline(time.Now().Add(poll))
	for {
		err := s.events.Next(&ev)
		switch {
		case err == nil:
			s.handle(&ev)
		case errors.Is(err, tracer.ErrTimeout):
			s.tick()
			s.events.SetDeadline(time.Now().Add(poll))
		default:
			return err
		}
		select {
		case sig := <-signals:
			s.proc.Signal(sig)
		case <-stats.C:
			if st, err := s.tr.Stats(); err == nil {
				s.live.SetKernel(kernelCounters(st))
			}
			s.tick()
		case code := <-exited:
			done, s.exit = true, code
			graceEnds = time.Now().Add(s.cfg.Grace)
			// Look at the tree as soon as the ring buffer is empty.
			s.events.SetDeadline(time.Now())
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

// drain handles the records already waiting, and the witness's changes
// up to the end of the tree.
func (s *session) drain(ev *tracer.Event) error {
	if s.fs.Active() {
		if err := s.settle(ev); err != nil {
			return err
		}
	}
	s.events.SetDeadline(time.Now())
	for {
		err := s.events.Next(ev)
		if errors.Is(err, tracer.ErrTimeout) {
			s.found(s.fs.Flush())
			return nil
		}
		if err != nil {
			return err
		}
		s.handle(ev)
	}
}

// markerPrefix starts the path of a test-boundary announcement.
var markerPrefix = []byte(attribution.MarkerPrefix)

// handle takes one record, or one change the witness saw, into account.
func (s *session) handle(ev *tracer.Event) {
	if ev.Kind == stream.KindFilesystem {
		s.witnessed(ev)
		return
	}
	if ev.Kind == tracer.KindRead {
		s.tree.Observe(ev)
		s.xreads.Read(s.tree, s.tests, ev)
		return
	}
	if s.observe(ev) {
		s.write(ev)
	}
	if s.fs.Active() {
		s.found(s.fs.Caught(ev.BootNS))
	}
}

// observe follows the process tree and the tests through a record, and
// reports whether it is a write to judge.
func (s *session) observe(ev *tracer.Event) bool {
	if ev.Kind == tracer.KindFork && ev.Flags == 1 {
		s.tree.SetRoot(ev.TGID)
		if s.fs.Active() {
			s.fs.Joined(ev.TGID, uint32(s.proc.Pid()))
		}
		return false
	}
	s.tree.Observe(ev)
	s.member(ev)
	if n := s.tree.Seen(); n != s.seen {
		s.seen = n
		s.live.SetProcesses(n)
	}
	switch ev.Kind {
	case tracer.KindWrite:
		// A test boundary is not a write. Only an announcement's path is
		// copied for Marker, which keeps parts of it.
		return ev.Op != ops.Open || !bytes.HasPrefix(ev.Bytes(tracer.SlotPath), markerPrefix) ||
			!s.tests.Marker(ev.TGID, ev.String(tracer.SlotPath))
	case tracer.KindExec:
		s.fs.Contents(ev)
		s.gobins.Exec(s.tr, s.tests, ev)
	case tracer.KindContents:
		return s.fs.Contents(ev)
	case tracer.KindExit:
		s.tests.Observe(ev, nil)
		s.gobins.Exit(s.tr, ev)
	default:
		s.tests.Observe(ev, s.tr.GoTestSource)
	}
	return false
}

// member tells the witness's Checker who joins and leaves the tree.
func (s *session) member(ev *tracer.Event) {
	if !s.fs.Active() {
		return
	}
	switch ev.Kind {
	case tracer.KindFork:
		s.fs.Joined(ev.TGID, ev.NSTGID)
	case tracer.KindExit:
		if p := s.tree.Proc(ev.TGID); p != nil {
			s.fs.Left(ev.TGID, p.NSTGID)
		}
	}
}

// write judges a write record, and counts and reports each path it wrote
// outside the allowlist; then the witness's Checker keeps it to explain
// the changes it made.
func (s *session) write(ev *tracer.Event) {
	s.writes++
	s.live.AddEvent()
	s.refused.Count(ev.Action)
	verdicts := s.judge.Record(ev)
	if ev.Paused { // the judge followed its path: the process may change it now
		ev.Resume()
	}
	s.fs.Unsettled(ev, len(verdicts))
	s.report(ev, verdicts)
	if s.fs.Active() {
		s.found(s.fs.Record(ev))
	}
}

// report counts and reports the verdicts of a write record.
func (s *session) report(ev *tracer.Event, verdicts []judge.Verdict) {
	if len(verdicts) == 0 {
		return
	}
	who := s.tests.Attribute(ev)
	whoKey := who.Key()
	act := policy.Action(ev.Action)
	rk, repeatable := ev.RepeatKey()
	for i := range verdicts {
		v := &verdicts[i]
		if s.fs.Active() {
			s.fs.Noted(ev.TGID, crosscheck.Group{Op: v.Op, Path: v.Path, Role: v.Role, Who: whoKey}, false)
		}
		if !s.builder.Full() || s.builder.Has(v.Op, v.Path, v.Role, whoKey) {
			s.severity.Observe(v.Occurrence(ev, whoKey))
		}
		switch {
		case s.builder.Repeat(v.Op, v.Path, v.Role, whoKey):
			s.live.Violation(v.Op, act, false)
			if repeatable && !slices.Contains(s.repeatOf[rk], group{v.Op, v.Path, v.Role, whoKey}) {
				s.repeatOf[rk] = append(s.repeatOf[rk], group{v.Op, strings.Clone(v.Path), v.Role, whoKey})
			}
		case s.builder.Full():
			s.builder.Unlisted++
			s.live.Violation(v.Op, act, false)
		default:
			// A new violation: keep copies of the strings, which are
			// views of buffers the next record reuses.
			viol := s.violation(ev, v)
			viol.Who = who
			if repeatable {
				s.repeatOf[rk] = append(s.repeatOf[rk], group{viol.Op, viol.Path, viol.Role, whoKey})
			}
			s.builder.Add(viol)
			s.live.Violation(viol.Op, viol.Action, true)
		}
	}
	s.xreads.Wrote(s.tree, ev, who, verdicts[0].Op)
}

// violation describes a new violation: the path judged, and the process
// that wrote it.
func (s *session) violation(ev *tracer.Event, v *judge.Verdict) report.Violation {
	p := s.tree.Report(ev.TGID)
	viol := report.Violation{
		Op:            v.Op,
		Path:          strings.Clone(v.Path),
		RequestedPath: strings.Clone(v.Requested),
		Role:          v.Role,
		Truncated:     v.Truncated,
		PID:           p.PID,
		PPID:          p.PPID,
		Comm:          string(ev.Comm),
		Cmdline:       p.Cmdline,
		Chain:         s.tree.Chain(ev.TGID),
		First:         ev.Time,
		Action:        policy.Action(ev.Action),
		Exe:           p.Exe,
		DeniedBy:      v.DeniedBy(),
		NotEnforced:   v.NotEnforced(),
		SeenBy:        []string{report.SeenBySyscall},
	}
	if ev.Op == ops.Open || ev.Op == ops.Creat {
		viol.Flags = judge.OpenFlags(ev.Flags)
	}
	if ev.ViaIOUring {
		viol.Via = report.ViaIOUring
	} else if ev.Ret < 0 {
		viol.Errno = unix.ErrnoName(syscall.Errno(-ev.Ret))
	}
	return viol
}
