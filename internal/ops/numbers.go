package ops

import "fmt"

// numbers are the numbers of the syscalls the kernel side names, per
// architecture (GOARCH): those of every operation, the fork family
// (clone, clone3, fork, vfork), whose entry records the forking
// goroutine's test, io_uring_setup, which the metadata guard may
// refuse and which, with io_uring_enter, the kernel side watches while
// its io_uring program is not attached yet (lib/contents.h), ptrace and process_vm_writev, through which a process of the
// tree can take control of one outside it (lib/proc.h), and
// fanotify_init, whose writable event descriptors the kernel side
// counts, and the calls after which the tree may hold a file from outside
// it or reach a file through a namespace of its own (socket, socketpair,
// pidfd_getfd, seccomp, unshare, setns), and those with which a
// privileged process changes where paths lead or gets a file by no path
// (mount, umount2, move_mount, open_tree, open_tree_attr, fsmount, mount_setattr,
// pivot_root, chroot, open_by_handle_at) or makes the kernel write one
// (acct): lib/contents.h. bpf/ops.h
// defines them as NR_<name> for the architecture it is built for; a test
// checks the build architecture's against
// golang.org/x/sys/unix.
//
// A syscall may be absent on an architecture: arm64, like every newer
// one, has only the *at forms (no open, creat, rename, chmod, fork and
// the like). Programs there make the *at calls, which the table names
// too.
var numbers = map[string]map[string]uint32{
	// arch/x86/entry/syscalls/syscall_64.tbl
	"amd64": {
		"open": 2, "ioctl": 16, "clone": 56, "fork": 57, "vfork": 58, "truncate": 76,
		"rename": 82, "mkdir": 83, "rmdir": 84, "creat": 85, "link": 86,
		"unlink": 87, "symlink": 88, "chmod": 90, "fchmod": 91, "chown": 92,
		"fchown": 93, "lchown": 94, "utime": 132, "mknod": 133,
		"setxattr": 188, "lsetxattr": 189, "fsetxattr": 190,
		"removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
		"utimes": 235, "openat": 257, "mkdirat": 258, "mknodat": 259,
		"fchownat": 260, "futimesat": 261, "unlinkat": 263, "renameat": 264,
		"linkat": 265, "symlinkat": 266, "fchmodat": 268, "utimensat": 280,
		"renameat2": 316, "clone3": 435, "openat2": 437, "fchmodat2": 452,
		"setxattrat": 463, "removexattrat": 466, "file_setattr": 469,
		"io_uring_setup": 425, "io_uring_enter": 426, "ptrace": 101, "mmap": 9, "io_submit": 209, "fanotify_init": 300,
		"process_vm_writev": 311,
		"socket":            41, "socketpair": 53, "pidfd_getfd": 438, "seccomp": 317, "unshare": 272, "setns": 308,
		"mount": 165, "umount2": 166, "move_mount": 429, "open_tree": 428, "open_tree_attr": 467, "fsmount": 432, "mount_setattr": 442,
		"pivot_root": 155, "chroot": 161, "open_by_handle_at": 304, "acct": 163,
	},
	// include/uapi/asm-generic/unistd.h
	"arm64": {
		"setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14,
		"lremovexattr": 15, "fremovexattr": 16, "ioctl": 29, "mknodat": 33, "mkdirat": 34,
		"unlinkat": 35, "symlinkat": 36, "linkat": 37, "renameat": 38,
		"truncate": 45, "fchmod": 52, "fchmodat": 53, "fchownat": 54,
		"fchown": 55, "openat": 56, "utimensat": 88, "clone": 220,
		"renameat2": 276, "clone3": 435, "openat2": 437, "fchmodat2": 452,
		"setxattrat": 463, "removexattrat": 466, "file_setattr": 469,
		"io_uring_setup": 425, "io_uring_enter": 426, "ptrace": 117, "mmap": 222, "io_submit": 2, "fanotify_init": 262,
		"process_vm_writev": 271,
		"socket":            198, "socketpair": 199, "pidfd_getfd": 438, "seccomp": 277, "unshare": 97, "setns": 268,
		"mount": 40, "umount2": 39, "move_mount": 429, "open_tree": 428, "open_tree_attr": 467, "fsmount": 432, "mount_setattr": 442,
		"pivot_root": 41, "chroot": 51, "open_by_handle_at": 265, "acct": 89,
	},
}

// bpfArch is the macro the BPF compiler defines for each architecture
// (bpf2go's -target): __TARGET_ARCH_<bpfArch>.
var bpfArch = map[string]string{"amd64": "x86", "arm64": "arm64"}

// Supported reports whether writewatch knows the syscalls of arch (a
// GOARCH).
func Supported(arch string) bool {
	_, ok := numbers[arch]
	return ok
}

// Numbers returns the numbers of those of the named syscalls that arch
// (a GOARCH) has, in the same order. A name no architecture knows is an
// error.
func Numbers(arch string, syscalls []string) ([]uint32, error) {
	table, ok := numbers[arch]
	if !ok {
		return nil, fmt.Errorf("no syscall numbers for %s", arch)
	}
	var nrs []uint32
	for _, name := range syscalls {
		nr, ok := table[name]
		if !ok {
			if !known(name) {
				return nil, fmt.Errorf("no number for syscall %s on any architecture", name)
			}
			continue
		}
		nrs = append(nrs, nr)
	}
	return nrs, nil
}

// Name returns the name of syscall nr on arch, or "" when the table does
// not name it.
func Name(arch string, nr uint32) string {
	for name, n := range numbers[arch] {
		if n == nr {
			return name
		}
	}
	return ""
}

// known reports whether some architecture has the syscall name.
func known(name string) bool {
	for _, table := range numbers {
		if _, ok := table[name]; ok {
			return true
		}
	}
	return false
}
