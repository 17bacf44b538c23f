package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Kind is what happened to a path.
type Kind string

const (
	Created  Kind = "created"  // nothing was there; now something is
	Modified Kind = "modified" // a file's contents (or a symlink's target) changed
	Attrib   Kind = "attrib"   // its mode, owner, times or extended attributes changed
	Removed  Kind = "removed"  // it was there; now nothing is
	Replaced Kind = "replaced" // it was there; now another file (or an emptied directory) is
	Moved    Kind = "moved"    // a directory renamed from From, with what was in it
)

// File is what a path held, before the run or as the sandbox has it.
type File struct {
	Type   string      `json:"type"` // "file", "dir", "symlink", or another kind's name
	Mode   fs.FileMode `json:"mode"`
	UID    uint32      `json:"uid"`
	GID    uint32      `json:"gid"`
	Size   int64       `json:"size"`
	MTime  time.Time   `json:"mtime"`
	Target string      `json:"target,omitempty"` // a symlink's
}

// Change is one path the sandbox holds otherwise than the real
// filesystem does: found in an overlay's upper layer, and compared with
// the real file.
type Change struct {
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// Before is the real file, nil when there was none; After what the
	// sandbox holds, nil when it removed it.
	Before *File `json:"before,omitempty"`
	After  *File `json:"after,omitempty"`
	// From is where a Moved directory was.
	From string `json:"from,omitempty"`
	// Allowed: the allowlist allows it (it is applied, not reported).
	Allowed bool `json:"allowed,omitempty"`
	// upper is where the sandbox keeps it, for Apply and the diff.
	upper string
	// sameData: a file whose contents were compared and found the same
	// (an Attrib change), so Detail hashes them once.
	sameData bool
}

// Changes lists what changed in the sandbox's overlays, by path: every
// entry of an upper layer that differs from the real file (a copy-up
// that changed nothing, as an open for writing that wrote nothing, is
// none). A directory emptied and made again (opaque), or moved, stands
// for what was under it.
func (sb *Sandbox) Changes() ([]Change, error) {
	var w walker
	for _, l := range sb.layers {
		w.layer = l.point
		w.walk(sb.upper(l), l.point, l.point, false)
	}
	for i := range w.out {
		if sb.plan.Allow != nil {
			w.out[i].Allowed = sb.plan.Allow.Allowed(w.out[i].Path)
		}
	}
	slices.SortFunc(w.out, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return w.out, errors.Join(w.errs...)
}

// walker walks an upper layer.
type walker struct {
	layer string // the overlay's mount point
	out   []Change
	errs  []error
	bufs  *[2][]byte // sameContents's, allocated once
}

// walk compares the entries of upper directory up, which stands at path
// in the sandbox, with those of the real directory real (path itself,
// or, under a moved directory, where it was); with none, with nothing
// (under a directory made anew).
func (w *walker) walk(up, path, real string, none bool) {
	entries, err := os.ReadDir(up)
	if err != nil {
		w.errs = append(w.errs, err)
		return
	}
	for _, e := range entries {
		u, p, r := filepath.Join(up, e.Name()), filepath.Join(path, e.Name()), filepath.Join(real, e.Name())
		c, descend := w.compare(u, r, none)
		// Only a directory has a redirect: the layers are mounted with
		// metacopy off, so a file renamed is copied up whole.
		if e.IsDir() && !none {
			if from := w.redirect(u, filepath.Dir(r)); from != "" {
				c, descend, r = &Change{Kind: Moved, From: from}, true, from
			}
		}
		if c != nil {
			c.Path, c.upper = p, u
			w.out = append(w.out, *c)
		}
		if descend && e.IsDir() {
			// Under a directory made here, or made again, nothing was.
			w.walk(u, p, r, none || c != nil && (c.Kind == Created || c.Kind == Replaced))
		}
	}
}

// redirect is where an upper directory was moved from (its
// trusted.overlay.redirect: an absolute path in the overlay, or a name
// in the same directory), "" when it was not.
func (w *walker) redirect(up, realDir string) string {
	buf := make([]byte, 4096)
	n, err := unix.Lgetxattr(up, "trusted.overlay.redirect", buf)
	if err != nil || n == 0 {
		return ""
	}
	to := string(buf[:n])
	if strings.HasPrefix(to, "/") {
		return filepath.Join(w.layer, to)
	}
	return filepath.Join(realDir, to)
}

// compare compares the upper layer's entry up with the real file at
// real (none: with nothing). descend: what is under up is to be compared
// too (a directory that was there, or one made anew).
func (w *walker) compare(up, real string, none bool) (c *Change, descend bool) {
	var ust unix.Stat_t
	if unix.Lstat(up, &ust) != nil {
		return nil, false
	}
	before, berr := (*File)(nil), error(fs.ErrNotExist)
	if !none {
		before, berr = stat(real)
	}
	if isWhiteout(&ust) {
		if berr != nil {
			return nil, false
		}
		return &Change{Kind: Removed, Before: before}, false
	}
	after := fileOf(up, &ust)
	switch {
	case berr != nil:
		return &Change{Kind: Created, After: after}, true
	case before.Type != after.Type:
		return &Change{Kind: Replaced, Before: before, After: after}, true
	case after.Type == "dir" && opaque(up):
		// Emptied and made again: its old entries are gone, and what is
		// under it now is new.
		return &Change{Kind: Replaced, Before: before, After: after}, true
	}
	modified, same := w.modified(real, up, before, after)
	switch {
	case modified:
		return &Change{Kind: Modified, Before: before, After: after}, false
	case before.Mode != after.Mode || before.UID != after.UID || before.GID != after.GID ||
		(after.Type != "dir" && !before.MTime.Equal(after.MTime)) || !sameXattrs(real, up):
		return &Change{Kind: Attrib, Before: before, After: after, sameData: same}, true
	}
	return nil, true
}

// modified says a file's contents, or a symlink's target, differ between
// the real file and the upper layer's, both of one type; same, that a
// file's were read and found the same.
func (w *walker) modified(real, up string, before, after *File) (modified, same bool) {
	switch after.Type {
	case "file":
		// The sizes first: a file of another size changed, unread.
		same = before.Size == after.Size && w.sameContents(real, up, after.Size)
		return !same, same
	case "symlink":
		return before.Target != after.Target, false
	}
	return false, false
}

// stat describes the real file at p.
func stat(p string) (*File, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return nil, err
	}
	return fileOf(p, &st), nil
}

func fileOf(p string, st *unix.Stat_t) *File {
	f := &File{Mode: fs.FileMode(st.Mode & 0o7777), UID: st.Uid, GID: st.Gid, Size: st.Size, MTime: time.Unix(st.Mtim.Unix())}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		f.Type = "file"
	case unix.S_IFDIR:
		f.Type, f.Size = "dir", 0
	case unix.S_IFLNK:
		f.Type = "symlink"
		f.Target, _ = os.Readlink(p)
	case unix.S_IFIFO:
		f.Type = "fifo"
	case unix.S_IFSOCK:
		f.Type = "socket"
	case unix.S_IFCHR:
		f.Type = "char device"
	case unix.S_IFBLK:
		f.Type = "block device"
	}
	return f
}

// isWhiteout says an upper entry is an overlay's whiteout: a character
// device 0:0, which hides the lower file of its name.
func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// opaque says an upper directory is opaque: it replaced the lower one,
// whose entries it hides.
func opaque(dir string) bool {
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(dir, "trusted.overlay.opaque", buf)
	return err == nil && n > 0 && buf[0] == 'y'
}

// sameContents says files a and b, both size bytes long when they were
// looked at, hold the same bytes: both read once, side by side, up to the
// first difference. False when either cannot be read, or ends early: a
// change is never hidden.
func (w *walker) sameContents(a, b string, size int64) bool {
	if size == 0 {
		return true
	}
	fa, err := openRead(a)
	if err != nil {
		return false
	}
	defer unix.Close(fa)
	fb, err := openRead(b)
	if err != nil {
		return false
	}
	defer unix.Close(fb)
	if w.bufs == nil {
		w.bufs = &[2][]byte{make([]byte, 64<<10), make([]byte, 64<<10)}
	}
	for left := size; left > 0; {
		n := int(min(left, int64(len(w.bufs[0]))))
		ba, bb := w.bufs[0][:n], w.bufs[1][:n]
		if !readFull(fa, ba) || !readFull(fb, bb) || !bytes.Equal(ba, bb) {
			return false
		}
		left -= int64(n)
	}
	return true
}

// openRead opens a regular file to read it, as a bare descriptor (no
// os.File, whose poller costs a call more): not a symlink, and not a FIFO
// put in its place, which would block.
func openRead(p string) (int, error) {
	for {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readFull fills p from fd; false when it cannot.
func readFull(fd int, p []byte) bool {
	for len(p) > 0 {
		n, err := unix.Read(fd, p)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return false
		}
		p = p[n:]
	}
	return true
}

// fdReader reads a bare descriptor.
type fdReader int

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(r), p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// contents reads the file at p, of about size bytes, once: the SHA-256
// of its contents ("" when it cannot be read), and the contents
// themselves when they are text (at most maxDiffBytes, UTF-8, without NUL
// bytes).
func contents(p string, size int64) (sum string, text []byte, isText bool) {
	fd, err := openRead(p)
	if err != nil {
		return "", nil, false
	}
	defer unix.Close(fd)
	var buf bytes.Buffer
	buf.Grow(int(min(max(size, 0), maxDiffBytes)) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(fdReader(fd), maxDiffBytes+1)); err != nil {
		return "", nil, false
	}
	data := buf.Bytes()
	h := sha256.New()
	h.Write(data)
	if len(data) > maxDiffBytes {
		if _, err := io.Copy(h, fdReader(fd)); err != nil {
			return "", nil, false
		}
		return hex.EncodeToString(h.Sum(nil)), nil, false
	}
	return hex.EncodeToString(h.Sum(nil)), data, utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// sameXattrs says two files have the same extended attributes, but for
// the overlay's own (trusted.overlay.*).
func sameXattrs(a, b string) bool {
	xa, xb := xattrs(a), xattrs(b)
	if len(xa) != len(xb) {
		return false
	}
	for k, v := range xa {
		if w, ok := xb[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

func xattrs(p string) map[string][]byte {
	out := map[string][]byte{}
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil || n <= 0 {
		return out
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if name == "" || strings.HasPrefix(name, "trusted.overlay.") {
			continue
		}
		val := make([]byte, 4096)
		if m, err := unix.Lgetxattr(p, name, val); err == nil {
			out[name] = val[:m]
		}
	}
	return out
}
