package witness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the child process whose changes the tests
// watch: with WITNESS_CHILD set it runs the operations on its command
// line ("op args... , op args...") and exits, before any test runs.
//
// As root, the tests run in a mount namespace of their own (the binary
// again, with WITNESS_OWN_MOUNTS set): a bind mount a test makes would
// otherwise be seen by the writewatch runs of other packages' tests
// running meanwhile, whose witness then watches contents from the start
// (an alias of a protected file may exist).
func TestMain(m *testing.M) {
	if os.Getenv("WITNESS_CHILD") != "" {
		if err := childMain(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Geteuid() == 0 && os.Getenv("WITNESS_OWN_MOUNTS") == "" {
		os.Exit(inOwnMounts())
	}
	os.Exit(m.Run())
}

// inOwnMounts runs the tests again, in a new mount namespace whose
// mounts propagate nowhere (Go makes / private in it), and returns their
// exit code.
func inOwnMounts() int {
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), "WITNESS_OWN_MOUNTS=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "witness tests: run in a mount namespace of their own:", err)
		return 1
	}
	return 0
}

// child starts the test binary as a child running ops; extra become its
// descriptors 3, 4, ...
func child(t testing.TB, extra []*os.File, ops ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], ops...)
	cmd.Env = append(os.Environ(), "WITNESS_CHILD=1")
	cmd.ExtraFiles = extra
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// runChild runs ops in a child process and returns its pid once it has
// exited successfully.
func runChild(t testing.TB, extra []*os.File, ops ...string) int32 {
	t.Helper()
	cmd := child(t, extra, ops...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child %v: %v", ops, err)
	}
	return int32(cmd.Process.Pid)
}

func childMain(args []string) error {
	for len(args) > 0 {
		end := len(args)
		for i, a := range args {
			if a == "," {
				end = i
				break
			}
		}
		if err := childOp(args[0], args[1:end]); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(args[:end], " "), err)
		}
		if end == len(args) {
			break
		}
		args = args[end+1:]
	}
	return nil
}

func writeFile(path string, flags int) error {
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	if _, err := unix.Write(fd, []byte("x\n")); err != nil {
		return err
	}
	return unix.Close(fd)
}

// childOp runs one operation, one syscall where it can.
func childOp(op string, a []string) error {
	switch op {
	case "write": // write PATH: create or truncate, write, close
		return writeFile(a[0], unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC)
	case "append":
		return writeFile(a[0], unix.O_WRONLY|unix.O_APPEND)
	case "chmod":
		mode, err := strconv.ParseUint(a[1], 8, 32)
		if err != nil {
			return err
		}
		return unix.Chmod(a[0], uint32(mode))
	case "rename":
		return unix.Rename(a[0], a[1])
	case "unlink":
		return unix.Unlink(a[0])
	case "mkdir":
		return unix.Mkdir(a[0], 0o755)
	case "rmdir":
		return unix.Rmdir(a[0])
	case "symlink":
		return unix.Symlink(a[0], a[1])
	case "link":
		return unix.Link(a[0], a[1])
	case "link-fd": // link-fd OLD NEW: a hard link made from a read-only descriptor of OLD
		fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, a[1], unix.AT_SYMLINK_FOLLOW)
	case "writefd": // writefd N: write to inherited descriptor N
		fd, err := strconv.Atoi(a[0])
		if err != nil {
			return err
		}
		_, err = unix.Write(fd, []byte("inherited\n"))
		return err
	case "churn": // churn DIR N: create, write, close and unlink N files
		n, err := strconv.Atoi(a[1])
		if err != nil {
			return err
		}
		return churn(a[0], n)
	case "new-unprivileged": // new-unprivileged DIR: New as nobody
		if err := syscall.Setgroups(nil); err != nil {
			return err
		}
		if err := syscall.Setgid(65534); err != nil {
			return err
		}
		if err := syscall.Setuid(65534); err != nil {
			return err
		}
		for _, limited := range []bool{false, true} {
			w, err := New(Options{Paths: []string{a[0]}, Handle: func(Event) {}, LimitedQueue: limited})
			if err == nil {
				w.Close()
			}
			if !errors.Is(err, ErrNeedsRoot) {
				return fmt.Errorf("New as nobody (limited queue %v): %v, want ErrNeedsRoot", limited, err)
			}
		}
		return nil
	case "uring-write": // create, write and close PATH through io_uring
		return uringWrite(a[0])
	case "uring-rename":
		return uringPathOp(ioringOpRenameat, a[0], a[1])
	case "uring-unlink":
		return uringPathOp(ioringOpUnlinkat, a[0], "")
	case "uring-mkdir":
		return uringPathOp(ioringOpMkdirat, a[0], "")
	}
	return fmt.Errorf("unknown op %q", op)
}

func churn(dir string, n int) error {
	name := []byte(dir + "/churn-")
	base := len(name)
	for i := range n {
		p := string(strconv.AppendInt(name[:base], int64(i), 10))
		if err := writeFile(p, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC); err != nil {
			return err
		}
		if err := unix.Unlink(p); err != nil {
			return err
		}
	}
	return nil
}

// io_uring, driven by hand: one request at a time, no library.
const (
	ioringOpOpenat   = 18
	ioringOpClose    = 19
	ioringOpWrite    = 23
	ioringOpRenameat = 35
	ioringOpUnlinkat = 36
	ioringOpMkdirat  = 37
	ioringOffSQEs    = 0x10000000
)

type ioSQRingOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, Resv1 uint32
	UserAddr                                                        uint64
}

type ioCQRingOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, Cqes, Flags, Resv1 uint32
	UserAddr                                                        uint64
}

type ioUringParams struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	Resv                                                                   [3]uint32
	SQOff                                                                  ioSQRingOffsets
	CQOff                                                                  ioCQRingOffsets
}

type ring struct {
	fd       int
	p        ioUringParams
	mem, sqe []byte
}

func newRing() (*ring, error) {
	r := &ring{}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&r.p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r.fd = int(fd)
	size := int(r.p.SQOff.Array + r.p.SQEntries*4)
	if cq := int(r.p.CQOff.Cqes + r.p.CQEntries*16); cq > size {
		size = cq
	}
	var err error
	if r.mem, err = unix.Mmap(r.fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, err
	}
	if r.sqe, err = unix.Mmap(r.fd, ioringOffSQEs, int(r.p.SQEntries*64), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *ring) close() {
	unix.Munmap(r.sqe)
	unix.Munmap(r.mem)
	unix.Close(r.fd)
}

func (r *ring) u32(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

// submit runs one request, filled in by fill, and returns its result.
func (r *ring) submit(fill func(sqe []byte)) (int32, error) {
	sqe := r.sqe[:64]
	clear(sqe)
	fill(sqe)
	tail := r.u32(r.p.SQOff.Tail)
	mask := *r.u32(r.p.SQOff.RingMask)
	*r.u32(r.p.SQOff.Array + (*tail&mask)*4) = 0
	*tail++
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 1, 1, 1 /* IORING_ENTER_GETEVENTS */, 0, 0); errno != 0 {
		return 0, fmt.Errorf("io_uring_enter: %w", errno)
	}
	head := r.u32(r.p.CQOff.Head)
	cqMask := *r.u32(r.p.CQOff.RingMask)
	res := *(*int32)(unsafe.Pointer(&r.mem[r.p.CQOff.Cqes+(*head&cqMask)*16+8]))
	*head++
	if res < 0 {
		return 0, fmt.Errorf("io_uring request: %w", unix.Errno(-res))
	}
	return res, nil
}

func put32(b []byte, off int, v uint32) { *(*uint32)(unsafe.Pointer(&b[off])) = v }
func put64(b []byte, off int, v uint64) { *(*uint64)(unsafe.Pointer(&b[off])) = v }

func uringWrite(path string) error {
	r, err := newRing()
	if err != nil {
		return err
	}
	defer r.close()
	name, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	fd, err := r.submit(func(sqe []byte) {
		sqe[0] = ioringOpOpenat
		put32(sqe, 4, uint32(0xffffff9c)) // AT_FDCWD
		put64(sqe, 16, uint64(uintptr(unsafe.Pointer(name))))
		put32(sqe, 24, 0o644)
		put32(sqe, 28, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC)
	})
	runtime.KeepAlive(name)
	if err != nil {
		return err
	}
	data := []byte("through io_uring\n")
	if _, err := r.submit(func(sqe []byte) {
		sqe[0] = ioringOpWrite
		put32(sqe, 4, uint32(fd))
		put64(sqe, 16, uint64(uintptr(unsafe.Pointer(&data[0]))))
		put32(sqe, 24, uint32(len(data)))
	}); err != nil {
		return err
	}
	runtime.KeepAlive(data)
	_, err = r.submit(func(sqe []byte) {
		sqe[0] = ioringOpClose
		put32(sqe, 4, uint32(fd))
	})
	return err
}

// uringPathOp runs renameat, unlinkat or mkdirat through io_uring.
func uringPathOp(op uint8, path, path2 string) error {
	r, err := newRing()
	if err != nil {
		return err
	}
	defer r.close()
	name, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	name2, err := unix.BytePtrFromString(path2)
	if err != nil {
		return err
	}
	_, err = r.submit(func(sqe []byte) {
		sqe[0] = op
		put32(sqe, 4, uint32(0xffffff9c)) // AT_FDCWD (the old one for rename)
		put64(sqe, 16, uint64(uintptr(unsafe.Pointer(name))))
		switch op {
		case ioringOpRenameat:
			put32(sqe, 24, uint32(0xffffff9c)) // the new AT_FDCWD, in len
			put64(sqe, 8, uint64(uintptr(unsafe.Pointer(name2))))
		case ioringOpMkdirat:
			put32(sqe, 24, 0o755)
		}
	})
	runtime.KeepAlive(name)
	runtime.KeepAlive(name2)
	return err
}
