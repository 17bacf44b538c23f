package metaguard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/pathwalk"
)

// struct seccomp_notif and struct seccomp_notif_resp.
type notif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Data  struct {
		Nr   int32
		Arch uint32
		IP   uint64
		Args [6]uint64
	}
}

type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// Guard answers the calls the filter hands over: a call whose file lies
// outside the grants fails with EPERM, every other one carries on.
type Guard struct {
	listener *os.File
	allowed  func(path string) bool
	stopR    *os.File
	stopW    *os.File
	done     chan struct{}
	err      error
	once     sync.Once

	// Refused counts the calls answered with EPERM.
	Refused atomic.Uint64
}

// Start serves the listener Install returned (in COMMAND's trampoline)
// until Close, or until no process is left under the filter. allowed
// judges a clean absolute path; it is called from the Guard's goroutine.
// Start takes the listener over.
func Start(listener *os.File, allowed func(path string) bool) (*Guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		listener.Close()
		return nil, fmt.Errorf("metadata guard: %w", err)
	}
	g := &Guard{listener: listener, allowed: allowed, stopR: r, stopW: w, done: make(chan struct{})}
	go g.serve()
	return g, nil
}

// Close stops answering and returns the error that stopped the Guard
// early, if one did. Calls made after it fail with ENOSYS.
func (g *Guard) Close() error {
	g.once.Do(func() {
		g.stopW.Close()
		<-g.done
		g.stopR.Close()
	})
	return g.err
}

func (g *Guard) serve() {
	defer close(g.done)
	// Whatever stops the Guard, nobody answers from then on: closing the
	// listener makes the calls fail (ENOSYS) instead of waiting forever.
	defer g.listener.Close()
	lfd := int32(g.listener.Fd())
	for {
		fds := []unix.PollFd{{Fd: lfd, Events: unix.POLLIN}, {Fd: int32(g.stopR.Fd()), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			g.err = fmt.Errorf("metadata guard: poll: %w", err)
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			if err := g.answer(int(lfd)); err != nil {
				g.err = err
				return
			}
			continue
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return // no process is left under the filter
		}
	}
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// answer reads one call and answers it.
func (g *Guard) answer(lfd int) error {
	var n notif
	if err := ioctl(lfd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
		if err == unix.ENOENT || err == unix.EINTR {
			return nil // the caller went away (a signal, or it died)
		}
		return fmt.Errorf("metadata guard: receive: %w", err)
	}
	path, ok := resolve(&n)
	// The caller is still waiting, so the ids read above were its own.
	if ioctl(lfd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&n.ID)) != nil {
		return nil
	}
	resp := notifResp{ID: n.ID}
	if !ok || (path != "" && !g.allowed(path)) {
		resp.Error = -int32(unix.EPERM)
		g.Refused.Add(1)
	} else {
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	}
	if err := ioctl(lfd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)); err != nil && err != unix.ENOENT {
		return fmt.Errorf("metadata guard: answer: %w", err)
	}
	return nil
}

const (
	atFDCWD           = -100
	atSymlinkNofollow = 0x100
	atEmptyPath       = 0x1000
)

// call is what a metadata syscall acts on: path relative to dfd, or, with
// path 0, the file open as dfd.
type call struct {
	dfd    int32
	path   uint64
	follow bool
}

// decode says what the call acts on, from the syscall's name (package
// ops) and its arguments.
func decode(syscall string, a [6]uint64) (c call, flags uint64) {
	c = call{dfd: atFDCWD, path: a[0], follow: true}
	switch syscall {
	case "chmod", "chown", "utime", "utimes", "setxattr", "removexattr":
	case "lchown", "lsetxattr", "lremovexattr":
		c.follow = false
	case "fchmod", "fchown", "fsetxattr", "fremovexattr", "ioctl":
		c = call{dfd: int32(a[0])}
	case "fchmodat", "futimesat":
		c = call{dfd: int32(a[0]), path: a[1], follow: true}
	case "fchmodat2", "utimensat":
		c, flags = call{dfd: int32(a[0]), path: a[1], follow: true}, a[3]
	case "fchownat":
		c, flags = call{dfd: int32(a[0]), path: a[1], follow: true}, a[4]
	case "setxattrat", "removexattrat":
		c, flags = call{dfd: int32(a[0]), path: a[1], follow: true}, a[2]
	case "file_setattr":
		c, flags = call{dfd: int32(a[0]), path: a[1], follow: true}, a[4]
	}
	if flags&atSymlinkNofollow != 0 {
		c.follow = false
	}
	return c, flags
}

// resolve finds the file a call acts on, as a clean absolute path, the
// way the kernel will (package pathwalk): the path read from the
// caller's memory, relative to its cwd or dirfd, or to its root
// (chroot), symlinks followed unless the call says not to, /proc/self,
// /dev/stdin and the like the caller's. It returns "" and true for something that is not a file (a
// pipe, a socket), and false when the call cannot be judged (it is
// refused). Where the lookup cannot go on (a component missing, a loop)
// the path as text is judged: the call fails there, or creates nothing
// the guard judges.
func resolve(n *notif) (string, bool) {
	tid := strconv.FormatUint(uint64(n.PID), 10)
	proc := "/proc/" + tid
	c, flags := decode(ops.Name(runtime.GOARCH, uint32(n.Data.Nr)), n.Data.Args)
	var name string
	if c.path != 0 {
		s, err := readString(proc, c.path)
		if err != nil {
			return "", false
		}
		name = s
	}
	if c.path == 0 || (name == "" && flags&atEmptyPath != 0) {
		target, err := os.Readlink(proc + "/fd/" + strconv.Itoa(int(c.dfd)))
		if err != nil {
			return "", false
		}
		if target, ok := pathwalk.Descriptor(target); ok && strings.HasPrefix(target, "/") {
			return filepath.Clean(target), true
		}
		return "", true // pipe:[…], socket:[…], anon_inode:…
	}
	if name == "" {
		return "", true // ENOENT: nothing to change
	}
	// A caller in a chroot looks its paths up from its own root.
	root, err := os.Readlink(proc + "/root")
	if err != nil || !filepath.IsAbs(root) {
		return "", false
	}
	o := pathwalk.Options{PID: int(n.PID), TID: int(n.PID), Last: pathwalk.NoFollow, Root: root}
	if c.follow {
		o.Last = pathwalk.Follow
	}
	if !strings.HasPrefix(name, "/") {
		link := proc + "/cwd"
		if c.dfd != atFDCWD {
			link = proc + "/fd/" + strconv.Itoa(int(c.dfd))
		}
		dir, err := os.Readlink(link)
		if err != nil || !filepath.IsAbs(dir) {
			return "", false
		}
		o.Dir = dir
	}
	path, err := pathwalk.Resolve(name, o)
	if errors.Is(err, pathwalk.ErrNotFile) {
		return "", true
	}
	return path, true
}

// readString reads a NUL-terminated string of at most PATH_MAX bytes at
// addr in the caller's memory, a page at a time.
func readString(proc string, addr uint64) (string, error) {
	f, err := os.Open(proc + "/mem")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var out []byte
	buf := make([]byte, 4096)
	for len(out) < unix.PathMax {
		chunk := 4096 - int(addr%4096)
		k, err := f.ReadAt(buf[:chunk], int64(addr))
		if k == 0 && err != nil {
			return "", err
		}
		if i := bytes.IndexByte(buf[:k], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:k]...)
		addr += uint64(k)
	}
	return "", errors.New("path longer than PATH_MAX")
}
