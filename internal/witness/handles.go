package witness

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inoLayout says where a filesystem keeps the inode number in its file
// handles. The kernel does not say; the witness learns it per filesystem
// by decoding the handle of a path it can stat (see learnLayout).
type inoLayout uint8

const (
	layoutUnknown  inoLayout = iota
	layoutIno32              // u32 inode first (FILEID_INO32_GEN: ext2/3/4, xfs)
	layoutIno64              // u64 inode first (FILEID_INO64_GEN, xfs's 64-bit inodes, btrfs)
	layoutGenIno64           // u32 generation, then the inode as two u32 halves (tmpfs)
)

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

// layoutKey is a handle's type and length: handles that share them share
// a layout on one filesystem.
type layoutKey struct {
	typ int32
	n   int
}

// learnLayout returns the layout that decodes h to ino, if one does.
func learnLayout(h []byte, ino uint64) inoLayout {
	for _, l := range []inoLayout{layoutIno64, layoutIno32, layoutGenIno64} {
		if l.ino(h) == ino {
			return l
		}
	}
	return layoutUnknown
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
	name := "/proc/self/fd/" + strconv.Itoa(fd)
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

const deletedSuffix = " (deleted)"

// lookupHandle turns h into a path through fs's mounts, trying each in
// turn: a path counts only when it names the same inode as the handle,
// which a mount whose root does not hold the object (a bind mount of a
// subdirectory), a mount over the path, or a rename in between would
// not. An object whose link count is 0 (removed, still open somewhere)
// yields the path it had, without the kernel's " (deleted)", and
// errStale. A handle that no longer opens yields errStale.
func (w *Witness) lookupHandle(fs *fsys, h handle) (string, error) {
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
			lastErr = errors.New("path names another file")
			continue
		}
		return p, nil
	}
	return "", lastErr
}
