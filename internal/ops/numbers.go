package ops

import "fmt"

// numbers are the numbers of the syscalls the kernel side names, per
// architecture (GOARCH): those of every operation, and the fork family
// (clone, clone3, fork, vfork), whose entry records the forking
// goroutine's test. bpf/ops.h defines them as NR_<name> for the
// architecture it is built for; a test checks the build architecture's
// against golang.org/x/sys/unix.
var numbers = map[string]map[string]uint32{
	// arch/x86/entry/syscalls/syscall_64.tbl
	"amd64": {
		"open": 2, "clone": 56, "fork": 57, "vfork": 58, "truncate": 76,
		"rename": 82, "mkdir": 83, "rmdir": 84, "creat": 85, "link": 86,
		"unlink": 87, "symlink": 88, "chmod": 90, "fchmod": 91, "chown": 92,
		"fchown": 93, "lchown": 94, "utime": 132, "mknod": 133,
		"setxattr": 188, "lsetxattr": 189, "fsetxattr": 190,
		"removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
		"utimes": 235, "openat": 257, "mkdirat": 258, "mknodat": 259,
		"fchownat": 260, "futimesat": 261, "unlinkat": 263, "renameat": 264,
		"linkat": 265, "symlinkat": 266, "fchmodat": 268, "utimensat": 280,
		"renameat2": 316, "clone3": 435, "openat2": 437, "fchmodat2": 452,
		"setxattrat": 463, "removexattrat": 466,
	},
}

// bpfArch is the macro the BPF compiler defines for each architecture
// (bpf2go's -target): __TARGET_ARCH_<bpfArch>.
var bpfArch = map[string]string{"amd64": "x86", "arm64": "arm64"}

// Numbers returns the numbers of the named syscalls on arch (a GOARCH),
// in the same order.
func Numbers(arch string, syscalls []string) ([]uint32, error) {
	table, ok := numbers[arch]
	if !ok {
		return nil, fmt.Errorf("no syscall numbers for %s", arch)
	}
	nrs := make([]uint32, len(syscalls))
	for i, name := range syscalls {
		nr, ok := table[name]
		if !ok {
			return nil, fmt.Errorf("no number for syscall %s on %s", name, arch)
		}
		nrs[i] = nr
	}
	return nrs, nil
}
