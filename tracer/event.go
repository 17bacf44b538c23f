package tracer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/writewatch/writewatch/internal/ops"
)

// Kind says what a record reports.
type Kind uint32

const (
	KindWrite = Kind(writewatchWwEventKindWW_EV_WRITE) // a write-intent syscall returned
	KindExec  = Kind(writewatchWwEventKindWW_EV_EXEC)  // a process of the tree ran execve
	KindFork  = Kind(writewatchWwEventKindWW_EV_FORK)  // a process of the tree made a process
	KindExit  = Kind(writewatchWwEventKindWW_EV_EXIT)  // a process of the tree ended
	// KindTestStart: a followed Go test binary entered testing.tRunner;
	// Event.Test is the new test's token, SlotPath its full name.
	KindTestStart = Kind(writewatchWwEventKindWW_EV_TEST_START)
	// KindTestEnd: that test's function returned; cleanups follow.
	KindTestEnd = Kind(writewatchWwEventKindWW_EV_TEST_END)
	// KindRead: a process of the tree opened, read-only, a file whose
	// write record the kernel sent earlier in the run. SlotResolved is the
	// file, Ino and Dev name it; the reader is attributed like a write
	// (Test, Go, Epoch). Sent once per file and reader: the kernel counts
	// the repeats (Stats.ReadRepeats).
	KindRead = Kind(writewatchWwEventKindWW_EV_READ)
	// KindContents: a process of the tree did something after which it
	// may hold a file from outside the tree, or reach a file by a path
	// of its own (Event.Why says what): file contents must be watched
	// from now on. With ContentsStopped in Flags, the kernel paused it:
	// the caller sends it SIGCONT once they are (bpf/lib/contents.h).
	KindContents = Kind(writewatchWwEventKindWW_EV_CONTENTS)
)

// Go flags (Event.Go): what the kernel knew of the writing goroutine.
const (
	GoProc = uint32(writewatchWwGoFlagWW_GO_PROC) // a followed Go test binary
	GoG    = uint32(writewatchWwGoFlagWW_GO_G)    // Event.Goid is the goroutine
	GoTest = uint32(writewatchWwGoFlagWW_GO_TEST) // Event.Test is its test's token
)

// ExecStopped is set in a KindExec record's Flags when the kernel paused
// the new program (it looks like a Go test binary): the caller must send
// it SIGCONT, after FollowGoTest.
const ExecStopped = 1

// ExecContents is set in a KindExec record's Flags when the new program
// asks for file contents to be watched (Event.Why says why) and the
// kernel paused it: the caller sends it SIGCONT once they are (after
// FollowGoTest, when ExecStopped is set too).
const ExecContents = 2

// ExecPrepared is set in a KindExec record's Flags when the new program
// is a Go test binary whose file's uprobes were attached
// (PrepareGoTest): the kernel did not pause it, and made its layout the
// process's; Ino and Dev name the file, for FollowPreparedGoTest.
const ExecPrepared = 4

// ContentsStopped is set in a KindContents record's Flags when the
// kernel paused the process.
const ContentsStopped = 1

// Why says why a process of the tree asks for file contents to be
// watched (KindContents, or a KindExec record with ExecContents).
type Why uint32

const (
	WhyUnixSocket = Why(writewatchWwContentsWhyWW_WHY_UNIX_SOCKET) // made a Unix socket
	WhyIOURing    = Why(writewatchWwContentsWhyWW_WHY_IO_URING)    // made an io_uring
	WhyPidfdGetfd = Why(writewatchWwContentsWhyWW_WHY_PIDFD_GETFD) // took another process's descriptor
	WhySeccomp    = Why(writewatchWwContentsWhyWW_WHY_SECCOMP)     // made a seccomp listener
	WhyNamespace  = Why(writewatchWwContentsWhyWW_WHY_NAMESPACE)   // entered or made a user or mount namespace
	WhyPrivileged = Why(writewatchWwContentsWhyWW_WHY_PRIVILEGED)  // ran a program that gained privileges
	WhyCompat     = Why(writewatchWwContentsWhyWW_WHY_COMPAT)      // ran a 32-bit program
	// A privileged process (any effective capability) called:
	WhyMount  = Why(writewatchWwContentsWhyWW_WHY_MOUNT)  // mount, the new mount API, or pivot_root
	WhyChroot = Why(writewatchWwContentsWhyWW_WHY_CHROOT) // chroot
	WhyHandle = Why(writewatchWwContentsWhyWW_WHY_HANDLE) // open_by_handle_at
	WhyAcct   = Why(writewatchWwContentsWhyWW_WHY_ACCT)   // acct
)

var whyNames = map[Why]string{
	WhyUnixSocket: "a Unix socket", WhyIOURing: "an io_uring", WhyPidfdGetfd: "pidfd_getfd",
	WhySeccomp: "a seccomp listener", WhyNamespace: "a user or mount namespace",
	WhyPrivileged: "a program that gained privileges at exec", WhyCompat: "a 32-bit program",
	WhyMount: "a mount", WhyChroot: "chroot", WhyHandle: "open_by_handle_at", WhyAcct: "process accounting (acct)",
}

// String names what the process did, as the report says it.
func (w Why) String() string {
	if s, ok := whyNames[w]; ok {
		return s
	}
	return fmt.Sprintf("cause %d", uint32(w))
}

// MetaFollow is set in Event.Flags of a metadata change by path that
// follows a symlink in the path's last component (chmod, not lchown):
// ops.MetaFollow, which bpf/ops.h carries.
const MetaFollow = uint32(writewatchWwMetaFlagWW_META_FOLLOW)

// repeatFailed is WW_REPEAT_FAILED (bpf/writewatch.h): the repeats of a
// call that failed are counted under a key of their own.
const repeatFailed = 1 << 30

// openCreated is WW_OPEN_CREATED (bpf/writewatch.h), a bit of the
// header's flags that no open flag uses.
const openCreated = 1 << 31

// Prior is what a write record's call found before it changed its file,
// as the kernel saw it once the VFS had looked the file up: a rename's
// target (Mode 0: it held nothing, the rename replaced no file), or the
// file of a chmod, chown or utimes. Known is false when the kernel did
// not say: another call, one that failed before it reached the file, an
// io_uring request, or a kernel that cannot hook the VFS
// (Tracer.PriorErr).
type Prior struct {
	Known     bool
	Mode      uint32 // st_mode: file type and permission bits
	UID, GID  uint32 // as the initial user namespace numbers them
	MtimeSec  int64
	MtimeNsec uint32
}

// Mtime is the modification time.
func (p *Prior) Mtime() time.Time { return time.Unix(p.MtimeSec, int64(p.MtimeNsec)) }

// Slot names one string of a record.
type Slot int

const (
	SlotPath     = Slot(writewatchWwSlotWW_SLOT_PATH)     // path as passed
	SlotDir      = Slot(writewatchWwSlotWW_SLOT_DIR)      // start directory of a relative SlotPath
	SlotPath2    = Slot(writewatchWwSlotWW_SLOT_PATH2)    // rename's or link's second path
	SlotDir2     = Slot(writewatchWwSlotWW_SLOT_DIR2)     // start directory of a relative SlotPath2
	SlotResolved = Slot(writewatchWwSlotWW_SLOT_RESOLVED) // the file an open opened
	// SlotArgs holds a KindExec record's argv, NUL-separated.
	SlotArgs = SlotDir
	nslots   = 5
)

// Event is one decoded record. Its byte slices point into the tracer's
// read buffer and are valid until the next call to Next.
type Event struct {
	Kind   Kind
	Op     ops.Op    // a KindWrite record's operation
	BootNS uint64    // kernel timestamp, CLOCK_BOOTTIME
	Time   time.Time // BootNS on the wall clock
	TGID   uint32    // process, initial PID namespace
	PID    uint32    // thread, initial PID namespace
	NSTGID uint32    // process in writewatch's PID namespace; 0 when unknown
	PPID   uint32    // parent tgid (for KindFork: the process that forked)
	Ret    int32     // syscall result, or wait status for KindExit
	Flags  uint32
	Mode   uint32
	// Created is set on an open (or creat) that succeeded and created
	// the file it opened (the kernel's FMODE_CREATED), rather than
	// opening one that was there.
	Created bool
	// Action is what enforcement did: ActionBlocked and ActionKilled bits.
	Action uint32
	Comm   []byte
	// ViaIOUring marks a request submitted through io_uring: it was seen
	// when submitted, so Ret says nothing about its result.
	ViaIOUring bool
	// Ino, Dev and Gen (the inode's generation) name the file behind
	// SlotResolved (Ino 0: none). The kernel counts later identical
	// writes to it in the repeats map instead of sending them: see
	// Tracer.Repeats.
	Ino uint64
	Dev uint32
	Gen uint32
	// Test is a test token handed out by the kernel: for a write, the
	// test of the goroutine that wrote (Go & GoTest); for a fork, the test
	// of the goroutine that forked; for KindTestStart/End, the test.
	Test uint64
	Goid uint64 // the goroutine, when Go & GoG
	Go   uint32 // Go flags
	// Epoch counts the test-boundary announcements (docs/protocol.md) the
	// writing process had made.
	Epoch uint32
	// Why: a KindContents record's cause, or a KindExec record's with
	// ExecContents.
	Why Why
	// Unwatched marks a write whose path may lead elsewhere for the
	// tree than for writewatch, with no event of the filesystem
	// witness's to tell: an open for writing of a file reached through a
	// mount made during the run, of a namespace the tree did not make or
	// mounted in, or from a chroot, while file contents were not
	// watched; a truncate by name while a privileged process changed
	// mounts; a shared mapping or AIO write of such a file
	// (bpf/lib/contents.h, mount_bits; bpf/lib/mounts.h).
	Unwatched bool
	// Paused marks a write record whose process the kernel paused as it
	// sent it, so that the path the call followed stays as it was: the
	// caller sends it SIGCONT (Resume) once it has followed the path
	// (bpf/lib/pause.h, pause_for_path).
	Paused bool
	// Prior is what the call found before it changed its file, when the
	// kernel saw it (bpf/lib/prior.h).
	Prior Prior
	// OwnView marks a write by name that succeeded, by a process in a
	// mount namespace the tree made and mounted in since: its path may
	// lead elsewhere for the process than for writewatch, and the kernel
	// paused it (Paused) so that the caller can find, through its root
	// (/proc/PID/root), where the write landed. MountCalls is the tree's
	// count of calls that change mounts then (Tracer.MountCalls): when
	// it has not moved since, no mount moved meanwhile
	// (bpf/lib/mounts.h).
	OwnView    bool
	MountCalls uint32
	// Rewritten marks a write by name whose name, or start directory,
	// in the process's memory changed between the call's entry and its
	// exit: the record may not name what the call wrote, as another
	// thread can rewrite the name while the kernel walks it
	// (bpf/lib/names.h).
	Rewritten bool
	// Device is the number of the block device an open that succeeded
	// opened for writing (the kernel's dev_t: major << 20 | minor), when
	// the allowlist does not name its node: such an open writes every
	// file on the device (bpf/lib/marks.h, writes_device). 0 otherwise.
	Device uint32

	present, truncated uint32
	slots              [nslots][]byte
}

// Has reports whether the record carries slot s.
func (e *Event) Has(s Slot) bool { return e.present&(1<<s) != 0 }

// Truncated reports whether slot s was cut to fit the kernel's buffer.
func (e *Event) Truncated(s Slot) bool { return e.truncated&(1<<s) != 0 }

// Bytes is the raw content of slot s.
func (e *Event) Bytes(s Slot) []byte { return e.slots[s] }

// String is slot s as one string, without its terminating NUL.
func (e *Event) String(s Slot) string {
	return string(bytes.TrimSuffix(e.slots[s], []byte{0}))
}

var (
	hdrSize = int(unsafe.Sizeof(writewatchEventHdr{}))
	commOff = int(unsafe.Offsetof(writewatchEventHdr{}.Comm))
)

func (e *Event) decode(raw []byte) error {
	if len(raw) < hdrSize {
		return fmt.Errorf("short record: %d bytes", len(raw))
	}
	h := (*writewatchEventHdr)(unsafe.Pointer(&raw[0]))
	e.Kind, e.Op = Kind(h.Kind), ops.Op(h.Op)
	e.BootNS = h.Ts
	e.TGID, e.PID, e.NSTGID, e.PPID = h.Tgid, h.Pid, h.NsTgid, h.Ppid
	e.Ret, e.Flags, e.Mode = h.Ret, h.Flags&^openCreated, h.Mode
	e.Created = h.Flags&openCreated != 0
	e.Test, e.Goid, e.Go, e.Epoch = h.Test, h.Goid, h.Go, h.Epoch
	e.present, e.truncated = uint32(h.Present), h.Truncated
	e.Action = h.Action
	e.ViaIOUring = h.Via == uint16(writewatchWwViaWW_VIA_IO_URING)
	e.Ino, e.Dev, e.Gen = h.Ino, h.Dev, h.Gen
	e.Why = 0
	e.Unwatched = h.Rec&uint16(writewatchWwRecWW_REC_UNWATCHED) != 0
	e.Paused = h.Rec&uint16(writewatchWwRecWW_REC_PAUSED) != 0
	e.Prior = Prior{}
	if h.Rec&uint16(writewatchWwRecWW_REC_PRIOR) != 0 {
		e.Prior = Prior{Known: true, Mode: h.PriorMode, UID: h.PriorUid, GID: h.PriorGid, MtimeSec: h.PriorMtimeSec, MtimeNsec: h.PriorMtimeNsec}
	}
	e.Rewritten = h.Rec&uint16(writewatchWwRecWW_REC_REWRITTEN) != 0
	e.OwnView, e.MountCalls = h.Rec&uint16(writewatchWwRecWW_REC_OWN_VIEW) != 0, 0
	if e.OwnView {
		e.MountCalls, e.Gen = h.Gen, 0
	}
	e.Device = 0
	if h.Rec&uint16(writewatchWwRecWW_REC_DEVICE) != 0 {
		e.Device, e.Mode = h.Mode, 0
	}
	if e.Kind == KindContents || e.Kind == KindExec {
		e.Why, e.Op = Why(h.Op), 0
	}
	comm := raw[commOff : commOff+len(h.Comm)]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	e.Comm = comm
	off := hdrSize
	for i := range nslots {
		n := int(h.Len[i])
		if off+n > len(raw) {
			return fmt.Errorf("record slot %d overruns: %d+%d > %d", i, off, n, len(raw))
		}
		e.slots[i] = raw[off : off+n : off+n]
		off += n
	}
	return nil
}

// AppendDir appends the absolute directory held by a directory slot
// (components innermost first, each NUL-terminated) to dst.
func (e *Event) AppendDir(dst []byte, s Slot) []byte {
	comps := e.slots[s]
	if len(comps) == 0 {
		return append(dst, '/')
	}
	// Walk the components from the last (outermost) to the first.
	end := len(comps)
	if comps[end-1] == 0 {
		end--
	}
	for end > 0 {
		start := bytes.LastIndexByte(comps[:end], 0) + 1
		dst = append(dst, '/')
		dst = append(dst, comps[start:end]...)
		end = start - 1
	}
	return dst
}

// EntryPC is the code address of the function a KindTestStart record's
// tRunner runs (0 when unknown).
func (e *Event) EntryPC() uint64 {
	b := e.slots[SlotPath2]
	if len(b) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// Args splits a KindExec record's argv.
func (e *Event) Args() []string {
	raw := bytes.TrimRight(e.slots[SlotArgs], "\x00")
	if len(raw) == 0 {
		return nil
	}
	return strings.Split(string(raw), "\x00")
}

// RepeatKey identifies the repeats of one sent write: the same process,
// operation, flags and file (inode number, device and generation), for
// the same test (Go test token, or the process's announcement epoch).
type RepeatKey struct {
	Ino   uint64
	Dev   uint32
	Gen   uint32
	TGID  uint32
	Op    ops.Op
	Flags uint32
	Test  uint64
	Epoch uint32
}

// RepeatKey is the key the kernel counts this record's repeats under; ok
// is false when the record has none.
func (e *Event) RepeatKey() (k RepeatKey, ok bool) {
	if e.Ino == 0 || e.truncated != 0 {
		return k, false
	}
	flags := e.Flags
	if e.Ret < 0 && !e.ViaIOUring {
		flags |= repeatFailed
	}
	return RepeatKey{Ino: e.Ino, Dev: e.Dev, Gen: e.Gen, TGID: e.TGID, Op: e.Op, Flags: flags, Test: e.Test, Epoch: e.Epoch}, true
}

// Resume lets the process of a record the kernel paused go on (SIGCONT):
// an exec record with ExecStopped or ExecContents, a KindContents one
// with ContentsStopped, a write record with Paused.
func (e *Event) Resume() {
	syscall.Kill(int(e.LocalTGID()), syscall.SIGCONT)
}

// LocalTGID is the record's process as this process's PID namespace
// numbers it: NSTGID when known, else TGID.
func (e *Event) LocalTGID() uint32 {
	if e.NSTGID != 0 {
		return e.NSTGID
	}
	return e.TGID
}

// SetSlot sets slot s of a record built by hand (for tests and replays).
func (e *Event) SetSlot(s Slot, b []byte) {
	e.slots[s] = b
	e.present |= 1 << s
}
