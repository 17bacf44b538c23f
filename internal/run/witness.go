package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/writewatch/writewatch/internal/crosscheck"
	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/phases"
	"github.com/writewatch/writewatch/internal/stream"
	"github.com/writewatch/writewatch/tracer"
	"github.com/writewatch/writewatch/report"
)

// settlePatience is how long the end of a run waits for the witness to
// hand over the changes queued before COMMAND's tree was done.
const settlePatience = 30 * time.Second

// startWatch starts the filesystem witness (package crosscheck) on the
// filesystems that hold what the allowlist protects, before COMMAND
// runs. It returns a function removing the run's private directory.
func startWatch(cfg Config, tr *tracer.Tracer) (*crosscheck.Watch, func()) {
	defer phases.Start("witness")()
	project := cfg.WorkDir
	if cfg.Allow != nil && cfg.Allow.ConfigFile() != "" {
		project = filepath.Dir(cfg.Allow.ConfigFile())
	}
	home := launch.Getenv(cfg.Env, "HOME")
	if cfg.User != nil && cfg.User.Home != "" {
		home = cfg.User.Home
	}
	opts := crosscheck.Options{
		Allow: cfg.Allow, Self: int32(os.Getpid()), InitialPIDNS: crosscheck.InitialPIDNamespace(),
		Tracked: tr.IsTracked, Roots: []string{project, home},
		// No trampoline: contents on demand (crosscheck's contents.go).
		ContentsLater: cfg.Enforce == nil, Inherited: launch.InheritedFDs(cfg.Stdin, cfg.Stdout, cfg.Stderr),
		Later: tr.ContentsLater, Watched: tr.ContentsWatched,
	}
	private, err := os.MkdirTemp("", "writewatch-run-")
	if err != nil {
		private = ""
	}
	w := crosscheck.StartWatch(opts, crosscheck.WatchPaths(cfg.Allow, project, home), private)
	return w, func() { os.RemoveAll(private) } // "" removes nothing
}

// witnessed handles an event of the witness: a change, or a barrier.
func (s *session) witnessed(ev *tracer.Event) {
	if ev.Flags&stream.FlagBarrier != 0 {
		s.fs.BarrierReached(ev.Test)
		s.settled = s.settled || ev.Test == crosscheck.FinalBarrier
		return
	}
	if we := s.fs.Source.Event(ev); we != nil {
		s.found(s.fs.Change(we, ev.BootNS, ev.Time))
	}
}

// tick lets the witness's held changes go when they waited enough, and
// places the barrier that lets processes that left go.
func (s *session) tick() {
	if !s.fs.Active() {
		return
	}
	s.found(s.fs.Caught(stream.BootNow()))
	s.found(s.fs.Expire(time.Now()))
	s.fs.PlaceBarrier()
}

// found adds what the witness found to the report: violations it
// confirms, and those no reported record explains.
func (s *session) found(fs []crosscheck.Finding) {
	for i := range fs {
		f := &fs[i]
		for _, g := range f.Seen {
			s.builder.MarkSeen(g.Op, g.Path, g.Role, g.Who, report.SeenByFilesystem)
		}
		if f.Path != "" {
			s.fsViolation(f)
		}
	}
}

// fsViolation reports a change outside the allowlist that the witness
// alone saw, with the path the kernel changed.
func (s *session) fsViolation(f *crosscheck.Finding) {
	rec := &tracer.Event{TGID: f.TGID}
	if f.Record != nil {
		rec = f.Record.Event()
	}
	viol := report.Violation{
		Op: f.Op, Path: f.Path, RequestedPath: f.Requested, Role: f.Role, First: f.Time,
		Action: report.ActionReported, SeenBy: []string{report.SeenByFilesystem}, PID: int(f.PID), Cmdline: []string{}, Chain: []report.Proc{},
	}
	if f.TGID != 0 {
		p := s.tree.Report(f.TGID)
		viol.PID, viol.PPID, viol.Comm, viol.Cmdline, viol.Exe = p.PID, p.PPID, p.Comm, p.Cmdline, p.Exe
		viol.Chain = s.tree.Chain(f.TGID)
	}
	if f.Record != nil && f.Record.ViaIOUring {
		viol.Via = report.ViaIOUring
	}
	viol.Who = s.tests.Attribute(rec)
	n := s.builder.Len()
	s.builder.Add(viol)
	s.live.Violation(viol.Op, viol.Action, s.builder.Len() > n)
	s.fs.Noted(f.TGID, crosscheck.Group{Op: viol.Op, Path: viol.Path, Role: viol.Role, Who: viol.Who.Key()}, true)
}

// settle reads the stream until the witness has handed over every change
// the kernel queued before the tree was done.
func (s *session) settle(ev *tracer.Event) error {
	placed := s.fs.Finish(settlePatience)
	deadline := time.Now().Add(settlePatience + time.Second)
	for !s.settled {
		s.events.SetDeadline(time.Now().Add(poll))
		err := s.events.Next(ev)
		switch {
		case err == nil:
			s.handle(ev)
			continue
		case !errors.Is(err, tracer.ErrTimeout):
			return err
		}
		s.tick()
		select {
		case err := <-placed:
			if err != nil {
				s.fs.Incompletely(fmt.Sprintf("the filesystem witness could not account for the end of the run: %v", err))
				return nil
			}
		default:
		}
		if time.Now().After(deadline) {
			s.fs.Incompletely("the filesystem witness had not handed over every change " + settlePatience.String() + " after the run")
			return nil
		}
	}
	return nil
}

// witnessReport adds the witness's account to the report.
func (s *session) witnessReport(rep *report.Report) {
	rep.Witness = s.fs.Info()
	rep.Notes = append(rep.Notes, s.fs.Notes()...)
	rep.Incomplete = append(rep.Incomplete, s.fs.Incomplete()...)
}
