package witness

import (
	"encoding/binary"
	"errors"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inoLayout says where a file handle keeps the inode number. The kernel
// does not say: the layouts below are those of the handle types of
// include/linux/exportfs.h and of the filesystems that define their own,
// and the witness trusts them on a filesystem only once it has checked
// one against a path it can stat (fsys.trusted).
type inoLayout uint8

const (
	layoutUnknown  inoLayout = iota
	layoutIno32              // u32 inode, u32 generation (FILEID_INO32_GEN: ext2/3/4, xfs without inode64)
	layoutIno64              // u64 inode first (FILEID_INO64_GEN: xfs, and the generic encoder; btrfs's objectid)
	layoutGenIno64           // u32 generation, then the inode as two u32 halves (tmpfs, as type 1)
)

// layoutOf is the layout of a handle of type typ and n bytes.
func layoutOf(typ int32, n int) inoLayout {
	switch {
	case typ == 1 && n == 8, typ == 2 && (n == 12 || n == 16):
		return layoutIno32
	case typ == 1 && n == 12:
		return layoutGenIno64
	case (typ == 0x81 || typ == 0x82) && n >= 12,
		(typ == 0x4d || typ == 0x4e || typ == 0x4f) && n >= 20:
		return layoutIno64
	}
	return layoutUnknown
}

func (l inoLayout) ino(b []byte) uint64 {
	ne := binary.NativeEndian
	switch {
	case l == layoutIno32 && len(b) >= 4:
		return uint64(ne.Uint32(b))
	case l == layoutIno64 && len(b) >= 8:
		return ne.Uint64(b)
	case l == layoutGenIno64 && len(b) >= 12:
		return uint64(ne.Uint32(b[4:])) | uint64(ne.Uint32(b[8:]))<<32
	}
	return 0
}

// handleKey is a handle as a string: its type, then its bytes. It keys
// the caches and is Event.Handle.
func handleKey(buf []byte, h handle) []byte {
	buf = binary.NativeEndian.AppendUint32(buf[:0], uint32(h.typ))
	return append(buf, h.bytes...)
}

// openByHandle opens h on the filesystem of mountFD (open_by_handle_at).
// buf is scratch for struct file_handle.
func openByHandle(mountFD int, h handle, flags int, buf []byte) (int, []byte, error) {
	ne := binary.NativeEndian
	buf = ne.AppendUint32(buf[:0], uint32(len(h.bytes)))
	buf = ne.AppendUint32(buf, uint32(h.typ))
	buf = append(buf, h.bytes...)
	fd, _, errno := unix.Syscall(unix.SYS_OPEN_BY_HANDLE_AT, uintptr(mountFD),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(flags))
	if errno != 0 {
		return -1, buf, errno
	}
	return int(fd), buf, nil
}

// readFdLink reads /proc/self/fd/N, growing buf as needed.
func readFdLink(fd int, buf []byte) (string, []byte, error) {
	name := fdPath(fd)
	for {
		n, err := unix.Readlink(name, buf[:cap(buf)])
		if err != nil {
			return "", buf, err
		}
		if n < cap(buf) {
			return string(buf[:n]), buf, nil
		}
		buf = make([]byte, 2*cap(buf))
	}
}

// errStale means a handle names an object that no longer exists.
var errStale = errors.New("stale file handle")

// errMoved means the path found for a handle named another file by the
// time it was checked: the object (or a directory above it) was renamed
// or removed in between.
var errMoved = errors.New("path names another file")

// lookupTries is how often lookupHandle looks again after errMoved: a
// rename or removal in between is seen the next time (a new path, or
// errStale).
const lookupTries = 3

const deletedSuffix = " (deleted)"

// lookupHandle turns h into a path through fs's mounts, trying each in
// turn: a path counts only when it names the same inode as the handle,
// which a mount whose root does not hold the object (a bind mount of a
// subdirectory), a mount over the path, or a rename in between would
// not. An object whose link count is 0 (removed, still open somewhere)
// yields the path it had, without the kernel's " (deleted)", and
// errStale. A handle that no longer opens yields errStale.
//
// open_by_handle_at fails with ENOMEM, not ESTALE, for an object whose
// inode the kernel is evicting (a removed file, seen here as a burst of
// ENOMEM for removed files' link-count events): a handle that still
// fails that way after lookupTries is stale.
func (w *Witness) lookupHandle(fs *fsys, h handle) (p string, err error) {
	for range lookupTries {
		p, err = w.lookupOnce(fs, h)
		if errors.Is(err, unix.ENOMEM) {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if !errors.Is(err, errMoved) {
			return p, err
		}
	}
	if errors.Is(err, unix.ENOMEM) {
		return "", errStale
	}
	return p, err
}

func (w *Witness) lookupOnce(fs *fsys, h handle) (string, error) {
	w.stats.resolutions.Add(1)
	var lastErr error = unix.ENOENT
	for _, m := range fs.mounts {
		var fd int
		var err error
		fd, w.fhBuf, err = openByHandle(m.fd, h, unix.O_PATH|unix.O_CLOEXEC, w.fhBuf)
		if err == unix.ESTALE {
			return "", errStale
		}
		if err != nil {
			lastErr = err
			continue
		}
		var p string
		p, w.linkBuf, err = readFdLink(fd, w.linkBuf)
		var st unix.Stat_t
		if err == nil {
			err = unix.Fstat(fd, &st)
		}
		unix.Close(fd)
		if err != nil {
			lastErr = err
			continue
		}
		if st.Nlink == 0 {
			return strings.TrimSuffix(p, deletedSuffix), errStale
		}
		var at unix.Stat_t
		if !strings.HasPrefix(p, "/") || unix.Fstatat(unix.AT_FDCWD, p, &at, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			at.Dev != st.Dev || at.Ino != st.Ino {
			lastErr = errMoved
			continue
		}
		return p, nil
	}
	return "", lastErr
}
