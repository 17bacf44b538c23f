package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// edgeOps are the operations of the edge-case suite.
var edgeOps = map[string]func(a []string) error{
	"read-flood": readFlood,
	"mmap-gc":    mmapGC,
	"held-link":  heldLink,
	"swap-after": swapAfter,
	"gone-after": goneAfter,
	"fchdir": func(a []string) error {
		fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fchdir(fd)
	},
	"tmpfile-link": tmpfileLink,
	"rename-exchange": func(a []string) error {
		return unix.Renameat2(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], unix.RENAME_EXCHANGE)
	},
	"rename-noreplace": func(a []string) error {
		return unix.Renameat2(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], unix.RENAME_NOREPLACE)
	},
	"openat2":       openat2,
	"openat2-root":  openat2InRoot,
	"proc-fd-write": procFDWrite,
	"dirfd-rename":  dirfdRename,
	"threads":       threads,
	"repeat":        repeat,
	"chmod":         func(a []string) error { return unix.Chmod(a[0], 0o600) },
	"fchmod": func(a []string) error {
		fd, err := unix.Open(a[0], unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fchmod(fd, 0o640)
	},
	"chown": func(a []string) error { return unix.Lchown(a[0], os.Getuid(), os.Getgid()) },
	// fchownat on a descriptor opened with O_PATH, by an empty name and
	// AT_EMPTY_PATH.
	"chown-fd": func(a []string) error {
		fd, err := unix.Open(a[0], unix.O_PATH, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fchownat(fd, "", os.Getuid(), os.Getgid(), unix.AT_EMPTY_PATH)
	},
	"utimes":          func(a []string) error { return unix.UtimesNano(a[0], []unix.Timespec{{Sec: 1}, {Sec: 1}}) },
	"setxattr":        func(a []string) error { return unix.Setxattr(a[0], "user.writewatch", []byte("1"), 0) },
	"memfd":           notFiles,
	"uring-openat":    func(a []string) error { return uringOp(ioringOpOpenat, a[0]) }, // create PATH through io_uring
	"uring-mkdirat":   func(a []string) error { return uringOp(ioringOpMkdirat, a[0]) },
	"ptrace-attach":   ptraceAttach,
	"vm-writev":       vmWritev,
	"write-unfaulted": func(a []string) error { return unfaulted(a[0], openUnfaulted) },
	"mkdir-unfaulted": func(a []string) error { return unfaulted(a[0], mkdirUnfaulted) },
}

// ptraceAttach PID: become PID's tracer (PTRACE_ATTACH), wait for it to
// stop, and let it go: a tracer could have made it write. The stop
// waited for is the attach's SIGSTOP: a child just forked may stop first
// for its exec (SIGTRAP), and detaching then would leave the SIGSTOP to
// stop it for good, untraced, holding its parent's pipes.
func ptraceAttach(a []string) error {
	pid, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.PtraceAttach(pid); err != nil {
		return err
	}
	for {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil {
			return err
		}
		switch {
		case ws.Exited() || ws.Signaled():
			return nil
		case ws.Stopped() && ws.StopSignal() == unix.SIGSTOP:
			return unix.PtraceDetach(pid)
		case ws.Stopped() && ws.StopSignal() != unix.SIGTRAP:
			// Another signal came first: deliver it, and wait on.
			if err := unix.PtraceCont(pid, int(ws.StopSignal())); err != nil {
				return err
			}
		default:
			if err := unix.PtraceCont(pid, 0); err != nil {
				return err
			}
		}
	}
}

// vmWritev PID: write into PID's memory (process_vm_writev) the 8 bytes
// it already holds at the start of its first writable mapping, read
// first: it is left as it was, but a writer could have put anything there.
// A target that execs meanwhile (a child just forked) replaces its
// mappings: the address is looked up again, for up to a second.
func vmWritev(a []string) error {
	pid, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		err := vmWritevOnce(pid)
		if !errors.Is(err, unix.EFAULT) || try == 200 {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func vmWritevOnce(pid int) error {
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return err
	}
	var addr uintptr
	for _, line := range strings.Split(string(maps), "\n") {
		// 7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[1], "rw") {
			continue
		}
		start, _, _ := strings.Cut(f[0], "-")
		n, err := strconv.ParseUint(start, 16, 64)
		if err != nil {
			return err
		}
		addr = uintptr(n)
		break
	}
	if addr == 0 {
		return fmt.Errorf("no writable mapping in /proc/%d/maps", pid)
	}
	buf := make([]byte, 8)
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: addr, Len: len(buf)}}
	if _, err := unix.ProcessVMReadv(pid, local, remote, 0); err != nil {
		return fmt.Errorf("process_vm_readv: %w", err)
	}
	n, err := unix.ProcessVMWritev(pid, local, remote, 0)
	if err != nil {
		return fmt.Errorf("process_vm_writev: %w", err)
	}
	if n != len(buf) {
		return fmt.Errorf("process_vm_writev wrote %d bytes, want %d", n, len(buf))
	}
	return nil
}

// tmpfileLink DIR NEWPATH: O_TMPFILE in DIR, then give it a name.
func tmpfileLink(a []string) error {
	fd, err := unix.Open(a[0], unix.O_TMPFILE|unix.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	unix.Write(fd, []byte("tmp\n"))
	return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, a[1], unix.AT_SYMLINK_FOLLOW)
}

// openat2 PATH: O_WRONLY|O_CREAT with RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS.
func openat2(a []string) error {
	fd, err := unix.Openat2(unix.AT_FDCWD, a[0], &unix.OpenHow{
		Flags: unix.O_WRONLY | unix.O_CREAT, Mode: 0o644,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// openat2InRoot DIR PATH: create PATH with openat2 and RESOLVE_IN_ROOT
// from a descriptor of DIR, which is "/" for it.
func openat2InRoot(a []string) error {
	dfd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat2(dfd, a[1], &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT, Mode: 0o644, Resolve: unix.RESOLVE_IN_ROOT})
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// procFDWrite PATH: open PATH read-only, reopen it for writing via
// /proc/self/fd.
func procFDWrite(a []string) error {
	fd, err := unix.Open(a[0], unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return openWrite(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_WRONLY|unix.O_APPEND)
}

// dirfdRename DIR NEWDIR NAME: hold DIR open, rename it, create NAME in it.
func dirfdRename(a []string) error {
	dfd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := unix.Rename(a[0], a[1]); err != nil {
		return err
	}
	fd, err := unix.Openat(dfd, a[2], unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// threads N DIR: N threads each create DIR/tN.txt at once.
func threads(a []string) error {
	n, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			<-start
			errs[i] = openWrite(filepath.Join(a[1], fmt.Sprintf("t%d.txt", i)), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC)
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// repeat N PATH: N write-only opens of an existing PATH.
func repeat(a []string) error {
	n, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	for range n {
		fd, err := unix.Open(a[1], unix.O_WRONLY, 0)
		if err != nil {
			return err
		}
		unix.Close(fd)
	}
	return nil
}

// notFiles writes a memfd, a pipe and a socket: no files.
func notFiles([]string) error {
	fd, err := unix.MemfdCreate("writewatch", 0)
	if err != nil {
		return err
	}
	unix.Write(fd, []byte("x"))
	if err := openWrite(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_WRONLY); err != nil {
		return err
	}
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return err
	}
	if err := openWrite(fmt.Sprintf("/proc/self/fd/%d", p[1]), unix.O_WRONLY); err != nil {
		return err
	}
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	return unix.Close(s)
}

const (
	ioringOpOpenat  = 18
	ioringOpMkdirat = 37
)

type sqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, Resv1 uint32
	UserAddr                                                        uint64
}

type cqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, Cqes, Flags, Resv1 uint32
	UserAddr                                                        uint64
}

type uringParams struct {
	SqEntries, CqEntries, Flags, SqThreadCPU, SqThreadIdle, Features, WqFd uint32
	Resv                                                                   [3]uint32
	SqOff                                                                  sqringOffsets
	CqOff                                                                  cqringOffsets
}

// uringOp submits one io_uring request on path (relative to the working
// directory) and waits for its completion: no open or mkdir syscall.
func uringOp(opcode uint8, path string) error {
	var p uringParams
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return fmt.Errorf("io_uring_setup: %w", errno)
	}
	defer unix.Close(int(fd))
	ringSize := int(p.SqOff.Array + p.SqEntries*4)
	if cq := int(p.CqOff.Cqes + p.CqEntries*16); cq > ringSize {
		ringSize = cq
	}
	ring, err := unix.Mmap(int(fd), 0, ringSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap ring: %w", err)
	}
	defer unix.Munmap(ring)
	sqes, err := unix.Mmap(int(fd), 0x10000000, int(p.SqEntries*64), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sqes: %w", err)
	}
	defer unix.Munmap(sqes)

	name, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	sqe := sqes[:64]
	clear(sqe)
	sqe[0] = opcode
	dfd := int32(unix.AT_FDCWD)
	*(*int32)(unsafe.Pointer(&sqe[4])) = dfd
	*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(name)))
	*(*uint32)(unsafe.Pointer(&sqe[24])) = 0o644
	if opcode == ioringOpOpenat {
		*(*uint32)(unsafe.Pointer(&sqe[28])) = unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
	}
	tail := (*uint32)(unsafe.Pointer(&ring[p.SqOff.Tail]))
	mask := *(*uint32)(unsafe.Pointer(&ring[p.SqOff.RingMask]))
	*(*uint32)(unsafe.Pointer(&ring[p.SqOff.Array+(*tail&mask)*4])) = 0
	*tail = *tail + 1
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, fd, 1, 1, 1 /* GETEVENTS */, 0, 0); errno != 0 {
		return fmt.Errorf("io_uring_enter: %w", errno)
	}
	runtime.KeepAlive(name)
	head := *(*uint32)(unsafe.Pointer(&ring[p.CqOff.Head]))
	cqMask := *(*uint32)(unsafe.Pointer(&ring[p.CqOff.RingMask]))
	res := *(*int32)(unsafe.Pointer(&ring[p.CqOff.Cqes+(head&cqMask)*16+8]))
	if res < 0 {
		return fmt.Errorf("io_uring request: %w", unix.Errno(-res))
	}
	if opcode == ioringOpOpenat {
		unix.Close(int(res))
	}
	return nil
}

// unfaulted runs call with PATH as a NUL-terminated string in a page
// the process has mapped but never touched (a fresh private mapping of
// a memfd), as a string of a program that just started is: the kernel's
// tracepoint cannot read it at the call's entry, the call itself faults
// it in.
func unfaulted(path string, call func(name uintptr) error) error {
	fd, err := unix.MemfdCreate("wwop-path", 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, append([]byte(path), 0)); err != nil {
		return err
	}
	mem, err := unix.Mmap(fd, 0, os.Getpagesize(), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer unix.Munmap(mem)
	if err := call(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// openUnfaulted: open the name for writing (O_WRONLY|O_CREAT).
func openUnfaulted(name uintptr) error {
	cwd := unix.AT_FDCWD
	r, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(cwd), name,
		uintptr(unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC), 0o644, 0, 0)
	if errno != 0 {
		return errno
	}
	return unix.Close(int(r))
}

// mkdirUnfaulted: make the directory of the name.
func mkdirUnfaulted(name uintptr) error {
	cwd := unix.AT_FDCWD
	if _, _, errno := unix.Syscall(unix.SYS_MKDIRAT, uintptr(cwd), name, 0o755); errno != 0 {
		return errno
	}
	return nil
}

// readFlood DIR N STOPDIR writes N files with long names in DIR, in
// batches its reader keeps up with, then has its parent (writewatch)
// stopped through STOPDIR (the integration tests' stopper: its pid in
// STOPDIR/stop, then STOPDIR/stopped), reads each file once, lets its
// parent go on (STOPDIR/cont) and gives it a second to drain the ring
// buffer before exiting: the reads' records overflow a small ring, no
// other record does.
func readFlood(a []string) error {
	n, err := strconv.Atoi(a[1])
	if err != nil {
		return err
	}
	name := func(i int) string { return filepath.Join(a[0], fmt.Sprintf("%s%05d", strings.Repeat("f", 200), i)) }
	for i := range n {
		if err := openWrite(name(i), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC); err != nil {
			return err
		}
		if i%100 == 99 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(a[2], "stop"), fmt.Appendf(nil, "%d\n", os.Getppid()), 0o644); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(a[2], "stopped")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("read-flood: the parent was not stopped")
		}
	}
	for i := range n {
		fd, err := unix.Open(name(i), unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		unix.Close(fd)
	}
	if err := os.WriteFile(filepath.Join(a[2], "cont"), nil, 0o644); err != nil {
		return err
	}
	time.Sleep(time.Second)
	return nil
}

// mmapGC PATH writes the start of PATH through a shared mapping, then
// leaves its last descriptor in a cycle of Unix sockets nothing else
// refers to, and makes the kernel collect it: the file's last close, the
// one that tells the filesystem witness it was written, is made by the
// kernel's worker, outside the tree.
func mmapGC(a []string) error {
	fd, err := unix.Open(a[0], unix.O_RDWR, 0)
	if err != nil {
		return err
	}
	m, err := unix.Mmap(fd, 0, 4, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	copy(m, "MMAP")
	if err := unix.Munmap(m); err != nil {
		return err
	}
	pass := func(via, fd int) error { return unix.Sendmsg(via, []byte{'x'}, unix.UnixRights(fd), nil, 0) }
	cycle := func(fds ...int) error {
		sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		for _, fd := range fds {
			if err := pass(sp[0], fd); err != nil {
				return err
			}
		}
		if err := errors.Join(pass(sp[0], sp[1]), pass(sp[1], sp[0])); err != nil {
			return err
		}
		return errors.Join(unix.Close(sp[0]), unix.Close(sp[1]))
	}
	if err := cycle(fd); err != nil {
		return err
	}
	if err := unix.Close(fd); err != nil {
		return err
	}
	// Another cycle, closed: the kernel collects garbage then.
	if err := cycle(); err != nil {
		return err
	}
	time.Sleep(time.Second)
	return nil
}

// heldLink FILE NEW fd|proc opens FILE read-only and links it as NEW
// through the descriptor (fd: "" with AT_EMPTY_PATH; proc:
// /proc/self/fd/N with AT_SYMLINK_FOLLOW), closes it, writes FILE
// through NEW and removes NEW: the descriptor and the new name are gone
// before writewatch reads the record.
func heldLink(a []string) error {
	fd, err := unix.Open(a[0], unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	if a[2] == "proc" {
		err = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, a[1], unix.AT_SYMLINK_FOLLOW)
	} else {
		err = unix.Linkat(fd, "", unix.AT_FDCWD, a[1], unix.AT_EMPTY_PATH)
	}
	if err != nil {
		return err
	}
	if err := unix.Close(fd); err != nil {
		return err
	}
	if err := openWrite(a[1], unix.O_WRONLY|unix.O_TRUNC); err != nil {
		return err
	}
	return unix.Unlink(a[1])
}

// swapAfter CALL DIR TARGET makes DIR/t and a symlink DIR/l to TARGET,
// makes CALL through DIR/l (callThrough), and at once replaces DIR/l
// with a symlink to t.
func swapAfter(a []string) error {
	dir, l := a[1], filepath.Join(a[1], "l")
	if err := openWrite(filepath.Join(dir, "t"), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC); err != nil {
		return err
	}
	if err := unix.Symlink(a[2], l); err != nil {
		return err
	}
	if err := callThrough(a[0], l, dir); err != nil {
		return err
	}
	if err := unix.Symlink("t", l+"2"); err != nil {
		return err
	}
	if err := unix.Rename(l+"2", l); err != nil {
		return err
	}
	if a[0] != "link" {
		return nil
	}
	h := filepath.Join(dir, "h")
	if err := openWrite(h, unix.O_WRONLY|unix.O_TRUNC); err != nil {
		return err
	}
	return unix.Unlink(h)
}

// goneAfter CALL DIR TARGET makes a directory DIR/g and a symlink DIR/g/l
// to TARGET, makes CALL through it (callThrough; a link is then written
// through), and at once removes DIR/g, as a test's temporary directory
// is removed at its end.
func goneAfter(a []string) error {
	g := filepath.Join(a[1], "g")
	if err := os.MkdirAll(g, 0o755); err != nil {
		return err
	}
	l := filepath.Join(g, "l")
	if err := unix.Symlink(a[2], l); err != nil {
		return err
	}
	if err := callThrough(a[0], l, g); err != nil {
		return err
	}
	if a[0] == "link" {
		if err := openWrite(filepath.Join(g, "h"), unix.O_WRONLY|unix.O_TRUNC); err != nil {
			return err
		}
	}
	return os.RemoveAll(g)
}

// callThrough makes CALL through the symlink l: truncate, truncate(2);
// mtime, utimensat setting the modification time alone; times,
// utimensat setting both; link, linkat with AT_SYMLINK_FOLLOW to DIR/h.
func callThrough(call, l, dir string) error {
	switch call {
	case "truncate":
		return unix.Truncate(l, 0)
	case "mtime":
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: 1_000_000}}
		return unix.UtimesNanoAt(unix.AT_FDCWD, l, ts, 0)
	case "times":
		ts := []unix.Timespec{{Sec: 1_000_000}, {Sec: 1_000_000}}
		return unix.UtimesNanoAt(unix.AT_FDCWD, l, ts, 0)
	case "link":
		return unix.Linkat(unix.AT_FDCWD, l, unix.AT_FDCWD, filepath.Join(dir, "h"), unix.AT_SYMLINK_FOLLOW)
	}
	return fmt.Errorf("%q: want truncate, mtime, times or link", call)
}
