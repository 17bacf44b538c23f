// Package tracer loads writewatch's BPF programs, follows one process
// tree in the kernel and hands its write, exec, fork and exit records to
// the caller.
//
// New loads and attaches the programs; Arm makes the next process the
// caller starts the tree's root (Disarm once it has started); Next reads
// one record at a time into an Event (SetDeadline and Wake bound the
// wait); Tracked says which processes of the tree are alive; Stats,
// Repeats and ProgramStats are the kernel's counts at the end; Close
// detaches everything (nothing is pinned: the programs go with the
// process). Allowed writes can be settled in the kernel (Options.Marks);
// Go test binaries can be followed test by test (FollowGoTest). See
// Example. The maps, the bindings bpf2go generates and the parsing of Go
// binaries (internal/gobin) are internal.
//
// Ids follow the kernel's terms (see bpf/writewatch.h): a pid is one
// thread, a tgid is a process as ps shows it. Processes are keyed by their
// tgid in the initial PID namespace; NSTGID is the same process as
// writewatch's own PID namespace numbers it.
package tracer

import (
	"errors"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/writewatch/writewatch/internal/phases"
)

// ErrPermission means the kernel refused to load or attach the programs
// for lack of privileges.
var ErrPermission = errors.New("not permitted to load BPF programs")

// ErrUnsupported means this kernel lacks something writewatch needs.
var ErrUnsupported = errors.New("kernel lacks a feature writewatch needs")

// ErrClosed is returned by Next once the tracer is closed.
var ErrClosed = errors.New("tracer closed")

// ErrTimeout is returned by Next when the deadline passed with no record.
var ErrTimeout = errors.New("no record before the deadline")

// Options tune a Tracer.
type Options struct {
	// RingBufferBytes is the size of the kernel-to-user ring buffer, a
	// power of two multiple of the page size. 0 means 8 MiB.
	RingBufferBytes uint32
	// IgnoreMetadata leaves chmod, chown, utimes, xattr and inode flag changes out.
	IgnoreMetadata bool
	// Marks let the kernel recognise allowed writes and keep them from
	// user space. A write is dropped in the kernel only when every path
	// it touches lies under a MarkAllow inode and under no MarkDeny one
	// (and, for a rename, names no entry of a MarkMoves directory), and
	// the file it writes has one name only (a file with more links may
	// be one hard-linked from elsewhere).
	Marks []Mark
	// MarksLater, when not nil, gives the marks instead of Marks, once
	// the programs are loaded: the marks may wait on something slow (go
	// env, for the go-cache default of the allowlist) that the load then
	// overlaps. Marks more than the marks map holds by default make New
	// load the programs again, with the map sized for them.
	MarksLater func() []Mark
	// FollowGoTests pauses each program of the tree whose file name ends
	// in ".test" at exec (SIGSTOP from the kernel), so that FollowGoTest
	// can attach its uprobes before it runs; the KindExec record then has
	// ExecStopped set.
	FollowGoTests bool
	// GoTestsEarly says COMMAND is likely to run Go test binaries: the
	// programs that follow them then load in the background from New on,
	// instead of when the first one is paused.
	GoTestsEarly bool
	// Enforce, when set, makes the kernel enforce the marks (see
	// EnforceOptions); the marks must then be the grants of the plan.
	Enforce *EnforceOptions
}

// EnforceOptions make the kernel enforce the allowlist. A write is
// allowed when every path it touches is under a MarkAllow inode and under
// no MarkDeny one, or, judged as a string before the call, is an
// absolute path under one of Prefixes or equal to one of Exact.
type EnforceOptions struct {
	// Tier names how the programs enforce: the value of WW_TIER_<TIER>
	// (upper case) in enum ww_tier, bpf/writewatch.h.
	Tier string
	// LSM loads and attaches the BPF LSM programs (bpf/enforce.bpf.c),
	// which refuse the writes of the tree that are not allowed.
	LSM bool
	// Kill sends SIGKILL to the writer of a write that is not allowed.
	Kill bool
	// MetadataGuarded says COMMAND runs under the metadata guard
	// (package metaguard), which refuses metadata changes outside the
	// grants before they run: the kernel then reports those it refused
	// instead of judging metadata changes at their entry.
	MetadataGuarded bool
	// NoIOURing: with MetadataGuarded, the guard's filter also makes
	// io_uring_setup fail (ENOSYS), for a tier that cannot refuse the
	// extended-attribute requests of an io_uring (Landlock).
	NoIOURing bool
	// Prefixes are directories, each ending in "/", everything under
	// which is allowed; Exact are paths allowed themselves. Entries
	// longer than PrefixMax bytes are refused.
	Prefixes, Exact []string
}

// PrefixMax is the longest prefix the kernel keeps.
const PrefixMax = int(unsafe.Sizeof(writewatchPrefixKey{}.Data)) - 1

// Actions say what enforcement did about a write (enum ww_action bits).
const (
	ActionBlocked = uint32(writewatchWwActionWW_ACT_BLOCKED) // the kernel refused the call
	ActionKilled  = uint32(writewatchWwActionWW_ACT_KILLED)  // the writer was sent SIGKILL
)

// MarkKind says what a Mark means.
type MarkKind uint32

const (
	MarkAllow = MarkKind(writewatchWwMarkWW_MARK_ALLOW) // allowed, with everything under it
	MarkDeny  = MarkKind(writewatchWwMarkWW_MARK_DENY)  // user space must decide at or under it
	// MarkFinal goes with MarkAllow when no deny mark lies above it:
	// reaching it settles a write without looking further up.
	MarkFinal = MarkKind(writewatchWwMarkWW_MARK_FINAL)
	// MarkMoves marks a directory above what a deny entry protects:
	// the kernel leaves the renames of its own entries to user space,
	// which judges what a renamed directory moves.
	MarkMoves = MarkKind(writewatchWwMarkWW_MARK_MOVES)
)

// Mark names an inode by the device and inode number stat reports.
type Mark struct {
	Dev  uint64 // st_dev
	Ino  uint64
	Kind MarkKind
}

// Tracer is one loaded and attached set of writewatch programs.
type Tracer struct {
	objs   writewatchObjects
	lsm    *enforceObjects // the LSM tier's programs, when loaded
	links  []link.Link
	rd     *ringbuf.Reader
	rec    ringbuf.Record
	offset int64 // wall clock minus CLOCK_BOOTTIME, in ns

	gotests   map[uint32]*goTest         // followed Go test binaries, by tgid
	prepared  map[fileID]*preparedGoTest // Go test binaries' files readied (PrepareGoTest)
	preparing sync.WaitGroup             // PrepareGoTest's attaches under way
	detaching sync.WaitGroup             // uprobes being closed
	multi     bool                       // Go test uprobes are uprobe_multi links

	// The Go test uprobe programs load in the background (loadGoTests):
	// goReady closes once they are in objs, or goErr says why not.
	goReady chan struct{}
	goErr   error
	goOnce  sync.Once // runs goStart, or goDrop when Close comes first
	goStart func()
	goDrop  func()
	mu      sync.Mutex // guards objs's programs against Close while they load
	closed  bool

	// The io_uring program loads in the background outside --enforce
	// (loadURingLater): uringReady closes once it is attached, or could
	// not be (unwatched says why). uringLink is its link, guarded by mu.
	uringReady chan struct{}
	uringLink  link.Link

	closeOnce sync.Once

	// unwatched says what the tracer could not attach on this kernel,
	// each a reason the run is incomplete (Stats.Unwatched).
	unwatched []string
	// priorErr says why the prior programs are not attached (PriorErr).
	priorErr error
}

// Close detaches every program and frees the maps. Nothing is pinned, so
// nothing outlives the process either way.
func (t *Tracer) Close() error {
	var errs []error
	t.closeOnce.Do(func() {
		defer phases.Start("tracer: close")()
		if t.rd != nil {
			errs = append(errs, t.rd.Close())
		}
		for _, l := range t.links {
			errs = append(errs, l.Close())
		}
		for tgid := range t.gotests {
			t.ForgetGoTest(tgid)
		}
		t.preparing.Wait()
		for _, p := range t.prepared {
			t.unprepare(p)
		}
		clear(t.prepared)
		t.detaching.Wait()
		if t.lsm != nil {
			errs = append(errs, t.lsm.Close())
		}
		// The Go test programs may still be loading: they close
		// themselves then (loadGoTests).
		if t.goDrop != nil {
			t.goOnce.Do(t.goDrop)
		}
		t.mu.Lock()
		t.closed = true
		if t.uringLink != nil {
			errs = append(errs, t.uringLink.Close())
		}
		errs = append(errs, t.objs.Close())
		t.mu.Unlock()
	})
	return errors.Join(errs...)
}
