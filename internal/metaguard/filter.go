// Package metaguard refuses metadata changes (chmod, chown, utimes,
// xattrs and inode flags) outside the enforcement grants before they run. Neither
// Landlock nor writewatch's LSM programs can refuse those, so under
// --enforce COMMAND's tree runs under a seccomp filter that hands exactly
// these syscalls to writewatch (seccomp user notification). The calling
// thread waits in the kernel until the Guard answers: carry on, or fail
// with EPERM. Nothing gets through by being early: an unanswered call
// waits, and once writewatch is gone such calls fail (ENOSYS).
//
// The tracer reports each refused call: it never reached sys_enter, and
// sys_exit sees it come back with EPERM (see meta_guard in bpf/).
package metaguard

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
)

// auditArch is the AUDIT_ARCH_ value of each architecture's native
// syscalls (GOARCH), which seccomp_data.arch carries.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

// syscalls are the numbers of arch's syscalls the filter hands to the
// Guard: those that produce the metadata operations (package ops) and
// that arch has, but those named in absent.
func syscalls(arch string, absent []string) ([]uint32, error) {
	var names []string
	for _, name := range ops.Syscalls(ops.Metadata) {
		if !slices.Contains(absent, name) {
			names = append(names, name)
		}
	}
	return ops.Numbers(arch, names)
}

// recent are the metadata syscalls that older kernels writewatch runs on
// lack, each with arguments a kernel that has it refuses without
// changing anything (an invalid flag, no name, no attributes): EINVAL,
// or EFAULT. A kernel without it says ENOSYS.
var recent = map[string][6]uintptr{
	"setxattrat":    {^uintptr(0), 0, ^uintptr(0), 0, 0, 0}, // Linux 6.13
	"removexattrat": {^uintptr(0), 0, ^uintptr(0), 0, 0, 0}, // Linux 6.13
	"file_setattr":  {^uintptr(0), 0, 0, 0, ^uintptr(0), 0}, // Linux 6.17
}

// Absent returns the syscalls of recent this kernel lacks, for Install,
// whose filter leaves them alone: their callers get ENOSYS, as without
// the guard, rather than the guard's EPERM for a call the kernel would
// not run. It makes each of those syscalls: call it in a process
// writewatch does not trace (not in the trampoline), or they are
// reported.
func Absent() []string {
	var names []string
	for name, args := range recent {
		nrs, err := ops.Numbers(runtime.GOARCH, []string{name})
		if err != nil || len(nrs) == 0 {
			continue
		}
		_, _, errno := unix.RawSyscall6(uintptr(nrs[0]), args[0], args[1], args[2], args[3], args[4], args[5])
		if errno == unix.ENOSYS {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Offsets in struct seccomp_data: the syscall number, the architecture,
// and the low 32 bits of the second argument (little-endian), an ioctl's
// command.
const (
	offNr   = 0
	offArch = 4
	offArg1 = 24
)

// program is the classic BPF filter for arch (a GOARCH): its native
// syscalls in syscalls (those of absent left out) go to the listener
// (ioctl only with one of the commands of ops.Ioctls), io_uring_setup
// fails with ENOSYS when noURing, everything else runs. Calls of another ABI
// (x32 and ia32 on x86-64, AArch32 on arm64) are not watched by
// writewatch at all (see docs/limits.md), and run.
func program(arch string, noURing bool, absent []string) ([]unix.SockFilter, error) {
	audit, ok := auditArch[arch]
	if !ok {
		return nil, fmt.Errorf("metadata guard: no seccomp filter for %s", arch)
	}
	nrs, err := syscalls(arch, absent)
	if err != nil {
		return nil, fmt.Errorf("metadata guard: %w", err)
	}
	ioctl, err := ops.Numbers(arch, []string{"ioctl"})
	if err != nil {
		return nil, fmt.Errorf("metadata guard: %w", err)
	}
	uring, err := ops.Numbers(arch, []string{"io_uring_setup"})
	if err != nil {
		return nil, fmt.Errorf("metadata guard: %w", err)
	}
	cmds := ops.Ioctls()
	n, k, u := len(nrs), len(cmds), 0
	if noURing {
		u = 2
	}
	// Layout: 0 load arch, 1 check it, 2 load nr, 3..3+n-1 compare
	// (ioctl's jumps to its commands), when noURing 3+n compare with
	// io_uring_setup and 4+n fail; 3+n+u allow; 4+n+u load the command,
	// 5+n+u..5+n+u+k-1 compare, 5+n+u+k allow; 6+n+u+k notify. Jumps go
	// forward only.
	allow, cmd, notify := 3+n+u, 4+n+u, 6+n+u+k
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArch},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: audit, Jt: 0, Jf: uint8(allow - 2)},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offNr},
	}
	for i, nr := range nrs {
		at, to := 3+i, notify
		if nr == ioctl[0] {
			to = cmd
		}
		prog = append(prog, unix.SockFilter{
			Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: nr, Jt: uint8(to - at - 1),
		})
	}
	if noURing {
		prog = append(prog,
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: uring[0], Jt: 0, Jf: 1},
			unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		)
	}
	prog = append(prog,
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArg1},
	)
	for i, c := range cmds {
		at := cmd + 1 + i
		prog = append(prog, unix.SockFilter{
			Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: c, Jt: uint8(notify - at - 1),
		})
	}
	return append(prog,
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
	), nil
}

// Install puts the calling thread under the filter, which leaves the
// syscalls in absent (Absent's) alone, and returns the listener, for a
// Guard. The caller must be locked to its OS thread; what
// the thread execs, and everything that forks from it, inherit the
// filter. Without CAP_SYS_ADMIN it sets no_new_privs first, as the kernel
// requires.
func Install(noURing bool, absent []string) (*os.File, error) {
	prog, err := program(runtime.GOARCH, noURing, absent)
	if err != nil {
		return nil, err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	install := func(flags uintptr) (uintptr, unix.Errno) {
		fd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
			flags, uintptr(unsafe.Pointer(&fprog)))
		return fd, errno
	}
	// WAIT_KILLABLE_RECV (Linux 5.19): once the Guard has read a call,
	// signals such as the Go runtime's preemption no longer restart it.
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	fd, errno := install(flags)
	if errno == unix.EINVAL {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
		fd, errno = install(flags)
	}
	if errno == unix.EACCES {
		if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
			return nil, fmt.Errorf("metadata guard: prctl(PR_SET_NO_NEW_PRIVS): %w", e)
		}
		fd, errno = install(flags)
	}
	if errno != 0 {
		return nil, fmt.Errorf("metadata guard: install seccomp filter: %w", errno)
	}
	return os.NewFile(fd, "seccomp-listener"), nil
}

// ErrUnsupported means the kernel cannot hand syscalls to a supervisor.
var ErrUnsupported = errors.New("seccomp user notification is not available")

// Supported reports whether this kernel has seccomp user notification
// with the "carry on" answer (Linux 5.5).
func Supported() error {
	var sizes [3]uint16
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&sizes)))
	if errno != 0 {
		return fmt.Errorf("%w: %w", ErrUnsupported, errno)
	}
	// The kernel copies its own sizes: ours must hold them.
	if sizes[0] > uint16(unsafe.Sizeof(notif{})) || sizes[1] > uint16(unsafe.Sizeof(notifResp{})) {
		return fmt.Errorf("%w: unexpected sizes %v", ErrUnsupported, sizes)
	}
	return nil
}
