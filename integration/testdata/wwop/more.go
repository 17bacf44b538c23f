package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// moreOps are the operations of the edge-case suite.
func moreOps(op string, a []string) (bool, error) {
	switch op {
	case "fchdir":
		fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		return true, unix.Fchdir(fd)
	case "tmpfile-link": // tmpfile-link DIR NEWPATH: O_TMPFILE in DIR, then give it a name
		fd, err := unix.Open(a[0], unix.O_TMPFILE|unix.O_WRONLY, 0o644)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		unix.Write(fd, []byte("tmp\n"))
		return true, unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, a[1], unix.AT_SYMLINK_FOLLOW)
	case "rename-exchange":
		return true, unix.Renameat2(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], unix.RENAME_EXCHANGE)
	case "rename-noreplace":
		return true, unix.Renameat2(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], unix.RENAME_NOREPLACE)
	case "openat2": // openat2 PATH: O_WRONLY|O_CREAT with RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS
		fd, err := unix.Openat2(unix.AT_FDCWD, a[0], &unix.OpenHow{
			Flags: unix.O_WRONLY | unix.O_CREAT, Mode: 0o644,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return true, err
		}
		return true, unix.Close(fd)
	case "proc-fd-write": // proc-fd-write PATH: open PATH read-only, reopen it for writing via /proc/self/fd
		fd, err := unix.Open(a[0], unix.O_RDONLY, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		return true, openWrite(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_WRONLY|unix.O_APPEND)
	case "dirfd-rename": // dirfd-rename DIR NEWDIR NAME: hold DIR open, rename it, create NAME in it
		dfd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(dfd)
		if err := unix.Rename(a[0], a[1]); err != nil {
			return true, err
		}
		fd, err := unix.Openat(dfd, a[2], unix.O_WRONLY|unix.O_CREAT, 0o644)
		if err != nil {
			return true, err
		}
		return true, unix.Close(fd)
	case "threads": // threads N DIR: N threads each create DIR/tN.txt at once
		n, err := strconv.Atoi(a[0])
		if err != nil {
			return true, err
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
				return true, err
			}
		}
		return true, nil
	case "repeat": // repeat N PATH: N write-only opens of an existing PATH
		n, err := strconv.Atoi(a[0])
		if err != nil {
			return true, err
		}
		for range n {
			fd, err := unix.Open(a[1], unix.O_WRONLY, 0)
			if err != nil {
				return true, err
			}
			unix.Close(fd)
		}
		return true, nil
	case "chmod":
		return true, unix.Chmod(a[0], 0o600)
	case "fchmod":
		fd, err := unix.Open(a[0], unix.O_RDONLY, 0)
		if err != nil {
			return true, err
		}
		defer unix.Close(fd)
		return true, unix.Fchmod(fd, 0o640)
	case "chown":
		return true, unix.Lchown(a[0], os.Getuid(), os.Getgid())
	case "utimes":
		return true, unix.UtimesNano(a[0], []unix.Timespec{{Sec: 1}, {Sec: 1}})
	case "setxattr":
		return true, unix.Setxattr(a[0], "user.writewatch", []byte("1"), 0)
	case "memfd": // a memfd, a pipe and a socket, each written: no files
		fd, err := unix.MemfdCreate("writewatch", 0)
		if err != nil {
			return true, err
		}
		unix.Write(fd, []byte("x"))
		if err := openWrite(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_WRONLY); err != nil {
			return true, err
		}
		var p [2]int
		if err := unix.Pipe(p[:]); err != nil {
			return true, err
		}
		if err := openWrite(fmt.Sprintf("/proc/self/fd/%d", p[1]), unix.O_WRONLY); err != nil {
			return true, err
		}
		s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		if err != nil {
			return true, err
		}
		return true, unix.Close(s)
	case "uring-openat": // uring-openat PATH: create PATH through io_uring
		return true, uringOp(ioringOpOpenat, a[0])
	case "uring-mkdirat":
		return true, uringOp(ioringOpMkdirat, a[0])
	}
	return false, nil
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
