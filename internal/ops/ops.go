// Package ops is the one table of the write operations writewatch
// reports: for each, the name the report prints, its kind (data,
// namespace or metadata), the syscalls and io_uring opcodes that produce
// it, its metric label, and what it means: the paths it names (one, or
// two with a role each), what a call that succeeded did to each (an
// Effect: opens, creates, changes, removes, moves away or onto, links),
// when it follows a symlink in a path's last component (a Follow rule),
// and which changes the filesystem witness may see it make (Change).
//
// The kernel side follows from it: go generate writes bpf/ops.h (enum
// ww_op, the operations grouped by what their rows say, which
// bpf/lib/rows.h reads, the lists of syscalls that produce operations,
// and the syscall numbers of each architecture, from numbers.go), and
// tests fail when the committed header, or the C code that produces the
// operations, disagrees with the table. The tracer, the judge, the
// severities, the filesystem witness's checker, the report, the live
// counters, the metrics and the metadata guard take theirs from here. The
// few places that still tell operations apart by name, each for what no
// row says, are listed in ops_test.go (handWritten), and
// TestOperationsReadFromTable fails on any other.
//
// Adding an operation: a constant and a row of the table below; a number
// per architecture for each new syscall (numbers.go, checked against
// golang.org/x/sys/unix in numbers_amd64_test.go and
// numbers_arm64table_test.go); make generate (go generate here writes
// bpf/ops.h, then the BPF objects are rebuilt); and one C case that
// produces it: a case of sys_enter's switch for a syscall
// (syscall_entered in bpf/lib/stash.h, or stash_meta_call for a metadata
// change), a branch of uring_submitted for an io_uring request
// (bpf/lib/uring.h). Besides, as the operation needs: for a metadata
// syscall, its arguments in the metadata guard's decode
// (internal/metaguard); for the lsm tier to refuse it, its hook
// (bpf/enforce.bpf.c); for roles, the summary's words for them (roleText
// in internal/render, which TestRoleText asks for); and its line in
// docs/writes.md.
package ops

//go:generate go run ./genheader ../../bpf/ops.h

import (
	"fmt"
	"slices"

	"github.com/writewatch/writewatch/report"
)

// Op is a write operation, as the kernel sends it (enum ww_op).
type Op uint32

// The operations. Their values are those of enum ww_op, and their order
// is the table's: report order, metrics, and the live counters.
const (
	Open Op = iota + 1
	Creat
	Truncate
	Rename
	Unlink
	Rmdir
	Mkdir
	Link
	Symlink
	Mknod
	Chmod
	Chown
	Utimes
	Setxattr
	Removexattr
	Setflags
	Mmap
	Aio
)

// Kind says what an operation changes.
type Kind uint8

const (
	// Data operations change a file's contents (an open for writing
	// may also create it).
	Data Kind = iota + 1
	// Namespace operations add, remove or rename names.
	Namespace
	// Metadata operations change a file's attributes: mode, owner,
	// times, extended attributes, inode flags.
	Metadata
)

var kindNames = [...]string{Data: "data", Namespace: "namespace", Metadata: "metadata"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind%d", uint8(k))
}

// row is one operation of the table.
type row struct {
	name     string   // as the report prints it (Violation.Op)
	kind     Kind     // what it changes
	syscalls []string // the syscalls that produce it, by their kernel names
	uring    []string // the io_uring opcodes that produce it
	metric   string   // the value of the metrics' op label
	// unnotified: its writes reach a file with no event of the
	// filesystem witness's (Unnotified).
	unnotified bool
	// restorable: it changes what the kernel notes of a file before the
	// call (mode, owner, modification time: a notify_change), which the
	// end of the run compares with (Restorable).
	restorable bool
	// paths: what it does to each path it names, in the record's order
	// (Paths): one, or two with a role each.
	paths []Path
	// changes: those the filesystem witness may see it make (Changes).
	changes Change
}

// table is the one declaration of the operations, indexed by Op.
var table = [...]row{
	Open: {name: "open", kind: Data, metric: "open",
		syscalls: []string{"open", "openat", "openat2"}, // with a flag that writes
		uring:    []string{"IORING_OP_OPENAT", "IORING_OP_OPENAT2"},
		paths:    []Path{{Effect: Opens, Follow: FollowOpenFlags}},
		changes:  NameCreated | DataModified | AttrsChanged},
	Creat: {name: "creat", kind: Data, metric: "creat",
		syscalls: []string{"creat"},
		paths:    []Path{{Effect: Opens, Follow: FollowOpenFlags}},
		changes:  NameCreated | DataModified | AttrsChanged},
	Truncate: {name: "truncate", kind: Data, metric: "truncate",
		syscalls: []string{"truncate"},
		paths:    []Path{{Effect: Changes, Follow: FollowAlways, Unseen: true}},
		changes:  NameCreated | DataModified | AttrsChanged},
	Rename: {name: "rename", kind: Namespace, metric: "rename",
		syscalls: []string{"rename", "renameat", "renameat2"},
		uring:    []string{"IORING_OP_RENAMEAT"},
		paths:    []Path{{Role: report.RoleOld, Effect: MovesAway}, {Role: report.RoleNew, Effect: MovesOnto}},
		changes:  NameMoved | NameDeleted | NameCreated},
	Unlink: {name: "unlink", kind: Namespace, metric: "unlink",
		syscalls: []string{"unlink", "unlinkat"}, // unlinkat without AT_REMOVEDIR
		uring:    []string{"IORING_OP_UNLINKAT"},
		paths:    []Path{{Effect: Removes}},
		changes:  NameDeleted},
	Rmdir: {name: "rmdir", kind: Namespace, metric: "rmdir",
		syscalls: []string{"rmdir", "unlinkat"}, // unlinkat with AT_REMOVEDIR
		uring:    []string{"IORING_OP_UNLINKAT"},
		paths:    []Path{{Effect: Removes}},
		changes:  NameDeleted},
	Mkdir: {name: "mkdir", kind: Namespace, metric: "mkdir",
		syscalls: []string{"mkdir", "mkdirat"},
		uring:    []string{"IORING_OP_MKDIRAT"},
		paths:    []Path{{Effect: Creates}},
		changes:  NameCreated},
	// A hard link to a file is a new way to write that file: the file
	// linked is judged too.
	Link: {name: "link", kind: Namespace, metric: "link",
		syscalls: []string{"link", "linkat"},
		uring:    []string{"IORING_OP_LINKAT"},
		paths: []Path{{Role: report.RoleOld, Effect: Links, Follow: FollowAtFlag, Unseen: true},
			{Role: report.RoleNew, Effect: Creates}},
		changes: NameCreated},
	Symlink: {name: "symlink", kind: Namespace, metric: "symlink",
		syscalls: []string{"symlink", "symlinkat"},
		uring:    []string{"IORING_OP_SYMLINKAT"},
		paths:    []Path{{Role: report.RoleNew, Effect: Creates}}, // the link; what it points to is no path written
		changes:  NameCreated},
	Mknod: {name: "mknod", kind: Namespace, metric: "mknod",
		syscalls: []string{"mknod", "mknodat"},
		paths:    []Path{{Effect: Creates}},
		changes:  NameCreated},
	Chmod: {name: "chmod", kind: Metadata, metric: "chmod", restorable: true,
		syscalls: []string{"chmod", "fchmod", "fchmodat", "fchmodat2"},
		paths:    attrs, changes: AttrsChanged},
	Chown: {name: "chown", kind: Metadata, metric: "chown", restorable: true,
		syscalls: []string{"chown", "lchown", "fchown", "fchownat"},
		paths:    attrs, changes: AttrsChanged},
	// A change of one time alone is seen only while contents are
	// watched (the modification time), or never (the access time).
	Utimes: {name: "utimes", kind: Metadata, metric: "utimes", restorable: true,
		syscalls: []string{"utime", "utimes", "futimesat", "utimensat"},
		paths:    []Path{{Effect: Changes, Follow: FollowMetaFlag, Unseen: true}},
		changes:  AttrsChanged},
	Setxattr: {name: "setxattr", kind: Metadata, metric: "setxattr",
		syscalls: []string{"setxattr", "lsetxattr", "fsetxattr", "setxattrat"},
		uring:    []string{"IORING_OP_SETXATTR", "IORING_OP_FSETXATTR"},
		paths:    attrs, changes: AttrsChanged},
	Removexattr: {name: "removexattr", kind: Metadata, metric: "removexattr",
		syscalls: []string{"removexattr", "lremovexattr", "fremovexattr", "removexattrat"},
		paths:    attrs, changes: AttrsChanged},
	Setflags: {name: "setflags", kind: Metadata, metric: "setflags",
		syscalls: []string{"ioctl", "file_setattr"}, // ioctl with one of the commands of Ioctls only
		paths:    attrs, changes: AttrsChanged},
	// Writes through a descriptor that make no other call the table
	// names, and that the filesystem witness cannot see: a shared
	// mapping of a file open for writing, whose stores change the file
	// with no syscall at all, and a write request of Linux AIO, which
	// the kernel does not pass to fanotify. Judged by the file behind
	// the descriptor (one the tree opened for writing was judged when
	// it was opened; these matter for a descriptor from outside it).
	Mmap: {name: "mmap", kind: Data, metric: "mmap", unnotified: true,
		syscalls: []string{"mmap"}, // MAP_SHARED, of a file open for writing
		paths:    []Path{{Effect: Changes}},
		changes:  NameCreated | DataModified | AttrsChanged},
	Aio: {name: "aio", kind: Data, metric: "aio", unnotified: true,
		syscalls: []string{"io_submit"}, // IOCB_CMD_PWRITE, IOCB_CMD_PWRITEV
		paths:    []Path{{Effect: Changes}},
		changes:  NameCreated | DataModified | AttrsChanged},
}

// attrs is the path of a metadata change: by path, following a symlink
// in the last component as the call says, or by descriptor.
var attrs = []Path{{Effect: Changes, Follow: FollowMetaFlag}}

// ioctls are the ioctl commands that change a file's inode flags
// (chattr +i, +a, ...) or its generation (chattr -v): of the ioctls,
// the only ones that are a write (Setflags). The kernel side (WW_SETFLAGS_IOCTLS) and the metadata
// guard's filter look at these commands only.
var ioctls = []struct {
	name string
	cmd  uint32
}{
	{"FS_IOC_SETFLAGS", 0x40086602},   // _IOW('f', 2, long)
	{"FS_IOC_FSSETXATTR", 0x401c5820}, // _IOW('X', 32, struct fsxattr)
	// The inode's generation (chattr -v), under its two names.
	{"FS_IOC_SETVERSION", 0x40087602},   // _IOW('v', 2, long)
	{"EXT4_IOC_SETVERSION", 0x40086604}, // _IOW('f', 4, long)
}

// Ioctls are the ioctl commands that are Setflags writes.
func Ioctls() []uint32 {
	cmds := make([]uint32, len(ioctls))
	for i, c := range ioctls {
		cmds[i] = c.cmd
	}
	return cmds
}

// Count is the number of operations: they are 1 to Count.
const Count = len(table) - 1

// All returns every operation, in order.
func All() []Op {
	all := make([]Op, Count)
	for i := range all {
		all[i] = Op(i + 1)
	}
	return all
}

// valid reports whether o is one of the operations.
func (o Op) valid() bool { return o >= 1 && int(o) <= Count }

func (o Op) row() row {
	if !o.valid() {
		return row{}
	}
	return table[o]
}

// String is the operation's name, as the report prints it; "opN" for a
// number that names none.
func (o Op) String() string {
	if !o.valid() {
		return fmt.Sprintf("op%d", uint32(o))
	}
	return table[o].name
}

// Kind says what o changes (0 for a number that names no operation).
func (o Op) Kind() Kind { return o.row().kind }

// Metadata reports whether o changes a file's metadata rather than its
// contents or its names.
func (o Op) Metadata() bool { return o.Kind() == Metadata }

// Unnotified reports whether o writes a file's contents with no event
// of the filesystem witness's (a shared mapping, Linux AIO): the witness
// hears of such a write at the file's last close at best, which may come
// after the run, or from a process outside the tree.
func (o Op) Unnotified() bool { return o.row().unnotified }

// Restorable reports whether o changes the mode, owner or modification
// time of a file, which the kernel notes before the call where it can
// (tracer.Prior): a change set back by the end of the run is then
// transient, not data loss.
func (o Op) Restorable() bool { return o.row().restorable }

// Metric is the value of the metrics' op label for o.
func (o Op) Metric() string { return o.row().metric }

// Paths are what o does to each path it names, in the record's order
// (its path slot, then its second): one, or two with a role each
// (report.RoleOld, report.RoleNew). None for a number that names no
// operation.
func (o Op) Paths() []Path { return o.row().paths }

// Path is o's path of that role; an operation of one path has no other.
// The zero Path when o has none of that role.
func (o Op) Path(role string) Path {
	ps := o.row().paths
	if len(ps) == 1 {
		return ps[0]
	}
	for _, p := range ps {
		if p.Role == role {
			return p
		}
	}
	return Path{}
}

// Opens reports whether o opens the file it names for writing (Opens).
func (o Op) Opens() bool {
	ps := o.row().paths
	return len(ps) == 1 && ps[0].Effect == Opens
}

// LinksFile reports whether o's first path is a file it gives another
// name (Links): a hard link.
func (o Op) LinksFile() bool {
	ps := o.row().paths
	return len(ps) > 0 && ps[0].Effect == Links
}

// Changes are the changes the filesystem witness may see a call of o
// make.
func (o Op) Changes() Change { return o.row().changes }

// Names are the operations' names, in order: Names()[o-1] is o's.
func Names() [Count]string {
	var names [Count]string
	for i, o := range All() {
		names[i] = o.String()
	}
	return names
}

// ByName returns the operation the report names name.
func ByName(name string) (Op, bool) {
	for _, o := range All() {
		if table[o].name == name {
			return o, true
		}
	}
	return 0, false
}

// Syscalls are the syscalls that produce operations of kind k (every
// kind when k is 0), each once, in the table's order.
func Syscalls(k Kind) []string {
	var names []string
	for _, o := range All() {
		if k != 0 && table[o].kind != k {
			continue
		}
		for _, s := range table[o].syscalls {
			if !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
	}
	return names
}
