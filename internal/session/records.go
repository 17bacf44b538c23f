package session

import (
	"bytes"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/internal/judge"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/policy"
	"github.com/writewatch/writewatch/internal/witness"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// markerPrefix starts the path of a test-boundary announcement.
var markerPrefix = []byte(attribution.MarkerPrefix)

// record takes one record of the tracer into account.
func (s *Session) record(ev *tracer.Event) {
	if ev.Kind == tracer.KindRead {
		s.tree.Observe(ev)
		s.xreads.read(s.tree, s.tests, ev)
		return
	}
	if w := s.observe(ev); w != nil {
		s.write(w)
	}
	if s.cfg.Witness {
		s.found(s.checker.Caught(ev.BootNS))
	}
}

// observe follows the process tree and the tests through a record, and
// returns the write it makes to judge, if any.
func (s *Session) observe(ev *tracer.Event) *tracer.Event {
	if ev.Kind == tracer.KindFork && ev.Flags == 1 {
		s.tree.SetRoot(ev.TGID)
		if s.cfg.Witness {
			s.checker.Joined(ev.TGID, s.pid)
		}
		return nil
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
		if ev.Op == ops.Open && bytes.HasPrefix(ev.Bytes(tracer.SlotPath), markerPrefix) &&
			s.tests.Marker(ev.TGID, ev.String(tracer.SlotPath)) {
			return nil
		}
		return ev
	case tracer.KindContents:
		return heldWrite(ev)
	case tracer.KindExit:
		s.tests.Observe(ev, nil)
	case tracer.KindExec:
	default:
		s.tests.Observe(ev, s.host.GoTestSource)
	}
	return nil
}

// heldWrite is the open for writing a record that asks for contents to
// be watched stands for, when it holds the file pidfd_getfd took, one
// that can write a regular file (its flags those the file was opened
// with): another thread may write through it before the process stops.
// nil for another record.
func heldWrite(ev *tracer.Event) *tracer.Event {
	if !ev.Has(tracer.SlotResolved) {
		return nil
	}
	w := *ev
	w.Kind, w.Op, w.Flags, w.Mode = tracer.KindWrite, ops.Open, ev.Mode, 0
	return &w
}

// member tells the witness's Checker who joins and leaves the tree.
func (s *Session) member(ev *tracer.Event) {
	if !s.cfg.Witness {
		return
	}
	switch ev.Kind {
	case tracer.KindFork:
		s.checker.Joined(ev.TGID, ev.NSTGID)
	case tracer.KindExit:
		if p := s.tree.Proc(ev.TGID); p != nil {
			s.checker.Left(ev.TGID, p.NSTGID)
		}
	}
}

// write judges a write record, and counts and reports each path it wrote
// outside the allowlist; then the witness's Checker keeps it to explain
// the changes it made.
func (s *Session) write(ev *tracer.Event) {
	s.writes++
	s.live.AddEvent()
	s.refused.Count(ev.Action)
	verdicts := s.judge.Record(ev)
	private := false
	if ev.OwnView && len(verdicts) > 0 {
		verdicts, private = s.ownView(ev, verdicts)
	}
	if ev.Paused && s.cfg.Resume != nil { // the judge followed its path: the process may change it now
		s.cfg.Resume(ev)
	}
	if s.cfg.Sandbox == nil { // a sandbox's overlays hold every change there
		s.unsettled(ev, len(verdicts))
	}
	if ev.Rewritten {
		s.ledger.Add("a path was rewritten in its process's memory while the call that named it ran (another thread of the process can do that): the record may not name the file the call changed")
	}
	s.report(ev, verdicts)
	s.kill(ev, verdicts)
	// A write found to land on the tree's own filesystem explains no
	// change on disk: should the witness see one, it was elsewhere.
	if (s.cfg.Witness || s.cfg.Sandbox != nil) && !private {
		s.found(s.checker.Record(ev))
	}
}

// ownView drops, of the verdicts of a write by name made in a mount
// namespace of the tree's own where a mount was made
// (tracer.Event.OwnView), those whose path lands, for the process, on a
// filesystem in memory that no mount held when the run began (tmpfs,
// ramfs): the test's own, a fake home, not the user's, whatever the
// path's name for writewatch. The kernel paused the process until now,
// so its root (/proc/PID/root) is the one the write went through; and
// when the tree's count of mount calls has not moved since the write, no
// mount of the tree's moved meanwhile. Anything that cannot be told
// keeps the verdicts. private says some were dropped.
func (s *Session) ownView(ev *tracer.Event, verdicts []judge.Verdict) ([]judge.Verdict, bool) {
	if !ev.Paused || ev.NSTGID == 0 {
		return verdicts, false
	}
	root := "/proc/" + strconv.FormatUint(uint64(ev.NSTGID), 10) + "/root"
	drop := make([]bool, len(verdicts))
	some := false
	for i := range verdicts {
		drop[i] = s.landsPrivate(ev, &verdicts[i], root)
		some = some || drop[i]
	}
	if !some || s.host.MountCalls() != ev.MountCalls {
		return verdicts, false
	}
	kept := verdicts[:0]
	for i, v := range verdicts {
		if !drop[i] {
			kept = append(kept, v)
		}
	}
	return kept, true
}

// Filesystems in memory (statfs's f_type): whatever is on one that no
// mount held at the start was made during the run.
const (
	tmpfsMagic = 0x01021994
	ramfsMagic = 0x858458f6
)

// landsPrivate says whether verdict v of write ev lands, for the writer
// whose root is root, in a directory of a filesystem in memory that no
// mount held at the start; and, for a change of the entry itself (a
// truncate, a metadata change), whether the entry is on one too.
func (s *Session) landsPrivate(ev *tracer.Event, v *judge.Verdict, root string) bool {
	if s.cfg.StartDevs == nil { // not known: no filesystem is the tree's own
		return false
	}
	entry, ok := s.judge.Landing(ev, v, root)
	if !ok {
		return false
	}
	paths := []string{filepath.Dir(entry)}
	if ev.Op.Path(v.Role).Effect == ops.Changes {
		paths = append(paths, entry)
	}
	for _, p := range paths {
		f, err := s.host.Filesystem(p)
		if err != nil || (f.Type != tmpfsMagic && f.Type != ramfsMagic) || slices.Contains(s.cfg.StartDevs, f.Dev) {
			return false
		}
	}
	return true
}

// unsettled takes a write record whose path may lead elsewhere for the
// tree than for writewatch, with no event of the witness's to tell
// (tracer.Event.Unwatched: an open of a file reached through a mount
// made during the run, of a namespace the tree did not make, or from a
// chroot, while contents were not watched yet; a truncate by name while
// a privileged process changed mounts; a write through a shared mapping
// or Linux AIO of such a file, which the witness never sees): one the
// judge found allowed makes the run incomplete, since its path may have
// led to another file (those the kernel found allowed are counted:
// tracer.Stats.UnwatchedAllowed).
func (s *Session) unsettled(ev *tracer.Event, violations int) {
	switch {
	case !ev.Unwatched || violations > 0:
	case ev.Op.Unnotified():
		s.ledger.Add("a file was written through a shared mapping or Linux AIO where its path seemed allowed, through a mount made during the run, a mount namespace the tree did not make, or a change of root, which could lead that path elsewhere: the filesystem witness does not see such writes")
	default:
		s.ledger.Add("a file was opened for writing where its path seemed allowed, through a mount made during the run, a mount namespace the tree did not make, or a change of root, which could lead that path elsewhere, " +
			"before the filesystem witness watched the contents of files")
	}
}

// report counts and reports the verdicts of a write record.
func (s *Session) report(ev *tracer.Event, verdicts []judge.Verdict) {
	if len(verdicts) == 0 {
		return
	}
	who := s.tests.Attribute(ev)
	whoKey := who.Key()
	act := policy.Action(ev.Action)
	rk, repeatable := ev.RepeatKey()
	errno := errnoOf(ev)
	for i := range verdicts {
		v := &verdicts[i]
		if s.cfg.Witness {
			s.checker.Noted(ev.TGID, witness.Group{Op: v.Op, Path: v.Path, Role: v.Role, Who: whoKey}, false)
		}
		if !s.groups.Full() || s.groups.Has(v.Op, v.Path, v.Role, whoKey) {
			s.sev.Observe(v.Occurrence(ev, whoKey))
		}
		switch {
		case s.groups.Repeat(v.Op, v.Path, v.Role, whoKey, errno):
			s.live.Violation(v.Op, act, false)
			if repeatable && !slices.Contains(s.repeatOf[rk], group{v.Op, v.Path, v.Role, whoKey, errno}) {
				s.repeatOf[rk] = append(s.repeatOf[rk], group{v.Op, strings.Clone(v.Path), v.Role, whoKey, errno})
			}
		case s.groups.Full():
			s.groups.Unlisted++
			s.live.Violation(v.Op, act, false)
		default:
			// A new violation: keep copies of the strings, which are
			// views of buffers the next record reuses.
			viol := s.violation(ev, v)
			viol.Who = who
			if repeatable {
				s.repeatOf[rk] = append(s.repeatOf[rk], group{viol.Op, viol.Path, viol.Role, whoKey, errno})
			}
			s.groups.Add(viol)
			s.live.Violation(viol.Op, viol.Action, true)
		}
	}
	s.xreads.wrote(s.tree, ev, who, verdicts[0].Op)
}

// violation describes a new violation: the path judged, and the process
// that wrote it.
func (s *Session) violation(ev *tracer.Event, v *judge.Verdict) report.Violation {
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
		BlockDevice:   v.BlockDevice(),
		SeenBy:        []string{report.SeenBySyscall},
	}
	if ev.Op.Opens() {
		viol.Flags = judge.OpenFlags(ev.Flags)
	}
	if ev.ViaIOUring {
		viol.Via = report.ViaIOUring
	}
	if viol.Errno = errnoOf(ev); viol.Errno != "" {
		viol.Failed = 1
	}
	return viol
}

// errnoOf names the error a write record's call failed with: "" when it
// succeeded, or its result is unknown (an io_uring request).
func errnoOf(ev *tracer.Event) string {
	if ev.ViaIOUring || ev.Ret >= 0 {
		return ""
	}
	if name := unix.ErrnoName(syscall.Errno(-ev.Ret)); name != "" {
		return name
	}
	return "errno " + strconv.Itoa(int(-ev.Ret))
}
