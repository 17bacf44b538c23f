package launch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// writewatch needs CAP_BPF and CAP_PERFMON to load and attach its
// programs; root has them, or a normal user runs a copy given them with
// `setcap cap_bpf,cap_perfmon+ep`. They are writewatch's alone: COMMAND
// runs with no capability at all (see startWithoutCapabilities).

// CacheKernelVersion lets cilium/ebpf read the running kernel's version
// once, where it otherwise could not: a program started with file
// capabilities.
//
// cilium/ebpf reads LINUX_VERSION_CODE from the vDSO, through
// /proc/self/mem, when it loads a kprobe-type program (uprobes are that
// type too), including the probes of its own feature tests; it keeps the
// answer for the life of the process. There is no option to give it the
// version instead. But the kernel marks a process that gained
// capabilities at exec as not dumpable, and /proc/PID/* of such a
// process belongs to root: the user writewatch runs as may not open its
// own /proc/self/mem, and every load fails.
//
// So the process is made dumpable for the one read, then put back.
// That is safe even for the moment it lasts: "dumpable" decides who owns
// /proc/PID/* and whether a core dump is written, while every way into
// another process (ptrace, /proc/PID/mem, environ and fd, process_vm_readv,
// pidfd_getfd, perf_event_open) is also checked by the capability LSM,
// which refuses a tracer whose capabilities are not a superset of ours
// (cap_ptrace_access_check) unless it holds CAP_SYS_PTRACE. The user's
// other processes hold no CAP_BPF or CAP_PERFMON, so they cannot borrow
// ours. Nothing in writewatch's memory is more secret than what it
// traces, the user's own processes. Putting it back keeps the kernel's
// default for everything else.
//
// A process that is dumpable already (root, or capabilities from the
// ambient set) is not touched. Errors are left for the first program
// load to report, with its context: cilium/ebpf keeps them too.
func CacheKernelVersion() {
	dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil || dumpable == 1 {
		features.LinuxVersionCode()
		return
	}
	if unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) != nil {
		features.LinuxVersionCode()
		return
	}
	features.LinuxVersionCode()
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// startWithoutCapabilities starts cmd from a thread whose inheritable
// and ambient capability sets are empty, so that the process it execs
// gets no capability from writewatch, and whose bounding set lacks
// CAP_SYS_PTRACE (see unreachable).
//
// Across exec the kernel keeps the inheritable set, and the ambient set
// (a subset of it) becomes the new program's permitted and effective
// sets; a writewatch given CAP_BPF and CAP_PERFMON as ambient
// capabilities would pass them to COMMAND. The permitted and effective
// sets writewatch keeps for itself: a program file without capabilities
// gets none of them (and root's are cleared when COMMAND's user is set).
//
// Capabilities belong to a thread, and a child gets those of the thread
// that forks it. So a goroutine locks a thread, empties the sets there
// and forks; the thread is never unlocked and ends with the goroutine,
// leaving the runtime's other threads as they were. With thread, the
// fork runs on the thread it gives (a sandbox's, locked already).
func startWithoutCapabilities(cmd *exec.Cmd, thread func(func())) error {
	errc := make(chan error, 1)
	start := func() {
		if err := dropInheritable(); err != nil {
			errc <- err
			return
		}
		if err := unreachable(); err != nil {
			errc <- err
			return
		}
		errc <- cmd.Start()
	}
	if thread != nil {
		thread(start)
		return <-errc
	}
	go func() {
		runtime.LockOSThread()
		start()
	}()
	return <-errc
}

// dropInheritable empties the calling thread's ambient and inheritable
// capability sets.
func dropInheritable() error {
	// EINVAL: a kernel without ambient capabilities (before 4.3).
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	if data[0].Inheritable == 0 && data[1].Inheritable == 0 {
		return nil
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear inheritable capabilities: %w", err)
	}
	return nil
}

// unreachable keeps COMMAND's tree from taking writewatch over: a
// process that attaches to writewatch with ptrace, or writes into its
// memory (/proc/PID/mem, process_vm_writev), can make it exit with 0
// before it reports, or report nothing. The kernel allows either to a
// process of the same user when writewatch is dumpable, and to one
// that holds CAP_SYS_PTRACE in any case: so writewatch makes itself not
// dumpable, and COMMAND starts without CAP_SYS_PTRACE in its bounding
// set, so that no exec in its tree (root's, a set-user-ID program's,
// file capabilities) gives it back. Under sudo COMMAND runs as the
// invoking user, who could not reach root's writewatch anyway; this is
// for COMMAND run as root (writewatch without sudo, --as-root).
//
// Not dumpable, writewatch's /proc/PID/* (but for what ps reads) is
// root's, and it writes no core dump. Without CAP_SYS_PTRACE, COMMAND
// still traces its own processes (of its user and dumpable), as
// Docker's default capabilities allow; it cannot trace or read the
// memory, environment and descriptors of other users' processes, nor
// of processes that are not dumpable. The bounding set belongs to the
// thread that starts COMMAND, which ends with it; dropping from it
// needs CAP_SETPCAP, which a writewatch given only CAP_BPF and
// CAP_PERFMON lacks (EPERM): its COMMAND has no capability to drop.
func unreachable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make writewatch not dumpable: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("drop CAP_SYS_PTRACE from COMMAND's bounding set: %w", err)
	}
	return nil
}

// The capabilities tracing needs.
var traceCaps = []struct {
	bit  uint
	name string
}{{unix.CAP_BPF, "cap_bpf"}, {unix.CAP_PERFMON, "cap_perfmon"}}

// Privileges is what this process holds for tracing, and how it got it.
type Privileges struct {
	UID  int
	Root bool // effective uid 0
	// Missing lists the capabilities tracing needs that the effective
	// set lacks, as setcap names them ("cap_bpf").
	Missing []string
	// Executable is this program's file; FileCaps says it carries
	// CAP_BPF and CAP_PERFMON, permitted and effective (setcap +ep).
	Executable string
	FileCaps   bool
	// NoNewPrivs is set: exec ignored the file's capabilities.
	NoNewPrivs bool
}

// CurrentPrivileges reads this process's privileges.
func CurrentPrivileges() Privileges {
	p := Privileges{UID: os.Getuid(), Root: os.Geteuid() == 0}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err == nil {
		for _, c := range traceCaps {
			if data[c.bit/32].Effective&(1<<(c.bit%32)) == 0 {
				p.Missing = append(p.Missing, c.name)
			}
		}
	}
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err == nil {
		p.NoNewPrivs = nnp == 1
	}
	if exe, err := os.Executable(); err == nil {
		p.Executable = exe
		p.FileCaps = fileHasTraceCaps(exe)
	}
	return p
}

// fileHasTraceCaps reports whether path's security.capability attribute
// grants CAP_BPF and CAP_PERFMON, permitted and effective.
func fileHasTraceCaps(path string) bool {
	buf := make([]byte, 64)
	n, err := unix.Getxattr(path, "security.capability", buf)
	if err != nil || n < 12 {
		return false
	}
	// struct vfs_cap_data (linux/capability.h): magic_etc, then
	// {permitted, inheritable} pairs of 32-bit words, little endian; one
	// pair in revision 1, two since.
	const (
		revisionMask  = 0xff000000
		revision1     = 0x01000000
		flagEffective = 0x000001
	)
	magic := binary.LittleEndian.Uint32(buf)
	if magic&flagEffective == 0 {
		return false
	}
	words := 2
	if magic&revisionMask == revision1 {
		words = 1
	}
	for _, c := range traceCaps {
		w := int(c.bit / 32)
		if w >= words || 4+8*w+4 > n {
			return false
		}
		if binary.LittleEndian.Uint32(buf[4+8*w:])&(1<<(c.bit%32)) == 0 {
			return false
		}
	}
	return true
}

// CanTryTracing reports whether this process holds what tracing needs.
func (p Privileges) CanTryTracing() bool { return p.Root || len(p.Missing) == 0 }

// Problem says why this process cannot trace and what to do about it,
// both "" when nothing is missing.
func (p Privileges) Problem() (why, todo string) {
	if p.CanTryTracing() {
		return "", ""
	}
	exe := p.Executable
	if exe == "" {
		exe = "$(command -v writewatch)"
	}
	switch {
	case p.FileCaps && p.NoNewPrivs:
		return "no_new_privs is set, so exec ignored the capabilities set on " + exe,
			"run writewatch from a process without no_new_privs, or with sudo"
	case p.FileCaps:
		return "the capabilities set on " + exe + " were not applied (is its file system mounted nosuid?)",
			"copy it to a file system without nosuid, e.g. /usr/local/bin, and setcap the copy; or run it with sudo"
	}
	why = "loading BPF programs needs root, or CAP_BPF and CAP_PERFMON"
	if len(p.Missing) == 1 {
		why += " (" + strings.ToUpper(p.Missing[0]) + " is missing)"
	}
	return why, "run it with sudo, or once: sudo setcap cap_bpf,cap_perfmon+ep " + exe
}

// Advice is Problem in one line, or "" when nothing is missing.
func (p Privileges) Advice() string {
	why, todo := p.Problem()
	if why == "" {
		return ""
	}
	return why + "; " + todo
}
