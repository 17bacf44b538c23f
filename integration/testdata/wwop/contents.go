package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The operations of the contents suite (integration/contents_test.go):
// ways for the tree to reach a file's contents that its own opens do not
// name.
func init() {
	for name, op := range map[string]func(a []string) error{
		"recvfd-write":  recvFDWrite,
		"getfd-write":   getFDWrite,
		"clone-ns-bind": cloneNSBind,
		// mount-tmpfs DIR: a tmpfs on DIR, with the mount call alone (no mount(8)).
		"mount-tmpfs": func(a []string) error { return unix.Mount("tmpfs", a[0], "tmpfs", 0, "") },
		// umount DIR: what is mounted on DIR detached, with the call alone.
		"umount": func(a []string) error { return unix.Unmount(a[0], unix.MNT_DETACH) },
		// bind-mount DIR MNT: DIR bind-mounted on MNT, with the mount call alone.
		"bind-mount": func(a []string) error { return unix.Mount(a[0], a[1], "", unix.MS_BIND, "") },
		"clone-ns-write": func(a []string) error {
			return cloneNS(nil, filepath.Dir(a[0]), filepath.Base(a[0]))
		},
		"bind-write":   bindWrite,
		"bind-race":    bindRace,
		"append-retry": appendRetry,
	} {
		edgeOps[name] = op
	}
}

// recvFDWrite SOCKET: connect to the Unix socket SOCKET, receive one
// descriptor with SCM_RIGHTS, and write a line to it.
func recvFDWrite(a []string) error {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: a[0]}); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(s, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return fmt.Errorf("recvmsg: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return err
	}
	if len(msgs) != 1 {
		return fmt.Errorf("%d control messages, want 1", len(msgs))
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return err
	}
	if len(fds) != 1 {
		return fmt.Errorf("%d descriptors, want 1", len(fds))
	}
	defer unix.Close(fds[0])
	_, err = unix.Write(fds[0], []byte("written through a descriptor received over a Unix socket\n"))
	return err
}

// getFDWrite PID N: a copy of process PID's descriptor N
// (pidfd_open, pidfd_getfd), and a line written to it.
func getFDWrite(a []string) error {
	pid, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(a[1])
	if err != nil {
		return err
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, n, 0)
	if err != nil {
		return fmt.Errorf("pidfd_getfd: %w", err)
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte("written through another process's descriptor\n"))
	return err
}

// cloneNSBind DIR MNT NAME: a child cloned straight into a new user and
// mount namespace (clone(CLONE_NEWUSER|CLONE_NEWNS)) whose first system
// calls bind-mount DIR on MNT (MS_BIND|MS_REC), open MNT/NAME for
// appending and write a line to it; this process waits for the child.
func cloneNSBind(a []string) error {
	dir, err := unix.BytePtrFromString(a[0])
	if err != nil {
		return err
	}
	return cloneNS(dir, a[1], a[2])
}

// cloneNS is cloneNSBind, with dir (nil: nothing is mounted, and
// clone-ns-write PATH opens PATH, creating it, as its first call).
func cloneNS(dir *byte, mntDir, name string) error {
	mnt, err := unix.BytePtrFromString(mntDir)
	if err != nil {
		return err
	}
	path, err := unix.BytePtrFromString(filepath.Join(mntDir, name))
	if err != nil {
		return err
	}
	line := []byte("written from a new mount namespace\n")
	// The child reports the step that failed and its errno here.
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	defer unix.Close(p[0])
	failed := new([2]byte)

	// The child runs on this thread's copy, with every signal blocked:
	// no Go signal handler runs in it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^all.Val[i]
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &all, &old); err != nil {
		unix.Close(p[1])
		return err
	}
	pid, errno := cloneAndWrite(dir, mnt, path, &line[0], uintptr(len(line)), p[1], failed)
	unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	unix.Close(p[1])
	runtime.KeepAlive(dir)
	runtime.KeepAlive(mnt)
	runtime.KeepAlive(path)
	runtime.KeepAlive(line)
	if errno != 0 {
		return fmt.Errorf("clone: %w", errno)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(int(pid), &ws, 0, nil); err != nil {
		return fmt.Errorf("wait: %w", err)
	}
	var got [2]byte
	if n, _ := unix.Read(p[0], got[:]); n == 2 {
		step := [...]string{1: "mount", 2: "open", 3: "write"}[got[0]]
		return fmt.Errorf("child: %s: %w", step, unix.Errno(got[1]))
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return fmt.Errorf("child: %v", ws)
	}
	return nil
}

// cloneAndWrite is cloneNSBind's clone. The child runs no Go code but
// this function's own, with raw system calls only, and exits; failed
// is the child's copy of a buffer it fills and writes to the pipe
// status when a step fails.
//
//go:noinline
//go:nosplit
//go:norace
//go:nocheckptr
func cloneAndWrite(dir, mnt, path, line *byte, n uintptr, status int, failed *[2]byte) (uintptr, syscall.Errno) {
	pid, _, errno := syscall.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_NEWNS|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 || pid != 0 {
		return pid, errno
	}
	var step byte = 1
	if dir != nil {
		_, _, errno = syscall.RawSyscall6(unix.SYS_MOUNT, uintptr(unsafe.Pointer(dir)), uintptr(unsafe.Pointer(mnt)), 0, unix.MS_BIND|unix.MS_REC, 0, 0)
	}
	if errno == 0 {
		step = 2
		cwd := unix.AT_FDCWD
		var fd uintptr
		fd, _, errno = syscall.RawSyscall6(unix.SYS_OPENAT, uintptr(cwd), uintptr(unsafe.Pointer(path)), unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_CLOEXEC, 0o644, 0, 0)
		if errno == 0 {
			step = 3
			_, _, errno = syscall.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(line)), n)
		}
	}
	if errno != 0 {
		failed[0], failed[1] = step, byte(errno)
		syscall.RawSyscall(unix.SYS_WRITE, uintptr(status), uintptr(unsafe.Pointer(failed)), 2)
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 1, 0, 0)
	}
	syscall.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	return 0, 0
}

// bindWrite DIR MNT NAME: bind-mount DIR on MNT in this process's mount
// namespace (root's, shared with the whole tree), append a line to
// MNT/NAME, and unmount MNT.
func bindWrite(a []string) error {
	if err := unix.Mount(a[0], a[1], "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	werr := openWrite(filepath.Join(a[1], a[2]), unix.O_WRONLY|unix.O_APPEND)
	if err := unix.Unmount(a[1], unix.MNT_DETACH); err != nil {
		return errors.Join(werr, fmt.Errorf("umount: %w", err))
	}
	return werr
}

// bindRace DIR MNT NAME: another process (append-retry MNT/NAME) tries
// to open MNT/NAME for appending over and over, and this one then
// bind-mounts DIR on MNT, in the namespace they share: the other opens
// it through the mount as soon as the mount is made, while this process
// is still in its call, or paused after it. MNT is unmounted at the end.
func bindRace(a []string) error {
	cmd := exec.Command("/proc/self/exe", "append-retry", filepath.Join(a[1], a[2]))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	// It says when it tries.
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("append-retry did not start: %w", err)
	}
	merr := unix.Mount(a[0], a[1], "", unix.MS_BIND, "")
	if merr != nil {
		cmd.Process.Kill()
	}
	werr := cmd.Wait()
	if merr != nil {
		return fmt.Errorf("mount: %w", merr)
	}
	if err := unix.Unmount(a[1], unix.MNT_DETACH); err != nil {
		return errors.Join(werr, fmt.Errorf("umount: %w", err))
	}
	return werr
}

// appendRetry PATH: say "trying" on stdout, then open PATH for appending
// (never creating it) until it exists, for up to ten seconds, and append
// a line.
func appendRetry(a []string) error {
	path, err := unix.BytePtrFromString(a[0])
	if err != nil {
		return err
	}
	fmt.Println("trying")
	runtime.LockOSThread()
	cwd := unix.AT_FDCWD
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		for range 1000 {
			fd, _, errno := syscall.RawSyscall6(unix.SYS_OPENAT, uintptr(cwd), uintptr(unsafe.Pointer(path)), unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0, 0, 0)
			if errno == unix.ENOENT {
				continue
			}
			if errno != 0 {
				return fmt.Errorf("open: %w", errno)
			}
			line := []byte("written through a mount made a moment before\n")
			_, _, errno = syscall.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&line[0])), uintptr(len(line)))
			unix.Close(int(fd))
			if errno != 0 {
				return fmt.Errorf("write: %w", errno)
			}
			return nil
		}
	}
	return fmt.Errorf("%s never appeared", a[0])
}
