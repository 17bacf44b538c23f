package ops

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The x86-64 numbers are those of golang.org/x/sys/unix.
func TestNumbersAMD64(t *testing.T) {
	want := map[string]uint32{
		"open": unix.SYS_OPEN, "openat": unix.SYS_OPENAT, "openat2": unix.SYS_OPENAT2,
		"creat": unix.SYS_CREAT, "truncate": unix.SYS_TRUNCATE,
		"rename": unix.SYS_RENAME, "renameat": unix.SYS_RENAMEAT, "renameat2": unix.SYS_RENAMEAT2,
		"unlink": unix.SYS_UNLINK, "unlinkat": unix.SYS_UNLINKAT, "rmdir": unix.SYS_RMDIR,
		"mkdir": unix.SYS_MKDIR, "mkdirat": unix.SYS_MKDIRAT, "link": unix.SYS_LINK,
		"linkat": unix.SYS_LINKAT, "symlink": unix.SYS_SYMLINK, "symlinkat": unix.SYS_SYMLINKAT,
		"mknod": unix.SYS_MKNOD, "mknodat": unix.SYS_MKNODAT,
		"chmod": unix.SYS_CHMOD, "fchmod": unix.SYS_FCHMOD, "fchmodat": unix.SYS_FCHMODAT,
		"fchmodat2": unix.SYS_FCHMODAT2, "chown": unix.SYS_CHOWN, "lchown": unix.SYS_LCHOWN,
		"fchown": unix.SYS_FCHOWN, "fchownat": unix.SYS_FCHOWNAT, "utime": unix.SYS_UTIME,
		"utimes": unix.SYS_UTIMES, "futimesat": unix.SYS_FUTIMESAT, "utimensat": unix.SYS_UTIMENSAT,
		"setxattr": unix.SYS_SETXATTR, "lsetxattr": unix.SYS_LSETXATTR, "fsetxattr": unix.SYS_FSETXATTR,
		"setxattrat": unix.SYS_SETXATTRAT, "removexattr": unix.SYS_REMOVEXATTR,
		"lremovexattr": unix.SYS_LREMOVEXATTR, "fremovexattr": unix.SYS_FREMOVEXATTR,
		"removexattrat": unix.SYS_REMOVEXATTRAT, "ioctl": unix.SYS_IOCTL,
		"file_setattr":   unix.SYS_FILE_SETATTR,
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER,
		"ptrace": unix.SYS_PTRACE,
		"mmap":   unix.SYS_MMAP, "io_submit": unix.SYS_IO_SUBMIT, "fanotify_init": unix.SYS_FANOTIFY_INIT,
		"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
		"socket":            unix.SYS_SOCKET, "socketpair": unix.SYS_SOCKETPAIR, "pidfd_getfd": unix.SYS_PIDFD_GETFD, "seccomp": unix.SYS_SECCOMP,
		"unshare": unix.SYS_UNSHARE, "setns": unix.SYS_SETNS,
		"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "move_mount": unix.SYS_MOVE_MOUNT, "open_tree": unix.SYS_OPEN_TREE,
		"open_tree_attr": unix.SYS_OPEN_TREE_ATTR, "fsmount": unix.SYS_FSMOUNT, "mount_setattr": unix.SYS_MOUNT_SETATTR,
		"pivot_root": unix.SYS_PIVOT_ROOT, "chroot": unix.SYS_CHROOT, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
		"acct": unix.SYS_ACCT,
		// The fork family.
		"clone": unix.SYS_CLONE, "clone3": unix.SYS_CLONE3, "fork": unix.SYS_FORK, "vfork": unix.SYS_VFORK,
	}
	got := numbers["amd64"]
	for name, nr := range want {
		if got[name] != nr {
			t.Errorf("%s: %d, golang.org/x/sys/unix says %d", name, got[name], nr)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: not checked against golang.org/x/sys/unix; add it here", name)
		}
	}
}

// The ioctl commands are those of golang.org/x/sys/unix, or (which it
// lacks) computed as the kernel's _IOW does.
func TestIoctls(t *testing.T) {
	iow := func(typ byte, nr, size uint32) uint32 { return 1<<30 | size<<16 | uint32(typ)<<8 | nr }
	want := map[string]uint32{
		"FS_IOC_SETFLAGS":   unix.FS_IOC_SETFLAGS,
		"FS_IOC_FSSETXATTR": iow('X', 32, 28), // struct fsxattr: 28 bytes
		// long: 8 bytes.
		"FS_IOC_SETVERSION":   iow('v', 2, 8),
		"EXT4_IOC_SETVERSION": iow('f', 4, 8),
	}
	for _, c := range ioctls {
		if want[c.name] != c.cmd {
			t.Errorf("%s: %#x, want %#x", c.name, c.cmd, want[c.name])
		}
	}
	if len(ioctls) != len(want) {
		t.Errorf("%d ioctls, %d checked", len(ioctls), len(want))
	}
}
