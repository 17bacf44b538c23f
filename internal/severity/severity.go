// Package severity tells how much harm each write outside the allowlist
// did, from what the kernel said of each call when it returned and from
// what is on disk when the run ends:
//
//   - data-loss: a file or directory that was there before the run was
//     truncated, overwritten, appended to, removed, renamed, renamed over,
//     or had its extended attributes changed, or its mode, owner or
//     modification time changed and not set back by the end; a block
//     device was opened for writing (what is on it was there);
//   - left-behind: the run created it, and it is still there at the end;
//   - transient: the run created it, and it was gone by the end; or it
//     changed the mode, owner or modification time of what was there,
//     and the end finds them as the run's first change found them;
//   - attempt: every call failed (or, for a file opened for writing, the
//     file's change time at the end is older than the run, by more than
//     ctimeSlack, and no process of the run is still running: nothing was
//     written to it, and nothing is left to).
//
// Whether a path held a file from before the run is decided by the first
// thing the run's calls told about it, in the kernel's order: an open
// that created its file (FMODE_CREATED) or a mkdir, mknod, symlink or
// link that succeeded made it; an open that did not create its file, or
// an unlink, rmdir, truncate or metadata change that succeeded, found it
// there; an ENOENT found nothing there. A path under a directory the run
// created was not there before.
//
// A rename onto a path the run has not otherwise seen replaced a file
// that was there before the run only if the kernel found one there at the
// rename: the record says so when the kernel could hook its rename
// (tracer.Prior); else the filesystem witness may have seen the rename
// drop the replaced file's link count (Tracker.Replaced). When neither
// tells, it counts as replacing one: data-loss is never missed.
//
// A chmod, chown or utimes of what was there is judged by the file's
// state at the end against its state at the start: the kernel's record of
// the run's first call on the path carries the mode, owner and
// modification time the call found (tracer.Prior); when the end finds the
// same, the change was set back. The access time is not compared (a read
// sets it), nor is a change of a file's extended attributes judged this
// way (no record says what they were).
package severity

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// Occurrence is one write of one path, as the kernel reported it.
type Occurrence struct {
	Op         ops.Op
	Role, Path string
	// Who is the attribution part of the write's violation group
	// (report.Who.Key).
	Who string
	// Errno is the call's error; 0 when it succeeded or its result is
	// unknown (an io_uring request).
	Errno syscall.Errno
	// Created: an open that succeeded created the file (FMODE_CREATED).
	Created bool
	// Flags are an open's flags.
	Flags uint32
	// Prior is what the call found before it changed its file, when the
	// kernel said: a rename's target (its new role), a chmod's, chown's
	// or utimes' file.
	Prior tracer.Prior
	// Device: an open that succeeded opened a block device for writing,
	// which writes what is on the device, there before the run, whatever
	// its node is.
	Device bool
}

// seen is what the occurrences of one violation group did, as bits.
type seen uint8

const (
	failed    seen = 1 << iota // a call failed
	original                   // changed or removed what was there before the run
	openedOld                  // opened what was there before the run for writing, without O_TRUNC
	ofRun                      // made, changed or removed what the run created
	// renamedOver: renamed onto a path the run had not otherwise seen,
	// and the kernel did not say whether a file was there: it replaced
	// one unless the witness says it did not (Tracker.Replaced).
	renamedOver
	// metaChanged: changed the mode, owner or times of what was there
	// before the run: data-loss unless the end finds them as they were.
	metaChanged
)

// origin is what a path holds, as far as the run's calls have told.
type origin uint8

const (
	unknown  origin = iota // no call has told yet
	preRun                 // the file or directory that was there before the run
	nothing                // nothing: never was, or removed
	madeHere               // something the run created
)

type group struct {
	op, role, who string
	seen          seen
}

type pathState struct {
	origin origin
	groups []group
	// start is the file's metadata before the run, when the run's first
	// call on the path was a chmod, chown or utimes whose record said.
	start *tracer.Prior
}

// Tracker follows the paths of a run's violations. It is not safe for
// concurrent use.
type Tracker struct {
	// Start is when the run started: a file whose change time is older,
	// by more than ctimeSlack, was not written during the run.
	Start time.Time
	// Survivors: processes of the run are still running at its end. A
	// file one of them opened for writing, or was handed open, may be
	// written after the end, so its change time tells nothing.
	Survivors bool
	// Changed, when set, says whether the file at a path changed during
	// the run, where it knows (a sandbox's overlay holds every change):
	// it stands for the change time, which a copy that changed nothing
	// makes new.
	Changed func(path string) (changed, known bool)
	// Replaced, when not nil, says whether the first rename onto path
	// that the filesystem witness saw replaced a file there, when it can
	// tell (known).
	Replaced func(path string) (replaced, known bool)
	// Assumed counts the violations Assign judged data-loss because
	// nothing told what was there: renames onto a path no call had found
	// empty, and metadata changes whose start was not said.
	Assumed struct{ Renames, Metadata int }
	paths   map[string]*pathState
	host    host.Host
}

// New returns a Tracker for a run that started at start, which looks at
// what is on h at the end.
func New(start time.Time, h host.Host) *Tracker {
	return &Tracker{Start: start, paths: map[string]*pathState{}, host: h}
}

// ctimeSlack is how much older than the run a file's change time can be
// and the file still have been written during it. Filesystems that keep
// whole seconds (ext4 with 128-byte inodes, ext3, HFS+) or two (FAT)
// round the time of a write down, to before the run when it came in the
// run's first seconds; and the kernel stamps changes from a clock that
// lags the one Start is read from by up to a tick.
const ctimeSlack = 2 * time.Second

const (
	oTrunc   = 0o1000
	oTmpfile = 0o20000000
)

// effectOf is what a successful call did to its path, as its row of the
// table of operations says (ops.Path.Effect); an open, which creates or
// changes, as the call tells.
func effectOf(o *Occurrence) ops.Effect {
	e := o.Op.Path(o.Role).Effect
	if e == ops.Opens {
		if o.Created || o.Flags&oTmpfile == oTmpfile {
			return ops.Creates
		}
		return ops.Changes
	}
	return e
}

// onePath reports whether op names one path only, so that its ENOENT or
// EEXIST is about that path.
func onePath(op ops.Op) bool { return len(op.Paths()) <= 1 }

// Observe takes one occurrence into account. Occurrences must come in
// the order the kernel saw them.
func (t *Tracker) Observe(o Occurrence) {
	if t.paths == nil {
		t.paths = map[string]*pathState{}
	}
	st := t.paths[o.Path]
	if st == nil {
		st = &pathState{}
		if t.underMade(o.Path) {
			st.origin = nothing
		}
		t.paths[string([]byte(o.Path))] = st
	}
	s := st.observe(&o)
	op := o.Op.String()
	for i := range st.groups {
		if g := &st.groups[i]; g.op == op && g.role == o.Role && g.who == o.Who {
			g.seen |= s
			return
		}
	}
	st.groups = append(st.groups, group{op: op, role: o.Role, who: o.Who, seen: s})
}

// observe updates the path's origin from one occurrence and says what it
// did.
func (st *pathState) observe(o *Occurrence) seen {
	if o.Errno != 0 {
		if st.origin == unknown && onePath(o.Op) {
			switch o.Errno {
			case syscall.ENOENT, syscall.ENOTDIR:
				st.origin = nothing
			case syscall.EEXIST:
				st.origin = preRun
			}
		}
		return failed
	}
	if o.Device {
		if st.origin == unknown {
			st.origin = preRun
		}
		return original
	}
	switch e := effectOf(o); e {
	case ops.Creates, ops.MovesOnto:
		s := ofRun
		if e == ops.MovesOnto {
			s |= st.renamedOnto(o)
		}
		st.origin = madeHere
		return s
	case ops.Removes, ops.MovesAway:
		s := st.touch(o)
		st.origin = nothing
		return s
	}
	// Changes, and a hard link's source, which gains a name.
	return st.touch(o)
}

// renamedOnto says what a rename onto the path did to what was there:
// the kernel saw whether a file was (and one from before the run is
// lost), or the run knew, or neither (renamedOver).
func (st *pathState) renamedOnto(o *Occurrence) seen {
	if o.Prior.Known {
		if o.Prior.Mode != 0 && (st.origin == preRun || st.origin == unknown) {
			return original
		}
		return 0 // nothing there, or what the run made or left
	}
	switch st.origin {
	case preRun:
		return original
	case unknown:
		return renamedOver
	}
	return 0
}

// touch is a change or removal of what the path holds.
func (st *pathState) touch(o *Occurrence) seen {
	if st.origin == unknown {
		st.origin = preRun
		// The run's first call here: what it found is the start.
		if o.Op.Restorable() && o.Prior.Known && o.Prior.Mode != 0 {
			p := o.Prior
			st.start = &p
		}
	}
	if st.origin != preRun {
		return ofRun
	}
	if o.Op.Path(o.Role).Effect == ops.Opens && o.Flags&oTrunc == 0 {
		return openedOld
	}
	if o.Op.Restorable() {
		return metaChanged
	}
	return original
}

// underMade reports whether a directory above path was created by the
// run: then path was not there before it.
func (t *Tracker) underMade(path string) bool {
	for dir := filepath.Dir(path); dir != "/" && dir != "." && dir != path; path, dir = dir, filepath.Dir(dir) {
		if st := t.paths[dir]; st != nil && st.origin == madeHere {
			return true
		}
	}
	return false
}

// onDisk is what a path holds at the end of the run.
type onDisk struct {
	there   bool // something is there
	changed bool // its change time is not older than the run (ctimeSlack)
	file    host.File
	known   bool // file is what is there
}

// Assign sets the Severity of each violation it followed, looking at
// what is on disk now. Violations it did not follow keep theirs.
func (t *Tracker) Assign(vs []report.Violation) {
	cache := map[string]onDisk{}
	for i := range vs {
		v := &vs[i]
		st := t.paths[v.Path]
		if st == nil {
			continue
		}
		who := v.Who.Key()
		for _, g := range st.groups {
			if g.op == v.Op && g.role == v.Role && g.who == who {
				v.Severity = t.judge(g.seen, st, v.Path, v.Truncated, cache)
				break
			}
		}
	}
}

// judge names the severity of a group that did s to path, whose state
// is st.
func (t *Tracker) judge(s seen, st *pathState, path string, truncated bool, cache map[string]onDisk) string {
	look := func() onDisk {
		if truncated { // a prefix of the path: assume the worst
			return onDisk{there: true, changed: true}
		}
		d, ok := cache[path]
		if !ok {
			d = t.look(path)
			cache[path] = d
		}
		return d
	}
	switch {
	case s&original != 0:
		return report.SeverityDataLoss
	case s&renamedOver != 0 && !t.notReplaced(path):
		t.Assumed.Renames++
		return report.SeverityDataLoss
	case s&metaChanged != 0 && !restored(st.start, look()):
		if st.start == nil {
			t.Assumed.Metadata++
		}
		return report.SeverityDataLoss
	case s&openedOld != 0:
		// Opened for writing: only the file tells whether it was
		// written, and only once no process of the run is left to.
		if d := look(); !d.there || d.changed || t.Survivors {
			return report.SeverityDataLoss
		}
	}
	if s&metaChanged != 0 { // and set back as it was
		return report.SeverityTransient
	}
	if s&ofRun == 0 {
		return report.SeverityAttempt
	}
	if look().there {
		return report.SeverityLeftBehind
	}
	return report.SeverityTransient
}

// notReplaced reports whether the witness saw that the first rename onto
// path replaced no file.
func (t *Tracker) notReplaced(path string) bool {
	if t.Replaced == nil {
		return false
	}
	replaced, known := t.Replaced(path)
	return known && !replaced
}

// restored reports whether what is on disk has the mode, owner and
// modification time start says the file had before the run.
func restored(start *tracer.Prior, d onDisk) bool {
	f := &d.file
	return start != nil && d.known && f.Mode == start.Mode && f.Uid == start.UID && f.Gid == start.GID && f.Mtime.Equal(start.Mtime())
}

// look lstats path.
func (t *Tracker) look(path string) onDisk {
	f, err := t.host.Lstat(path)
	changed := err == nil && !f.Ctime.Before(t.Start.Add(-ctimeSlack))
	if t.Changed != nil {
		if c, known := t.Changed(path); known {
			changed = c
		}
	}
	switch {
	case err == nil:
		return onDisk{there: true, changed: changed, file: f, known: true}
	case errors.Is(err, fs.ErrNotExist):
		return onDisk{}
	}
	return onDisk{there: true, changed: true} // cannot tell: assume the worst
}
