package witness

// The Checker holds the filesystem witness's changes up against the
// tracer's system call records: each change the witness saw a process of
// the tree make is matched to the record that explains it (the same
// process, the same file), and a change outside the allowlist that no
// reported record explains becomes a violation of its own, with the path
// as the kernel resolved it.
//
// The witness reports what changed on disk, by
// directory and name, whatever the process passed: a symlink followed
// before "..", a path rewritten between the call's entry and exit, a
// write through a descriptor opened outside the tree, an io_uring
// request, a chroot. Its path is the truth the report keeps; a record
// only lends it the operation, the path as requested and the test.
//
// # Matching
//
// A change of a path outside the allowlist by process P is explained by
// a violation the run already reported for P at that path (it is then
// marked seen by the filesystem too). Else by a recent record of P that
// names the same entry (its last component) with an operation whose row
// in the table of operations says it can make such a change (compatible),
// judged allowed or elsewhere by the judge: the change is reported with
// the record's operation and requested path, seen by the filesystem
// only. Else it waits for such a record a little (the witness may read a
// change before the record of its call is read), then is reported with
// the operation the witness names.
//
// A change inside the allowlist needs no explanation. Link count changes
// (an event on a file alone) are left to the create and delete events of
// the names involved, and changes to files that have no name (O_TMPFILE)
// to the link that names them.
//
// # Which processes
//
// Wanted answers the witness, from its goroutine, before it resolves an
// event: a member of the tree, or a process the kernel counts in the
// tree, is wanted; a live process the kernel does not count is not (and
// is remembered by a pidfd, so a reused pid is not taken for it); any
// other (gone, a zombie) is kept for the loop to decide. The loop decides
// with the tree once the stream has caught up with the event's stamp:
// the tracer sends a process's fork record before the process runs.

import (
	"strconv"
	"strings"
	"time"

	"github.com/writewatch/writewatch/internal/host"
	"github.com/writewatch/writewatch/internal/incomplete"
	"github.com/writewatch/writewatch/internal/ops"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// CheckOptions configure a Checker.
type CheckOptions struct {
	Allow *allowlist.List
	// Self is writewatch's own pid: its changes are never wanted.
	Self int32
	// InitialPIDNS says writewatch runs in the initial PID namespace, so
	// the witness's pids are the tracer's tgids.
	InitialPIDNS bool
	// Tracked asks the kernel whether a tgid is a live process of the
	// tree (tracer.IsTracked); nil when it cannot be asked.
	Tracked func(tgid uint32) bool
	// Ignore asks the witness to drop the events of a directory's
	// entries in the kernel (Ignore); nil: never.
	Ignore func(dir string) error
	// IgnoreFile asks the witness to drop a file's writes and attribute
	// changes in the kernel (IgnoreFile); nil: never.
	IgnoreFile func(path string) error
	// Roots are where HeldFile looks for the other names of a file: the
	// project, the home directory.
	Roots []string
	// Host answers what the checker asks of the machine (the files a
	// process holds, a process's parent); nil: this machine, now.
	Host host.Host
	// Ledger receives the reasons the run could not see everything; nil:
	// a ledger of the checker's own.
	Ledger *incomplete.Ledger
	// Now is the run's clock, for how long a change waits for its
	// record (the session's: the time each item was handled); nil:
	// time.Now.
	Now func() time.Time
}

// Group names one violation group of the report, as report.Builder
// keys it.
type Group struct{ Op, Path, Role, Who string }

// Finding is what a change the witness saw adds to the report: groups
// already reported that it confirms (Seen), or, when Path is set, a new
// violation seen by the filesystem.
type Finding struct {
	Seen []Group

	Op, Path, Role string
	Requested      string
	// TGID is the process in the initial PID namespace (0 when unknown),
	// PID as the witness numbers it.
	TGID uint32
	PID  int32
	// Record is the record that explains it, nil when none does.
	Record *Recorded
	Time   time.Time
}

// Recorded is what the checker keeps of a write record to explain a
// change seen later.
type Recorded struct {
	TGID   uint32
	Op     ops.Op
	OpName string
	// Requested is the path as passed (and the second one of a rename or
	// link); names are the last components of those and of the file an
	// open opened.
	Requested  [2]string
	names      [3]string
	Flags      uint32
	Test       uint64
	Go, Epoch  uint32
	ViaIOUring bool
	Time       time.Time
}

// Event is a record with the fields test attribution reads.
func (r *Recorded) Event() *tracer.Event {
	return &tracer.Event{Kind: tracer.KindWrite, Op: r.Op, TGID: r.TGID, Test: r.Test, Go: r.Go, Epoch: r.Epoch, Flags: r.Flags}
}

const (
	// recentRecords is how many records are kept to explain changes.
	recentRecords = 1024
	// wait is how long a change outside the allowlist waits for the
	// record that explains it before it is reported without one.
	wait = 100 * time.Millisecond
	// margin is how far past a change's stamp the stream must be before
	// the tree decides on an unknown process.
	margin = uint64(2 * time.Millisecond)
	// maxHeld bounds the changes waiting, for a record or for the tree.
	maxHeld = 4096
	// maxNoted bounds the (process, path) pairs of reported violations.
	maxNoted = 1 << 16
)

// Checker matches the witness's changes to the tree's records. All but
// Wanted are for the run's loop, one goroutine.
type Checker struct {
	opts    CheckOptions
	members *members
	outside outside // Wanted's, its goroutine only

	recent [recentRecords]Recorded
	next   int
	noted  map[notedKey]*noted
	// pending changes wait for a record; undecided ones for the tree.
	pending   []pending
	undecided []undecided
	busy      busyDirs
	stats     CheckStats
	denies    []*allowlist.Pattern
	// renaming and renamedOnto follow renames that replaced a file
	// (renames.go).
	renaming    map[int32]renaming
	renamedOnto map[string]bool
}

type notedKey struct {
	tgid uint32
	path string
}

type noted struct {
	groups []Group
	fsOnly bool // the groups were found by the filesystem alone
	// changes counts the data and attribute changes of the path the
	// witness saw since it was reported.
	changes int
}

type pending struct {
	ev       Event
	path     string
	role     string
	tgid     uint32
	time     time.Time
	deadline time.Time
}

type undecided struct {
	ev   Event
	boot uint64
	time time.Time
}

// CheckStats count what the checker saw.
type CheckStats struct {
	// Changes are the tree's changes handled.
	Changes uint64
	// Unexplained are those outside the allowlist that no reported
	// violation explained.
	Unexplained uint64
	Overflows   uint64
	// Unresolved are the tree's changes the witness found no path for.
	Unresolved uint64
	// OverlayLayers are the tree's changes that were an overlay writing
	// its layers (Layer): the writes made through the overlay
	// are judged by their system calls' paths.
	OverlayLayers uint64
	// Ignored are the directories whose events the kernel drops;
	// IgnoredFiles the reported files whose writes it drops.
	Ignored, IgnoredFiles int
}

// NewChecker returns a Checker.
func NewChecker(opts CheckOptions) *Checker {
	if opts.Host == nil {
		opts.Host = host.Live{}
	}
	if opts.Ledger == nil {
		opts.Ledger = new(incomplete.Ledger)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Checker{opts: opts, members: newMembers(), noted: map[notedKey]*noted{}}
	if opts.Allow != nil {
		for _, e := range opts.Allow.Entries() {
			if e.Kind != allowlist.Deny {
				continue
			}
			if p, err := allowlist.Compile(e.Pattern); err == nil {
				c.denies = append(c.denies, p)
			} else {
				c.busy.off = true // a deny entry that cannot be read: ignore nothing
			}
		}
	}
	return c
}

// Wanted reports whether the witness should resolve and hand on an
// event of process pid. It declines only pids it is sure are outside the
// tree. Called from the witness's goroutine.
func (c *Checker) Wanted(pid int32) bool {
	if pid <= 0 || pid == c.opts.Self {
		return false
	}
	if _, ok := c.members.has(pid); ok {
		return true
	}
	if !c.opts.InitialPIDNS || c.opts.Tracked == nil {
		return true
	}
	if c.outside.has(pid) {
		return false
	}
	if c.opts.Tracked(uint32(pid)) {
		return true
	}
	// Not in the kernel's tree now. A live process, not a zombie, was not
	// in it when it made the change either: the kernel adds a child at
	// its fork, before it runs, and drops it at its exit.
	return !c.outside.add(pid)
}

// Close releases what Wanted holds, once the witness is closed.
func (c *Checker) Close() { c.outside.close() }

// Joined records that process tgid (nspid in writewatch's PID namespace,
// 0 when not known) is of the tree.
func (c *Checker) Joined(tgid, nspid uint32) {
	if c.opts.InitialPIDNS {
		tgid = max(tgid, nspid)
		nspid = tgid
	}
	if nspid != 0 {
		c.members.join(int32(nspid), tgid)
	}
}

// Left records that process tgid of the tree exited.
func (c *Checker) Left(tgid, nspid uint32) {
	if c.opts.InitialPIDNS {
		nspid = tgid
	}
	if nspid != 0 {
		c.members.leave(int32(nspid))
	}
}

// Barrier returns the id of a barrier the run should place (with
// Sync, then WitnessSource.Barrier) when processes that left
// wait for one; ok is false when none is needed now.
func (c *Checker) Barrier() (id uint64, ok bool) { return c.members.barrier() }

// BarrierReached forgets the processes that left before barrier id.
func (c *Checker) BarrierReached(id uint64) { c.members.reached(id) }

// Noted records that the run reported a violation group for a write of
// process tgid (seen by the filesystem alone when fsOnly). g's strings
// may be views of buffers the caller reuses: Noted copies what it keeps.
func (c *Checker) Noted(tgid uint32, g Group, fsOnly bool) {
	n := c.noted[notedKey{tgid, g.Path}]
	if n == nil {
		if len(c.noted) >= maxNoted {
			clear(c.noted)
		}
		g.Path = strings.Clone(g.Path)
		n = &noted{fsOnly: fsOnly}
		c.noted[notedKey{tgid, g.Path}] = n
	}
	if !fsOnly && n.fsOnly {
		// A record explains the path after all.
		n.groups, n.fsOnly = n.groups[:0], false
	}
	if fsOnly != n.fsOnly {
		return
	}
	for _, have := range n.groups {
		if have == g {
			return
		}
	}
	g.Path = strings.Clone(g.Path)
	n.groups = append(n.groups, g)
}

// Record keeps what explains later changes of a write record's process,
// after the run has reported (Noted) the record's violations, and
// returns the changes that were waiting for it.
func (c *Checker) Record(ev *tracer.Event) []Finding {
	if c.opts.InitialPIDNS || ev.NSTGID != 0 {
		c.learn(ev)
	}
	r := &c.recent[c.next]
	c.next = (c.next + 1) % recentRecords
	*r = Recorded{
		TGID: ev.TGID, Op: ev.Op, OpName: ev.Op.String(), Flags: ev.Flags,
		Test: ev.Test, Go: ev.Go, Epoch: ev.Epoch, ViaIOUring: ev.ViaIOUring, Time: ev.Time,
	}
	r.Requested[0] = ev.String(tracer.SlotPath)
	r.names[0] = base(r.Requested[0])
	if ev.Has(tracer.SlotPath2) {
		r.Requested[1] = ev.String(tracer.SlotPath2)
		r.names[1] = base(r.Requested[1])
	}
	if ev.Has(tracer.SlotResolved) {
		r.names[2] = firstComponent(ev.Bytes(tracer.SlotResolved))
	}
	if len(c.pending) == 0 {
		return nil
	}
	var out []Finding
	kept := c.pending[:0]
	for i := range c.pending {
		p := &c.pending[i]
		if p.tgid != r.TGID {
			kept = append(kept, *p)
			continue
		}
		if f, ok := c.explained(p.path, p.role, &p.ev, p.tgid, p.time); ok {
			out = append(out, f)
			continue
		}
		if r.explains(p.path, p.role, p.ev.Op) {
			out = append(out, c.finding(p, r))
			continue
		}
		kept = append(kept, *p)
	}
	clear(c.pending[len(kept):])
	c.pending = kept
	return out
}

// learn maps a record's process in writewatch's PID namespace to its
// tgid, for changes of processes whose fork record said only the tgid.
func (c *Checker) learn(ev *tracer.Event) {
	pid := int32(ev.NSTGID)
	if c.opts.InitialPIDNS {
		pid = int32(ev.TGID)
	}
	if tgid, ok := c.members.has(pid); !ok || tgid != ev.TGID {
		c.members.join(pid, ev.TGID)
	}
}

// Change handles one change the witness saw. boot is its stamp on the
// kernel's boot clock, at stands for it on the wall clock.
func (c *Checker) Change(we *Event, boot uint64, at time.Time) []Finding {
	if we.Op&Overflow != 0 {
		c.stats.Overflows++
		return nil
	}
	c.renamed(we)
	if we.Op == MoveSelf {
		return nil // a rename's end, which changes nothing of its own
	}
	tgid, ok := c.members.has(we.Pid)
	if !ok {
		if len(c.undecided) >= maxHeld {
			c.undecided = c.undecided[1:]
		}
		c.undecided = append(c.undecided, undecided{ev: *we, boot: boot, time: at})
		return nil
	}
	return c.change(we, tgid, at)
}

// Caught decides on the changes of processes the tree did not know,
// once the stream has handled every record stamped up to boot: a
// process's fork record comes before any change it makes.
func (c *Checker) Caught(boot uint64) []Finding {
	if len(c.undecided) == 0 {
		return nil
	}
	var out []Finding
	n := 0
	for n < len(c.undecided) && c.undecided[n].boot+margin <= boot {
		u := &c.undecided[n]
		if tgid, ok := c.decide(u.ev.Pid); ok {
			out = append(out, c.change(&u.ev, tgid, u.time)...)
		}
		n++
	}
	clear(c.undecided[:n])
	c.undecided = c.undecided[n:]
	return out
}

// decide says whether pid, unknown when its change was read, is of the
// tree. Outside the initial PID namespace, a fork record says the
// child's pid there, but a process of a namespace outside writewatch's
// (setns) has none: its parents are asked for.
func (c *Checker) decide(pid int32) (uint32, bool) {
	if tgid, ok := c.members.has(pid); ok {
		return tgid, true
	}
	if c.opts.InitialPIDNS {
		return 0, false
	}
	p := pid
	for steps := 0; steps < 64 && p > 1; steps++ {
		parent, err := c.opts.Host.ParentOf(p)
		if err != nil {
			return 0, false
		}
		if _, ok := c.members.has(parent); ok {
			c.members.join(pid, 0)
			return 0, true
		}
		p = parent
	}
	return 0, false
}

// change handles a change of a process of the tree.
func (c *Checker) change(we *Event, tgid uint32, at time.Time) []Finding {
	c.stats.Changes++
	switch {
	case we.Name == "" && !we.IsDir && we.Op&^Attrib == 0:
		// A link count change, an event on the file alone: the names
		// made or removed come as their own events.
		return nil
	case we.Source == Layer:
		c.stats.OverlayLayers++
		return nil
	case we.Source == Unresolved:
		c.stats.Unresolved++
		return nil
	case we.Path == "":
		// Its directory (or the file) is gone: so is what changed in it,
		// and removing the directory was a change of its own.
		return nil
	case c.tmpfileName(we):
		// A file with no name (O_TMPFILE): the link that names it is
		// judged.
		return nil
	}
	var (
		out []Finding
		ts  [2]target
	)
	all := true
	for _, t := range targets(we, &ts) {
		if c.opts.Allow == nil || c.opts.Allow.Allowed(t.path) {
			continue
		}
		all = false
		if f, ok := c.explained(t.path, t.role, we, tgid, at); ok {
			out = append(out, f)
			continue
		}
		c.stats.Unexplained++
		p := pending{ev: *we, path: t.path, role: t.role, tgid: tgid, time: at, deadline: c.opts.Now().Add(wait)}
		if r := c.explainer(&p); r != nil {
			out = append(out, c.finding(&p, r))
			continue
		}
		if len(c.pending) >= maxHeld {
			out = append(out, c.finding(&c.pending[0], nil))
			c.pending = c.pending[1:]
		}
		c.pending = append(c.pending, p)
	}
	if all && we.Op&(Rename|MoveFrom|MoveTo) == 0 {
		c.busyDir(we)
	}
	return out
}

// explained says whether the run already reported the change: a
// violation of process tgid at path. A path reported by the filesystem
// alone gets one more occurrence.
func (c *Checker) explained(path, role string, we *Event, tgid uint32, at time.Time) (Finding, bool) {
	n := c.noted[notedKey{tgid, path}]
	if n == nil || len(n.groups) == 0 {
		return Finding{}, false
	}
	if we.Name != "" && !we.IsDir && we.Op&^(Modify|CloseWrite|Attrib) == 0 {
		n.changes++
		c.quieten(path, n.changes)
	}
	if !n.fsOnly {
		return Finding{Seen: n.groups}, true
	}
	g := n.groups[0]
	return Finding{Op: g.Op, Path: path, Role: role, TGID: tgid, PID: we.Pid, Time: at}, true
}

// explainer is the newest recent record of the change's process that
// names its entry, or nil.
func (c *Checker) explainer(p *pending) *Recorded {
	for i := range recentRecords {
		r := &c.recent[(c.next-1-i+2*recentRecords)%recentRecords]
		if r.OpName == "" {
			break
		}
		if r.TGID == p.tgid && r.explains(p.path, p.role, p.ev.Op) {
			return r
		}
	}
	return nil
}

// Explainer is the newest recent record of any process of the tree
// that names the entry at path with an operation that makes a change of
// kind op, or nil: for a change whose process is not known (one a
// sandbox's overlay held).
func (c *Checker) Explainer(path string, op Op) *Recorded {
	for i := range recentRecords {
		r := &c.recent[(c.next-1-i+2*recentRecords)%recentRecords]
		if r.OpName == "" {
			break
		}
		if r.explains(path, "", op) {
			return r
		}
	}
	return nil
}

// explains says whether record r names the entry at path with an
// operation that makes a change of kind op.
func (r *Recorded) explains(path, role string, op Op) bool {
	name := base(path)
	if name != r.names[0] && name != r.names[1] && name != r.names[2] {
		return false
	}
	return compatible(r.Op, op, role)
}

// compatible says whether a call of operation rec can make a change of
// kind op, as its row of the table of operations says (ops.Op.Changes).
// A change of the name that moved away (role old) is none of a call
// whose path of that role is not moved away: the file a hard link
// links keeps its name.
func compatible(rec ops.Op, op Op, role string) bool {
	if role == report.RoleOld {
		if p := rec.Path(role); p.Role == role && p.Effect != ops.MovesAway {
			return false
		}
	}
	return rec.Changes()&changes(op) != 0
}

// changes are the kinds of change (ops.Change) an event's ops report.
func changes(op Op) ops.Change {
	var c ops.Change
	if op&Create != 0 {
		c |= ops.NameCreated
	}
	if op&Delete != 0 {
		c |= ops.NameDeleted
	}
	if op&(Rename|MoveFrom|MoveTo) != 0 {
		c |= ops.NameMoved
	}
	if op&(Modify|CloseWrite) != 0 {
		c |= ops.DataModified
	}
	if op&Attrib != 0 {
		c |= ops.AttrsChanged
	}
	return c
}

// finding is a new violation for a change outside the allowlist: with
// the operation and path as requested of the record that explains it,
// or with the witness's name for the change.
func (c *Checker) finding(p *pending, r *Recorded) Finding {
	f := Finding{Path: p.path, Role: p.role, TGID: p.tgid, PID: p.ev.Pid, Record: r, Time: p.time}
	if r == nil {
		f.Op = witnessOp(&p.ev, p.role)
		return f
	}
	f.Op = r.OpName
	switch {
	case p.role == report.RoleNew && r.Requested[1] != "":
		f.Requested = r.Requested[1]
	default:
		f.Requested = r.Requested[0]
	}
	return f
}

// witnessOp names a change no record explains: by the operation that
// makes such a change (TestWitnessOpInTable keeps the two in step), or
// by one of the report's names for a change whose call is not known.
func witnessOp(we *Event, role string) string {
	c := changes(we.Op)
	switch {
	case role != "" || c&ops.NameMoved != 0:
		return ops.Rename.String()
	case c&ops.NameCreated != 0 && we.IsDir:
		return ops.Mkdir.String()
	case c&ops.NameCreated != 0:
		return report.OpCreate
	case c&ops.NameDeleted != 0 && we.IsDir:
		return ops.Rmdir.String()
	case c&ops.NameDeleted != 0:
		return ops.Unlink.String()
	case c&ops.DataModified != 0:
		return report.OpWrite
	}
	return report.OpAttrib
}

// Expire reports the changes that waited for a record until now.
func (c *Checker) Expire(now time.Time) []Finding {
	var out []Finding
	kept := c.pending[:0]
	for i := range c.pending {
		p := &c.pending[i]
		if now.Before(p.deadline) {
			kept = append(kept, *p)
			continue
		}
		if f, ok := c.explained(p.path, p.role, &p.ev, p.tgid, p.time); ok {
			out = append(out, f)
		} else {
			out = append(out, c.finding(p, nil))
		}
	}
	clear(c.pending[len(kept):])
	c.pending = kept
	return out
}

// Flush decides on every change still held, at the end of the run.
func (c *Checker) Flush() []Finding {
	out := c.Caught(^uint64(0) - margin)
	return append(out, c.Expire(c.opts.Now().Add(wait))...)
}

// Stats returns the counts so far.
func (c *Checker) Stats() CheckStats {
	s := c.stats
	s.Ignored, s.IgnoredFiles = len(c.busy.ignored), c.busy.files
	return s
}

// Incomplete lists why the witness could not see everything, from its
// counts (the ledger holds the other reasons), for the report: each
// reason one entry.
func (c *Checker) Incomplete() []string {
	var out []string
	if n := c.stats.Overflows; n > 0 {
		out = append(out, "the filesystem witness lost changes: the kernel's queue of its events overflowed "+times(n))
	}
	if n := c.stats.Unresolved; n > 0 {
		out = append(out, strconv.FormatUint(n, 10)+" changes on disk by the tree could not be named: the filesystem witness found no path for them")
	}
	return out
}

// Incompletely adds a reason the run could not see everything to the
// ledger.
func (c *Checker) Incompletely(reason string) { c.opts.Ledger.Add(reason) }

func times(n uint64) string {
	if n == 1 {
		return "once"
	}
	return strconv.FormatUint(n, 10) + " times"
}

type target struct{ path, role string }

// targets are the paths a change touched, with their roles in a move,
// in ts.
func targets(we *Event, ts *[2]target) []target {
	switch {
	case we.Op&Rename != 0 && we.OldPath != "":
		ts[0], ts[1] = target{we.OldPath, report.RoleOld}, target{we.Path, report.RoleNew}
		return ts[:2]
	case we.Op&MoveFrom != 0:
		ts[0] = target{we.Path, report.RoleOld}
	case we.Op&MoveTo != 0:
		ts[0] = target{we.Path, report.RoleNew}
	default:
		ts[0] = target{we.Path, ""}
	}
	return ts[:1]
}

// tmpfileName says the change's entry is an O_TMPFILE's: the kernel
// names such a file "#INO" in its directory without linking it there.
func (c *Checker) tmpfileName(we *Event) bool {
	if we.Ino == 0 || !strings.HasPrefix(we.Name, "#") || we.Name[1:] != strconv.FormatUint(we.Ino, 10) {
		return false
	}
	f, err := c.opts.Host.Lstat(we.Path)
	return err != nil || f.Ino != we.Ino
}

func base(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// firstComponent is the innermost component of a directory slot (see
// tracer.Event.AppendDir): the file's own name.
func firstComponent(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
