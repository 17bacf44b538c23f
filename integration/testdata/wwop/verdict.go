package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The operations of the exact-verdict suite (integration/verdict_test.go):
// writes that no hooked call names the way the kernel resolves them.
func init() {
	for name, op := range map[string]func(a []string) error{
		"link-fd":        linkFD,
		"link-empty":     linkEmpty,
		"writefd":        writeFD,
		"race-unlink":    raceUnlink,
		"uring-write-fd": uringWriteFD,
		"uring-rename": func(a []string) error {
			return uringPaths(ioringOpRenameat, a[0], a[1])
		},
		"uring-unlink": func(a []string) error { return uringPaths(ioringOpUnlinkat, a[0], "") },
		// uring-link-follow OLD NEW: IORING_OP_LINKAT with AT_SYMLINK_FOLLOW.
		"uring-link-follow": func(a []string) error { return uringPaths(ioringOpLinkat, a[0], a[1]) },
		"chroot":            func(a []string) error { return chrootTo(a[0]) },
		"mount-ns-bind":     mountNSBind,
		"open-tree":         openTree,
		"by-handle":         byHandle,
		"acct":              acct,
		"core":              coreDump,
		"bind":              bindSocket,
		"reuse-inode":       reuseInode,
		"reuse-inode-open":  reuseInodeOpen,
		"uring-setxattr":    uringSetxattr,
		"uring-fsetxattr":   uringFsetxattr,
		"setflags":          setFlags,
		"fssetxattr":        fsSetxattr,
		"setversion":        setVersion,
		"filesetattr":       fileSetattr,
		"mmap-fd":           mmapFD,
		"aio-fd":            aioFD,
		"fanotify-write":    fanotifyWrite,
	} {
		edgeOps[name] = op
	}
}

// linkFD OLD NEW: a hard link made from a read-only descriptor of OLD
// (linkat of /proc/self/fd/N, AT_SYMLINK_FOLLOW).
func linkFD(a []string) error {
	fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, a[1], unix.AT_SYMLINK_FOLLOW)
}

// linkEmpty OLD NEW: hard-link OLD, opened with O_PATH, as NEW with
// linkat(fd, "", AT_EMPTY_PATH).
func linkEmpty(a []string) error {
	fd, err := unix.Open(a[0], unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Linkat(fd, "", unix.AT_FDCWD, a[1], unix.AT_EMPTY_PATH)
}

// writeFD N: write a line to descriptor N, which the process inherited.
func writeFD(a []string) error {
	n, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	_, err = unix.Write(n, []byte("written through an inherited descriptor\n"))
	return err
}

// raceUnlink DIR N: unlink DIR/f000 ... DIR/fN-1, each through a path
// buffer that another thread keeps rewriting to an allowed name of the
// same length (tests/zzz...) between the call's entry and exit. A call
// that read the decoy fails (it does not exist) and is made again. The
// path names DIR/./././.../fNNN, whose thousand components keep the
// kernel looking it up for tens of microseconds: time for the other
// thread to rewrite it.
func raceUnlink(a []string) error {
	n, err := strconv.Atoi(a[1])
	if err != nil {
		return err
	}
	name := func(i int) string { return fmt.Sprintf("%s/%sf%03d", a[0], strings.Repeat("./", 1000), i) }
	width := len(name(n))
	buf := make([]byte, width+1)
	real := make([]byte, width+1)
	decoy := make([]byte, width+1)
	copy(decoy, "tests/"+strings.Repeat("z", width-len("tests/")))
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		for !stop.Load() {
			// Each name stays a while: a call that read the real one at
			// its entry finds the decoy at its exit about half the time.
			copy(buf, decoy)
			spin()
			copy(buf, real)
			spin()
		}
	}()
	defer func() {
		stop.Store(true)
		<-done
	}()
	for i := range n {
		clear(real)
		copy(real, name(i))
		for start := time.Now(); ; {
			copy(buf, real)
			cwd := unix.AT_FDCWD
			_, _, errno := unix.Syscall(unix.SYS_UNLINKAT, uintptr(cwd), uintptr(unsafe.Pointer(&buf[0])), 0)
			if errno == 0 {
				break
			}
			if time.Since(start) > 20*time.Second {
				return fmt.Errorf("unlink %s: %w", name(i), errno)
			}
			// On one CPU, let the other thread put the real name back.
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
	}
	return nil
}

// spin busies the thread for a few microseconds.
func spin() {
	for i := 0; i < 2000; i++ {
		spinSink.Add(1)
	}
}

var spinSink atomic.Uint64

const (
	ioringOpWrite    = 23
	ioringOpRenameat = 35
	ioringOpLinkat   = 39
	ioringOpUnlinkat = 36
)

// uringWriteFD N: an io_uring write request on descriptor N.
func uringWriteFD(a []string) error {
	n, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	data := []byte("written through io_uring\n")
	return uringSubmit(func(sqe []byte) {
		sqe[0] = ioringOpWrite
		*(*int32)(unsafe.Pointer(&sqe[4])) = int32(n)
		*(*uint64)(unsafe.Pointer(&sqe[8])) = ^uint64(0) // the file's position
		*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(&data[0])))
		*(*uint32)(unsafe.Pointer(&sqe[24])) = uint32(len(data))
	}, data)
}

// uringPaths submits a RENAMEAT (old, new) or UNLINKAT (old) request,
// relative to the working directory.
func uringPaths(opcode uint8, old, new string) error {
	o, err := unix.BytePtrFromString(old)
	if err != nil {
		return err
	}
	nw, err := unix.BytePtrFromString(new)
	if err != nil {
		return err
	}
	return uringSubmit(func(sqe []byte) {
		sqe[0] = opcode
		*(*int32)(unsafe.Pointer(&sqe[4])) = unix.AT_FDCWD
		*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(o)))
		if opcode == ioringOpRenameat || opcode == ioringOpLinkat {
			*(*int32)(unsafe.Pointer(&sqe[24])) = unix.AT_FDCWD                       // len: the new dirfd
			*(*uint64)(unsafe.Pointer(&sqe[8])) = uint64(uintptr(unsafe.Pointer(nw))) // off: the new path
		}
		if opcode == ioringOpLinkat {
			*(*uint32)(unsafe.Pointer(&sqe[28])) = unix.AT_SYMLINK_FOLLOW // hardlink_flags
		}
	}, o, nw)
}

// uringSubmit submits one request that fill describes and waits for it;
// keep stays alive until then.
func uringSubmit(fill func(sqe []byte), keep ...any) error {
	var p uringParams
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return fmt.Errorf("io_uring_setup: %w", errno)
	}
	defer unix.Close(int(fd))
	ringSize := int(max(p.SqOff.Array+p.SqEntries*4, p.CqOff.Cqes+p.CqEntries*16))
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
	sqe := sqes[:64]
	clear(sqe)
	fill(sqe)
	tail := (*uint32)(unsafe.Pointer(&ring[p.SqOff.Tail]))
	mask := *(*uint32)(unsafe.Pointer(&ring[p.SqOff.RingMask]))
	*(*uint32)(unsafe.Pointer(&ring[p.SqOff.Array+(*tail&mask)*4])) = 0
	*tail = *tail + 1
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, fd, 1, 1, 1 /* GETEVENTS */, 0, 0); errno != 0 {
		return fmt.Errorf("io_uring_enter: %w", errno)
	}
	runtime.KeepAlive(keep)
	head := *(*uint32)(unsafe.Pointer(&ring[p.CqOff.Head]))
	cqMask := *(*uint32)(unsafe.Pointer(&ring[p.CqOff.RingMask]))
	if res := *(*int32)(unsafe.Pointer(&ring[p.CqOff.Cqes+(head&cqMask)*16+8])); res < 0 {
		return fmt.Errorf("io_uring request: %w", unix.Errno(-res))
	}
	return nil
}

// chrootTo DIR: chroot into DIR and go to its root; the next
// operations' absolute paths start there.
func chrootTo(dir string) error {
	if err := unix.Chroot(dir); err != nil {
		return err
	}
	return unix.Chdir("/")
}

// mountNSBind SRC DST: a private mount namespace (unshare -m) where SRC
// is bind-mounted on DST; then write DST/NAME for each further argument.
func mountNSBind(a []string) error {
	runtime.LockOSThread() // the namespace is this thread's
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	if err := unix.Mount(a[0], a[1], "", unix.MS_BIND, ""); err != nil {
		return err
	}
	for _, name := range a[2:] {
		if err := openWrite(filepath.Join(a[1], name), unix.O_WRONLY|unix.O_APPEND); err != nil {
			return err
		}
	}
	return nil
}

// openTree DIR NAME: a detached copy of the mount of DIR (open_tree
// OPEN_TREE_CLONE), and NAME written through it.
func openTree(a []string) error {
	tree, err := unix.OpenTree(unix.AT_FDCWD, a[0], unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	fd, err := unix.Openat(tree, a[1], unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte("written through a detached mount\n"))
	return err
}

// byHandle PATH: PATH's file handle, then the file opened by it
// (open_by_handle_at) and written.
func byHandle(a []string) error {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, a[0], 0)
	if err != nil {
		return err
	}
	mnt, err := unix.Open(filepath.Dir(a[0]), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(mnt)
	fd, err := unix.OpenByHandleAt(mnt, h, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte("written by handle\n"))
	return err
}

// acct PATH: process accounting into PATH (acct(2)) while a child
// process runs and exits, then off.
func acct(a []string) error {
	p, err := unix.BytePtrFromString(a[0])
	if err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_ACCT, uintptr(unsafe.Pointer(p)), 0, 0); errno != 0 {
		return fmt.Errorf("acct: %w", errno)
	}
	runErr := exec.Command(os.Args[0], "read", "/dev/null").Run()
	if _, _, errno := unix.Syscall(unix.SYS_ACCT, 0, 0, 0); errno != 0 {
		return fmt.Errorf("acct off: %w", errno)
	}
	return runErr
}

// coreDump DIR: a child that dumps core in DIR (the kernel writes the
// core file there when core_pattern is a plain name).
func coreDump(a []string) error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}); err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", "kill -SEGV $$")
	cmd.Dir = a[0]
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.CoreDump() {
		return nil
	}
	return fmt.Errorf("no core dumped (%v)", err)
}

// bindSocket PATH: an AF_UNIX socket bound at PATH, which makes a file.
func bindSocket(a []string) error {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	return unix.Bind(s, &unix.SockaddrUnix{Name: a[0]})
}

// reuseInode A B: create A, delete it, create B, until B gets the inode
// number A had (up to 100 tries; each try's names carry its number after
// the first); prints the name B finally took, and fails if no try did.
func reuseInode(a []string) error {
	for i := range 100 {
		first, second := a[0], a[1]
		if i > 0 {
			first, second = fmt.Sprintf("%s.%d", a[0], i), fmt.Sprintf("%s.%d", a[1], i)
		}
		var st1, st2 unix.Stat_t
		if err := openWrite(first, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC); err != nil {
			return err
		}
		if err := unix.Stat(first, &st1); err != nil {
			return err
		}
		if err := unix.Unlink(first); err != nil {
			return err
		}
		if err := openWrite(second, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC); err != nil {
			return err
		}
		if err := unix.Stat(second, &st2); err != nil {
			return err
		}
		if st1.Ino == st2.Ino {
			fmt.Println(second)
			return nil
		}
	}
	return fmt.Errorf("no inode number reused in 100 tries")
}

// reuseInodeOpen A B: another process creates A, this one opens it for
// appending; A is deleted and the other process creates B, until B gets
// the number A had (up to 100 tries, names numbered after the first);
// then this process opens B for appending too, and prints B's name.
func reuseInodeOpen(a []string) error {
	create := func(path string) error {
		return exec.Command("/proc/self/exe", "write", path).Run()
	}
	for i := range 100 {
		first, second := a[0], a[1]
		if i > 0 {
			first, second = fmt.Sprintf("%s.%d", a[0], i), fmt.Sprintf("%s.%d", a[1], i)
		}
		var st1, st2 unix.Stat_t
		if err := create(first); err != nil {
			return err
		}
		if err := openWrite(first, unix.O_WRONLY|unix.O_APPEND); err != nil {
			return err
		}
		if err := unix.Stat(first, &st1); err != nil {
			return err
		}
		if err := unix.Unlink(first); err != nil {
			return err
		}
		if err := create(second); err != nil {
			return err
		}
		if err := unix.Stat(second, &st2); err != nil {
			return err
		}
		if st1.Ino == st2.Ino {
			fmt.Println(second)
			return openWrite(second, unix.O_WRONLY|unix.O_APPEND)
		}
	}
	return fmt.Errorf("no inode number reused in 100 tries")
}

const (
	ioringOpFsetxattr = 41
	ioringOpSetxattr  = 42
)

// aclAllRWX is a POSIX access ACL (system.posix_acl_access, version 2)
// of the three base entries, each rwx: set on a file, it makes it 0777.
var aclAllRWX = []byte{
	2, 0, 0, 0, // version
	0x01, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, // ACL_USER_OBJ rwx
	0x04, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, // ACL_GROUP_OBJ rwx
	0x20, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, // ACL_OTHER rwx
}

// uringXattrName is the attribute the io_uring requests set: a trusted
// one (the tests run as root), which tmpfs keeps on every kernel, where
// it keeps user.* ones only from Linux 6.6 on.
const uringXattrName = "trusted.writewatch"

// uringSetxattr PATH [acl]: an io_uring SETXATTR request (uringXattrName,
// or with "acl" the ACL that makes PATH 0777), relative to the working
// directory.
func uringSetxattr(a []string) error {
	name, value := uringXattrName, []byte("1")
	if len(a) > 1 && a[1] == "acl" {
		name, value = "system.posix_acl_access", aclAllRWX
	}
	return uringXattr(ioringOpSetxattr, a[0], -1, name, value)
}

// uringFsetxattr PATH: PATH opened read-only, and an io_uring FSETXATTR
// request (uringXattrName) on the descriptor.
func uringFsetxattr(a []string) error {
	fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return uringXattr(ioringOpFsetxattr, "", fd, uringXattrName, []byte("1"))
}

func uringXattr(opcode uint8, path string, fd int, name string, value []byte) error {
	n, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	return uringSubmit(func(sqe []byte) {
		sqe[0] = opcode
		*(*int32)(unsafe.Pointer(&sqe[4])) = int32(fd)
		*(*uint64)(unsafe.Pointer(&sqe[8])) = uint64(uintptr(unsafe.Pointer(&value[0]))) // addr2: the value
		*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(n)))        // addr: the name
		*(*uint32)(unsafe.Pointer(&sqe[24])) = uint32(len(value))                        // len: its size
		if opcode == ioringOpSetxattr {
			*(*uint64)(unsafe.Pointer(&sqe[48])) = uint64(uintptr(unsafe.Pointer(p))) // addr3: the path
		}
	}, n, p, value)
}

// Inode flags (chattr) and the ioctls that get and set them.
const (
	fsImmutableFl   = 0x10 // chattr +i
	fsNoatimeFl     = 0x80 // chattr +A
	fsXflagNoatime  = 0x40
	fsIocFsgetxattr = 0x801c581f // _IOR('X', 31, struct fsxattr)
	fsIocFssetxattr = 0x401c5820 // _IOW('X', 32, struct fsxattr)
)

// setFlags PATH i|A|-: FS_IOC_SETFLAGS on PATH opened read-only, as
// chattr does: +i, +A, or every flag cleared ("-").
func setFlags(a []string) error {
	fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var flags int32
	if err := ioctlPtr(fd, unix.FS_IOC_GETFLAGS, unsafe.Pointer(&flags)); err != nil {
		return err
	}
	switch a[1] {
	case "i":
		flags |= fsImmutableFl
	case "A":
		flags |= fsNoatimeFl
	case "-":
		flags &^= fsImmutableFl | fsNoatimeFl
	default:
		return fmt.Errorf("flag %q: want i, A or -", a[1])
	}
	return ioctlPtr(fd, unix.FS_IOC_SETFLAGS, unsafe.Pointer(&flags))
}

// setVersion PATH: FS_IOC_SETVERSION on PATH opened read-only, setting
// its inode's generation to 4242 (chattr -v 4242).
func setVersion(a []string) error {
	fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	gen := int32(4242)
	const fsIocSetversion = 0x40087602 // _IOW('v', 2, long)
	return ioctlPtr(fd, fsIocSetversion, unsafe.Pointer(&gen))
}

// fsSetxattr PATH: FS_IOC_FSSETXATTR on PATH opened read-only, adding the
// no-atime flag.
func fsSetxattr(a []string) error {
	fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var fsx [28]byte // struct fsxattr; fsx_xflags first
	if err := ioctlPtr(fd, fsIocFsgetxattr, unsafe.Pointer(&fsx)); err != nil {
		return err
	}
	*(*uint32)(unsafe.Pointer(&fsx[0])) |= fsXflagNoatime
	return ioctlPtr(fd, fsIocFssetxattr, unsafe.Pointer(&fsx))
}

// fileSetattr PATH [fd|nofollow]: file_setattr(2) (Linux 6.17) adding
// the no-atime flag to PATH: by its name relative to the working
// directory, by its name with AT_SYMLINK_NOFOLLOW ("nofollow"), or
// ("fd") by a descriptor opened read-only, with an empty name and
// AT_EMPTY_PATH. It reads the attributes with file_getattr first.
func fileSetattr(a []string) error {
	dfd, name, flags := unix.AT_FDCWD, a[0], 0
	if len(a) > 1 {
		switch a[1] {
		case "fd":
			fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			dfd, name, flags = fd, "", unix.AT_EMPTY_PATH
		case "nofollow":
			flags = unix.AT_SYMLINK_NOFOLLOW
		default:
			return fmt.Errorf("mode %q: want fd or nofollow", a[1])
		}
	}
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	var fa [24]byte // struct file_attr (FILE_ATTR_SIZE_VER0); fa_xflags first
	call := func(nr uintptr) error {
		_, _, errno := unix.Syscall6(nr, uintptr(dfd), uintptr(unsafe.Pointer(p)),
			uintptr(unsafe.Pointer(&fa)), uintptr(len(fa)), uintptr(flags), 0)
		if errno != 0 {
			return errno
		}
		return nil
	}
	// Without file_getattr (before Linux 6.17) file_setattr is called
	// all the same, for its own error.
	if err := call(unix.SYS_FILE_GETATTR); err != nil && err != unix.ENOSYS {
		return fmt.Errorf("file_getattr: %w", err)
	}
	*(*uint64)(unsafe.Pointer(&fa[0])) |= fsXflagNoatime
	// Only fa_xflags, fa_extsize, fa_projid and fa_cowextsize are set;
	// fa_nextents is read-only, and must be 0.
	*(*uint32)(unsafe.Pointer(&fa[12])) = 0
	if err := call(unix.SYS_FILE_SETATTR); err != nil {
		return fmt.Errorf("file_setattr: %w", err)
	}
	return nil
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// mmapFD N: change the file behind inherited descriptor N through a
// shared mapping, made read-only and then writable (mprotect), with no
// msync: no syscall writes.
func mmapFD(a []string) error {
	n, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	m, err := unix.Mmap(n, 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	if err := unix.Mprotect(m, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		return err
	}
	copy(m, "written through a shared mapping\n")
	return nil
}

// aioFD N: a Linux AIO write request (io_submit, IOCB_CMD_PWRITE) on
// inherited descriptor N, after a read request on it.
func aioFD(a []string) error {
	n, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	var ctx uint64
	if _, _, errno := unix.Syscall(unix.SYS_IO_SETUP, 4, uintptr(unsafe.Pointer(&ctx)), 0); errno != 0 {
		return fmt.Errorf("io_setup: %w", errno)
	}
	defer unix.Syscall(unix.SYS_IO_DESTROY, uintptr(ctx), 0, 0)
	// struct iocb (include/uapi/linux/aio_abi.h): 64 bytes.
	type iocb struct {
		data            uint64
		key, rwFlags    uint32
		opcode, reqprio int16
		fd              uint32
		buf, nbytes     uint64
		offset          int64
		reserved2       uint64
		flags, resfd    uint32
	}
	in := make([]byte, 8)
	out := []byte("written through Linux AIO\n")
	cbs := []iocb{
		{opcode: 0 /* IOCB_CMD_PREAD */, fd: uint32(n), buf: uint64(uintptr(unsafe.Pointer(&in[0]))), nbytes: uint64(len(in))},
		{opcode: 1 /* IOCB_CMD_PWRITE */, fd: uint32(n), buf: uint64(uintptr(unsafe.Pointer(&out[0]))), nbytes: uint64(len(out))},
	}
	ptrs := []*iocb{&cbs[0], &cbs[1]}
	if r, _, errno := unix.Syscall(unix.SYS_IO_SUBMIT, uintptr(ctx), uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0]))); errno != 0 || r != 2 {
		return fmt.Errorf("io_submit: %d, %w", r, errno)
	}
	events := make([]byte, 2*32) // struct io_event: 32 bytes
	if r, _, errno := unix.Syscall6(unix.SYS_IO_GETEVENTS, uintptr(ctx), 2, 2, uintptr(unsafe.Pointer(&events[0])), 0, 0); errno != 0 || r != 2 {
		return fmt.Errorf("io_getevents: %d, %w", r, errno)
	}
	runtime.KeepAlive(in)
	runtime.KeepAlive(out)
	runtime.KeepAlive(cbs)
	return nil
}

// fanotifyWrite PATH [ro]: get a descriptor of PATH with no open call of
// its own: a fanotify group whose event descriptors are open for reading
// and writing (or, with ro, for reading only) watches PATH, which is
// then opened read-only; the event's descriptor is written through
// (unless ro).
func fanotifyWrite(a []string) error {
	ro := len(a) > 1 && a[1] == "ro"
	access := unix.O_RDWR
	if ro {
		access = unix.O_RDONLY
	}
	fan, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC, uint(access|unix.O_CLOEXEC))
	if err != nil {
		return fmt.Errorf("fanotify_init: %w", err)
	}
	defer unix.Close(fan)
	if err := unix.FanotifyMark(fan, unix.FAN_MARK_ADD, unix.FAN_OPEN, unix.AT_FDCWD, a[0]); err != nil {
		return fmt.Errorf("fanotify_mark: %w", err)
	}
	fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	unix.Close(fd)
	buf := make([]byte, 4096)
	if _, err := unix.Read(fan, buf); err != nil {
		return fmt.Errorf("read the event: %w", err)
	}
	ev := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&buf[0]))
	if ev.Fd < 0 {
		return fmt.Errorf("event without a descriptor: %d", ev.Fd)
	}
	defer unix.Close(int(ev.Fd))
	if ro {
		return nil
	}
	_, err = unix.Pwrite(int(ev.Fd), []byte("written through a fanotify event's descriptor\n"), 0)
	return err
}
