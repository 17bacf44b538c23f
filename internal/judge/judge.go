// Package judge judges a write record against the allowlist: which paths
// it writes, as absolute clean paths the way the kernel resolved them,
// and which of them the run reports.
package judge

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/pathwalk"
	"github.com/writewatch/writewatch/internal/severity"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
	"golang.org/x/sys/unix"
)

const oTmpfile = 0o20000000 // __O_TMPFILE

// Verdict is one path a write record writes, as judged.
type Verdict struct {
	Op        string
	Role      string // report.RoleOld or RoleNew for rename and link; "" otherwise
	Path      string // absolute, clean; what the allowlist judges
	Requested string // as the process passed it
	Truncated bool   // the path was cut to fit the kernel's buffers
	// entry is the allowlist entry that matched Path, nil when none did.
	entry *allowlist.Entry
	// since is when the call was made, for a path whose lookup may have
	// changed since (unseen); links is the latest change of the
	// symlinks its walk followed, gone says the walk could not follow
	// it; replaced says the path may not lead where the call's lookup
	// went (settle).
	since    time.Time
	links    time.Time
	gone     bool
	paused   bool // the kernel paused the process until the path was followed
	replaced bool
	// refusedAllowed marks a write the allowlist allows but enforcement
	// refused: an entry the kernel cannot express exactly.
	refusedAllowed bool
	// device is the block device the write opened for writing
	// ("major:minor"), or report.BlockDeviceNode for a node of one it
	// made (see blockDevice); "" otherwise.
	device string
}

// BlockDevice is the report's BlockDevice of the path: see
// report.Violation.
func (v *Verdict) BlockDevice() string { return v.device }

// DeniedBy names the deny entry that made the path a violation; ""
// when none did.
func (v *Verdict) DeniedBy() string {
	if !v.refusedAllowed && v.entry != nil && v.entry.Kind == allowlist.Deny {
		return v.entry.Source
	}
	return ""
}

// NotEnforced names the allow entry that allows the path, when
// enforcement refused the write all the same: the kernel could not
// express that entry exactly. "" otherwise.
func (v *Verdict) NotEnforced() string {
	if v.refusedAllowed {
		return v.entry.Source
	}
	return ""
}

// Judge judges write records against one allowlist. Its verdicts' strings
// are views of the record and of scratch space reused by the next call:
// callers that keep one must clone it. A Judge is not safe for
// concurrent use.
type Judge struct {
	// Held, when set, finds the file a hard link was made from when the
	// call named it by a descriptor the process holds (see written):
	// ok is false when that descriptor's file has no other name.
	Held func(ev *tracer.Event, fdPath, linkPath string) (path string, ok bool)
	// Replaced, when set, is told of a path found allowed whose lookup
	// may have gone elsewhere when the call was made: a symlink on the
	// way was replaced after it, or the path was gone (Verdict.replaced).
	Replaced func(ev *tracer.Event, path string)
	// Landlock says COMMAND runs under Landlock (the landlock tier),
	// which refuses every write outside the grants with EACCES. The
	// kernel marks a refusal by the name the call passed; one through a
	// symlink in the last component, inside the grants, to a file outside
	// them is not marked there, and Record marks it (see refusedByName).
	Landlock bool

	allow    *allowlist.List
	host     host.Host
	bufs     [2][]byte
	n        int // the next buffer to use
	paths    []Verdict
	verdicts []Verdict
	// linked are the files hard-linked during the run from outside the
	// allowlist, by identity: the path each was linked from (links.go).
	linked map[fileKey]string
	keys   []fileKey // scratch space of linkedKeys
}

// New returns a Judge for the allowlist, which follows paths on h as
// they are now.
func New(allow *allowlist.List, h host.Host) *Judge { return &Judge{allow: allow, host: h} }

// Record returns the paths of a write record the run reports: those
// outside the allowlist, those cut too short to be judged for sure, and,
// when enforcement refused the write, those the allowlist allows (the
// writer saw an error, or was killed) — unless another path of the same
// call was outside the allowlist: that one explains the refusal. The
// slice is reused by the next call.
//
// A hard link's file linked from outside the allowlist is not reported
// but remembered, and a later write of that file through any name is
// reported as a write of the name it was linked from (links.go). A
// rename of an allowed name that moved a directory is reported when a
// deny entry may protect something below it (movedBelow).
//
// Under Landlock, Record sets ActionBlocked in ev.Action for a call that
// Landlock refused although its name lay inside the grants (see
// refusedByName).
func (j *Judge) Record(ev *tracer.Event) []Verdict {
	j.paths = j.written(ev, j.paths[:0])
	if ev.Op.LinksFile() {
		j.paths = j.linkedFrom(ev, j.paths)
	} else {
		j.paths = j.throughLinks(ev, j.paths)
	}
	j.verdicts = j.verdicts[:0]
	if j.refusedByName(ev) {
		ev.Action |= tracer.ActionBlocked
	}
	device := blockDevice(ev)
	refusedAllowed := ev.Action != 0
	for i := 0; refusedAllowed && i < len(j.paths); i++ {
		if ok, _ := j.match(j.paths[i].Path, device); !ok || j.paths[i].Truncated {
			refusedAllowed = false
		}
	}
	for i, v := range j.paths {
		allowed, entry := j.match(v.Path, device)
		if device != "" && !allowed {
			v.device = device
		}
		// A cut path cannot be judged for sure: report it rather than
		// let it pass.
		if allowed && !v.Truncated && !refusedAllowed {
			if d := j.movedBelow(ev, i, entry); d != nil {
				v.entry = d
				j.verdicts = append(j.verdicts, v)
				continue
			}
			if v.replaced && j.Replaced != nil {
				j.Replaced(ev, v.Path)
			}
			continue
		}
		v.entry, v.refusedAllowed = entry, refusedAllowed
		j.verdicts = append(j.verdicts, v)
	}
	return j.verdicts
}

// movedBelow names the deny entry that protects something below path i
// of a rename, an allowed name it moved a directory from, and with it
// everything under it (allowlist.List.DenyBelow): the old name, and with
// RENAME_EXCHANGE the new one too. nil for any other path, and for a call
// that failed. Whether it moved a directory is asked of the name the
// directory went to (of its own name for an io_uring request, not made
// yet); one gone by then, or cut, may have been a directory.
func (j *Judge) movedBelow(ev *tracer.Event, i int, allowedBy *allowlist.Entry) *allowlist.Entry {
	if len(j.paths) != 2 || (ev.Ret < 0 && !ev.ViaIOUring) {
		return nil
	}
	v := &j.paths[i]
	if e := ev.Op.Path(v.Role).Effect; e != ops.MovesAway && (e != ops.MovesOnto || ev.Flags&unix.RENAME_EXCHANGE == 0) {
		return nil
	}
	d := j.allow.DenyBelow(v.Path, allowedBy)
	if d == nil {
		return nil
	}
	now := &j.paths[1-i]
	if ev.ViaIOUring {
		now = v
	}
	if f, err := j.host.Lstat(now.Path); err == nil && !now.Truncated && !f.IsDir() {
		return nil
	}
	return d
}

// match is the allowlist's verdict on path, written by a record that
// writes a block device (blockDevice) when device is not "": its node's
// path allows that only when an allow entry names that path itself, as
// a block device is every file on it.
func (j *Judge) match(path, device string) (bool, *allowlist.Entry) {
	allowed, entry := j.allow.Match(path)
	if allowed && device != "" && !j.allow.Names(path) {
		return false, nil
	}
	return allowed, entry
}

// blockDevice says whether the record writes a block device through
// its node: an open that opened one for writing (the kernel sends its
// number, tracer.Event.Device, only when the allowlist does not name the
// node), as "major:minor", or a mknod of a block device's node
// (report.BlockDeviceNode). "" for any other record.
func blockDevice(ev *tracer.Event) string {
	switch {
	case ev.Device != 0 && ev.Op.Opens():
		// The kernel's dev_t: major << 20 | minor.
		return strconv.FormatUint(uint64(ev.Device>>20), 10) + ":" + strconv.FormatUint(uint64(ev.Device&(1<<20-1)), 10)
	case ev.Op == ops.Mknod && ev.Mode&unix.S_IFMT == unix.S_IFBLK:
		return report.BlockDeviceNode
	}
	return ""
}

// refusedByName reports whether Landlock refused a call that follows a
// symlink in its last component (an open, truncate) while the kernel,
// judging the name inside the grants, took it for the file's own
// permissions: it failed with EACCES, and the file the link points to
// lies outside the allowlist, which is outside the grants.
func (j *Judge) refusedByName(ev *tracer.Event) bool {
	if !j.Landlock || ev.Action != 0 || ev.ViaIOUring || ev.Ret != -int32(unix.EACCES) ||
		ev.Op.Kind() != ops.Data || !ev.Op.Path("").Follows(ev.Flags) {
		return false
	}
	for _, v := range j.paths {
		if ok, _ := j.allow.Match(v.Path); !ok {
			return true
		}
	}
	return false
}

// scratch returns an empty buffer that no other path of this record
// uses.
func (j *Judge) scratch() []byte {
	b := j.bufs[j.n%len(j.bufs)][:0]
	return b
}

// view keeps b as the current scratch buffer and returns it as a string
// without copying.
func (j *Judge) view(b []byte) string {
	j.bufs[j.n%len(j.bufs)] = b
	j.n++
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// written turns a write record into the paths it writes, as its row of
// the table of operations says (ops.Op.Paths): rename and link have two,
// everything else one.
func (j *Judge) written(ev *tracer.Event, out []Verdict) []Verdict {
	j.n = 0
	paths := ev.Op.Paths()
	switch {
	case len(paths) == 2:
		return j.twoPaths(ev, paths, out)
	case len(paths) == 1 && paths[0].Role != "":
		// A path with a role (a symlink's new name) is the name made.
		return append(out, j.target(ev, paths[0].Role, tracer.SlotPath, tracer.SlotDir).resolved(j.host, pathwalk.Entry))
	}
	var p ops.Path
	if len(paths) == 1 {
		p = paths[0]
	}
	return append(out, j.onePath(ev, p))
}

// twoPaths are the paths of a call of two (rename, link): the record's
// path slot (the old path), then its second (the new).
func (j *Judge) twoPaths(ev *tracer.Event, paths []ops.Path, out []Verdict) []Verdict {
	from, to := paths[0], paths[1]
	// A hard link to a file is a new way to write that file: the file
	// linked is named too (Record remembers it, links.go). One the
	// process names by a descriptor it
	// holds (linkat of /proc/self/fd/N, or of "" with AT_EMPTY_PATH) is
	// most often an O_TMPFILE, which has no other name; but a file
	// opened read-only can be linked the same way: the kernel sends its
	// path, walked during the call, or Held is asked which file it was.
	if src := slotView(ev, tracer.SlotPath); from.Effect == ops.Links && heldOpen(src) {
		return j.heldLink(ev, src, from.Role, to.Role, out)
	}
	// linkat with AT_SYMLINK_FOLLOW (ln -L) links the file a symlink in
	// the source's last component points to.
	t := j.target(ev, from.Role, tracer.SlotPath, tracer.SlotDir)
	follow := from.Follows(ev.Flags)
	if follow && unseen(ev, from) {
		t.since, t.paused = ev.Time, ev.Paused
	}
	t = t.resolved(j.host, pathwalk.Entry)
	if follow {
		t = t.followed(j.host)
	}
	out = append(out, t)
	return append(out, j.target(ev, to.Role, tracer.SlotPath2, tracer.SlotDir2).resolved(j.host, pathwalk.Entry))
}

// heldLink are the paths of a hard link of a file the process holds
// open, named src: the file (role from), when it can be told, and the
// new name (role to).
func (j *Judge) heldLink(ev *tracer.Event, src, from, to string, out []Verdict) []Verdict {
	op := ev.Op.String()
	linked := j.target(ev, to, tracer.SlotPath2, tracer.SlotDir2).resolved(j.host, pathwalk.Entry)
	switch {
	case ev.Ret < 0 || ev.ViaIOUring:
	case ev.Has(tracer.SlotResolved):
		// The kernel walked the descriptor's file during the call (it
		// leaves out one with no name of its own: an O_TMPFILE).
		out = append(out, Verdict{
			Op: op, Role: from, Requested: src,
			Path:      j.view(ev.AppendDir(j.scratch(), tracer.SlotResolved)),
			Truncated: ev.Truncated(tracer.SlotResolved),
		})
	case j.Held != nil && !linked.Truncated:
		if p, ok := j.Held(ev, src, linked.Path); ok {
			out = append(out, Verdict{Op: op, Role: from, Path: p, Requested: src})
		}
	}
	return append(out, linked)
}

// onePath is the path of a call of one path p, with no role.
func (j *Judge) onePath(ev *tracer.Event, p ops.Path) Verdict {
	op := ev.Op.String()
	// A call on a file descriptor (fchmod, fsetxattr, futimens...) acts on
	// the file the kernel found behind it, and so does a metadata change
	// through a descriptor's link (/dev/stdout, /proc/self/fd/N).
	if ev.Has(tracer.SlotResolved) && (!ev.Has(tracer.SlotPath) || ev.Op.Metadata()) {
		return Verdict{
			Op:        op,
			Path:      j.view(ev.AppendDir(j.scratch(), tracer.SlotResolved)),
			Requested: slotView(ev, tracer.SlotPath),
			Truncated: ev.Truncated(tracer.SlotResolved),
		}
	}
	// A successful open judges the file the kernel opened, symlinks and
	// all (the kernel sends no start directory then), except an
	// O_TMPFILE, whose file has no name yet: its directory is what was
	// asked for.
	if p.Effect == ops.Opens && ev.Ret >= 0 && ev.Has(tracer.SlotResolved) && ev.Flags&oTmpfile == 0 {
		return Verdict{
			Op:        op,
			Path:      j.view(ev.AppendDir(j.scratch(), tracer.SlotResolved)),
			Requested: slotView(ev, tracer.SlotPath),
			Truncated: ev.Truncated(tracer.SlotPath) || ev.Truncated(tracer.SlotResolved),
		}
	}
	// An empty path names nothing (ENOENT), not the directory it would
	// start from: os.Remove("") is no write to the working directory. A
	// call that succeeded with one acted on its descriptor's file
	// (AT_EMPTY_PATH), which the directory slot holds.
	if len(slotView(ev, tracer.SlotPath)) == 0 && (ev.Ret < 0 || ev.ViaIOUring) {
		return Verdict{Op: op}
	}
	// lchown and the like do not follow a symlink in the last
	// component, unless a slash follows it.
	last := pathwalk.Entry
	if p.Follow == ops.FollowMetaFlag {
		last = pathwalk.NoFollow
	}
	t := j.target(ev, "", tracer.SlotPath, tracer.SlotDir)
	if unseen(ev, p) {
		t.since, t.paused = ev.Time, ev.Paused
	}
	t = t.resolved(j.host, last)
	// chmod and the like, truncate, and an open that failed or was an
	// io_uring request follow a symlink in the last component too.
	if p.Follows(ev.Flags) {
		t = t.followed(j.host)
	}
	return t
}

// unseen reports whether the record is of a call that succeeded, that
// followed a symlink in the last component of its path p, and whose
// change the filesystem witness may not see to name the file itself
// (ops.Path.Unseen): truncate and a change of one time change a file's
// contents or a time alone (seen only while contents are watched, an
// access time never), a change of both times is seen only where the
// witness watches, and a hard link with AT_SYMLINK_FOLLOW makes a name
// in a directory the allowlist may allow, of a file it may not. For
// those, a symlink replaced on the way after the call, or a path gone
// while the process was paused, makes the path the judge finds unsure
// (Verdict.replaced). The kernel pauses the process of such a record
// until it is judged (tracer.Event.Paused; bpf/lib/pause.h's
// pause_for_path), but for a change of both times, common and mostly
// seen by the witness.
func unseen(ev *tracer.Event, p ops.Path) bool {
	return ev.Ret >= 0 && !ev.ViaIOUring && p.Unseen && p.Follows(ev.Flags)
}

// followed follows a symlink in the last component of the entry t
// names, to the file it points to while it is there, or to the name it
// points to when that file is missing (a dangling link, which an open
// with O_CREAT would create; a call that failed). Not under /proc or
// /dev, whose links (/proc/self, /dev/stdin) would name writewatch's own
// files here: the kernel resolved the descriptor links it knows (see
// written).
func (t Verdict) followed(h host.Host) Verdict {
	if t.Truncated || strings.HasPrefix(t.Path, "/proc/") || strings.HasPrefix(t.Path, "/dev/") {
		return t
	}
	if w := t.walk(h, pathwalk.Follow); w.Err == nil || errors.Is(w.Err, fs.ErrNotExist) {
		t.Path = w.Path
	}
	t.settle(h)
	return t
}

// walk walks t's path, the last component as last says, watching its
// symlinks for a path that may have changed since the call (since).
func (t *Verdict) walk(h host.Host, last pathwalk.Last) host.Walk {
	o := pathwalk.Options{Last: last}
	watch := !t.since.IsZero()
	if watch {
		var links time.Time
		var gone bool
		o.Links, o.Gone = &links, &gone
	}
	w := h.Resolve(t.Path, o)
	if watch {
		if w.Links.After(t.links) {
			t.links = w.Links
		}
		t.gone = t.gone || w.Gone
	}
	return w
}

// ChangeSlack is how long before a call a symlink's change still counts
// as after it: the kernel's coarse clock, which stamps file times,
// lagged by up to 6.3 ms (a 4 ms tick) on a busy VM.
const ChangeSlack = 50 * time.Millisecond

// settle decides, for the path of a call the filesystem witness may not
// see (unseen) once it is followed to its end, whether it may lead
// elsewhere than the call's lookup did (replaced): when it could not be
// followed, or a symlink on the way changed after the call (less
// ChangeSlack) and the file reached did not change since that link did.
// The call changed the file it reached (its ctime: a truncate that
// changed the size, new times, a new link), so a link made before the
// call and the file changed through it right after keep that order; a
// link replaced after the call does not, unless the file it now leads to
// changed after it too. The process stays paused until then
// (tracer.Event.Paused): it cannot change the path meanwhile.
func (t *Verdict) settle(h host.Host) {
	if t.since.IsZero() || t.replaced {
		return
	}
	// A path gone while the process was paused was changed by another;
	// one not paused may have been removed by the call's own process,
	// as a test's temporary directory is, with nothing to tell.
	if t.gone {
		t.replaced = t.paused
		return
	}
	if !t.links.After(t.since.Add(-ChangeSlack)) {
		return
	}
	if f, err := h.Stat(t.Path); err != nil || f.Ctime.Before(t.links) {
		t.replaced = true
	}
}

// target builds the absolute path of a path slot, starting from its
// directory slot when relative.
func (j *Judge) target(ev *tracer.Event, role string, ps, ds tracer.Slot) Verdict {
	req := slotView(ev, ps)
	t := Verdict{Op: ev.Op.String(), Role: role, Requested: req, Truncated: ev.Truncated(ps)}
	if strings.HasPrefix(req, "/") {
		t.Path = req
	} else {
		b := ev.AppendDir(j.scratch(), ds)
		b = append(b, '/')
		b = append(b, req...)
		t.Path = j.view(b)
		t.Truncated = t.Truncated || ev.Truncated(ds) || !ev.Has(ds)
	}
	return t
}

// resolved turns the path as passed, made absolute, into the entry the
// kernel acted on (package pathwalk): symlinks in the directories above
// it followed before any ".." after them, the last component as last
// says. The filesystem is read as it is now: where a component no
// longer exists, the rest is cleaned as text, the best guess left; and
// paths under /proc are cleaned as text, since /proc/self there would
// name writewatch. A cut path is only cleaned.
func (t Verdict) resolved(h host.Host, last pathwalk.Last) Verdict {
	if t.Truncated {
		t.Path = filepath.Clean(t.Path)
		return t
	}
	t.Path = t.walk(h, last).Path
	return t
}

// Landing is the entry v, one of the paths of write record ev, names for
// the process that wrote, whose root writewatch reaches at root
// (/proc/PID/root): the path as the process passed it, from its start
// directory (which the kernel walked up to that root), its directories
// resolved under root. ok is false when it cannot be told: a cut path,
// one not found.
func (j *Judge) Landing(ev *tracer.Event, v *Verdict, root string) (entry string, ok bool) {
	ps, ds := tracer.SlotPath, tracer.SlotDir
	// The second of two paths is in the record's second slots.
	if p := ev.Op.Paths(); len(p) == 2 && p[1].Role == v.Role {
		ps, ds = tracer.SlotPath2, tracer.SlotDir2
	}
	// Built apart: the verdicts' strings are views of the judge's
	// scratch space, which target would reuse.
	path := string(slotView(ev, ps))
	if ev.Truncated(ps) || path == "" {
		return "", false
	}
	o := pathwalk.Options{Root: root, Last: pathwalk.Entry}
	if !strings.HasPrefix(path, "/") {
		if !ev.Has(ds) || ev.Truncated(ds) {
			return "", false
		}
		o.Dir = root + string(ev.AppendDir(nil, ds))
	}
	w := j.host.Resolve(path, o)
	if w.Err != nil && !errors.Is(w.Err, fs.ErrNotExist) {
		return "", false
	}
	return w.Path, true
}

// OpenFlags names the flags of an open that make it a write.
func OpenFlags(flags uint32) string {
	var parts []string
	switch flags & 3 {
	case 0:
		parts = append(parts, "O_RDONLY")
	case 1:
		parts = append(parts, "O_WRONLY")
	case 2:
		parts = append(parts, "O_RDWR")
	}
	for _, f := range []struct {
		bit  uint32
		name string
	}{{0o100, "O_CREAT"}, {0o200, "O_EXCL"}, {0o1000, "O_TRUNC"}, {0o2000, "O_APPEND"}, {oTmpfile, "O_TMPFILE"}} {
		if flags&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(parts, "|")
}

// heldOpen reports whether a link's source names a file through a file
// descriptor the process holds: "" (AT_EMPTY_PATH) or /proc/{self,PID,
// thread-self}/fd/N.
func heldOpen(path string) bool {
	if path == "" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/proc/")
	if !ok {
		return false
	}
	who, rest, ok := strings.Cut(rest, "/")
	if !ok || (who != "self" && who != "thread-self" && strings.Trim(who, "0123456789") != "") {
		return false
	}
	n, ok := strings.CutPrefix(rest, "fd/")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// slotView is slot s of ev as a string, without its NUL and without
// copying: valid until the next record is read.
func slotView(ev *tracer.Event, s tracer.Slot) string {
	b := ev.Bytes(s)
	if n := len(b); n > 0 && b[n-1] == 0 {
		b = b[:n-1]
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Occurrence is what record ev tells of v's path for its severity; who
// names the writer (report.Who.Key).
func (v *Verdict) Occurrence(ev *tracer.Event, who string) severity.Occurrence {
	o := severity.Occurrence{Op: ev.Op, Role: v.Role, Path: v.Path, Who: who, Created: ev.Created, Flags: ev.Flags,
		Device: v.device != "" && v.device != report.BlockDeviceNode}
	// What the call found: a rename's of its target (not of the name
	// it moved away), a metadata change's of its file.
	if ev.Op.Path(v.Role).Effect != ops.MovesAway {
		o.Prior = ev.Prior
	}
	if ev.Ret < 0 && !ev.ViaIOUring {
		o.Errno = syscall.Errno(-ev.Ret)
	}
	return o
}
