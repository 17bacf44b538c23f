package policy

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/writewatch/writewatch/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// inode is what planning needs to know of a path: the inode it leads to,
// symbolic links followed, as stat(2) reports it.
type inode struct {
	Dev, Ino uint64
	Dir      bool
	// Link says the path's last component is a symbolic link.
	Link bool
}

// listAt is how many of the paths looked up must lie in one directory
// before it is read as a whole instead of stat'ing each.
const listAt = 16

// inodes looks up many paths at once. stat(2) walks the whole path for
// each; a directory that holds many of the paths is instead read once,
// and its entries give their inode numbers (and whether they are
// directories or symbolic links), where the file system's directory
// entries are known to carry the inode numbers stat reports (ext2/3/4,
// xfs, tmpfs). Anything else (a symbolic link, a mount point, another
// file system, a directory that cannot be read) is stat'ed.
type inodes struct {
	want   map[string]int // directory -> how many paths looked up lie in it
	dirs   map[string]*listing
	reals  realDirs
	mounts map[string]bool // mount points, from mountinfo; nil until needed
}

type listing struct {
	ok   bool   // entries are usable
	real string // the directory, symbolic links resolved
	dev  uint64
	ents map[string]dirent
}

type dirent struct {
	ino uint64
	typ uint8
}

// newInodes prepares to look up paths (absolute, clean); others may be
// looked up too, stat'ed.
func newInodes(paths []string) *inodes {
	c := &inodes{want: map[string]int{}, dirs: map[string]*listing{}, reals: realDirs{}}
	for _, p := range paths {
		c.want[filepath.Dir(p)]++
	}
	return c
}

// stat returns the inode path leads to, or false when there is none.
func (c *inodes) stat(path string) (inode, bool) {
	dir, name := filepath.Dir(path), filepath.Base(path)
	if c != nil && path != "/" && c.want[dir] >= listAt {
		if l := c.list(dir); l.ok {
			e, found := l.ents[name]
			switch {
			case !found:
				return inode{}, false
			case (e.typ == unix.DT_REG || e.typ == unix.DT_DIR) && !c.isMount(filepath.Join(l.real, name)):
				return inode{Dev: l.dev, Ino: e.ino, Dir: e.typ == unix.DT_DIR}, true
			}
		}
	}
	return statPath(path)
}

// statPath is stat(2) of path, and lstat(2) to tell a symbolic link.
func statPath(path string) (inode, bool) {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return inode{}, false
	}
	in := inode{Dev: st.Dev, Ino: st.Ino, Dir: st.Mode&syscall.S_IFMT == syscall.S_IFDIR}
	var lst syscall.Stat_t
	if syscall.Lstat(path, &lst) == nil && lst.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		in.Link = true
	}
	return in, true
}

// Magic numbers (statfs f_type) of the file systems whose directory
// entries carry the inode numbers stat reports. (Not overlayfs, nor
// btrfs, whose subvolumes have st_dev of their own.)
var direntInoFS = map[int64]bool{
	unix.EXT4_SUPER_MAGIC: true, // also ext2 and ext3
	unix.XFS_SUPER_MAGIC:  true,
	unix.TMPFS_MAGIC:      true,
	unix.RAMFS_MAGIC:      true,
}

// list reads dir once.
func (c *inodes) list(dir string) *listing {
	if l, ok := c.dirs[dir]; ok {
		return l
	}
	l := &listing{}
	c.dirs[dir] = l
	l.real = c.reals.real(dir)
	fd, err := unix.Open(l.real, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return l
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	var fs unix.Statfs_t
	if unix.Fstat(fd, &st) != nil || unix.Fstatfs(fd, &fs) != nil || !direntInoFS[int64(fs.Type)] {
		return l
	}
	l.dev = st.Dev
	l.ents = map[string]dirent{}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			l.ents = nil
			return l
		}
		if n <= 0 {
			break
		}
		parseDirents(buf[:n], l.ents)
	}
	l.ok = true
	return l
}

// parseDirents adds the entries of a getdents64 buffer to ents.
func parseDirents(buf []byte, ents map[string]dirent) {
	// struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen, u8
	// d_type, char d_name[].
	for len(buf) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < 19 || reclen > len(buf) {
			return
		}
		name := buf[19:reclen]
		if i := strings.IndexByte(string(name), 0); i >= 0 {
			name = name[:i]
		}
		if s := string(name); s != "." && s != ".." {
			ents[s] = dirent{ino: binary.NativeEndian.Uint64(buf[0:8]), typ: buf[18]}
		}
		buf = buf[reclen:]
	}
}

// isMount reports whether path is a mount point: its directory entry
// names the directory it covers, not what is mounted there.
func (c *inodes) isMount(path string) bool {
	if c.mounts == nil {
		c.mounts = mountPoints()
	}
	return c.mounts[path]
}

// mountPoints are the mount points of this process's mount namespace.
func mountPoints() map[string]bool {
	m := map[string]bool{}
	mounts, _ := mountinfo.Read() // none when it cannot be read
	for _, mnt := range mounts {
		m[mnt.Point] = true
	}
	return m
}
