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
	SHA256 string      `json:"sha256,omitempty"` // a file's contents
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
		c, descend := compare(u, r, none)
		if from := w.redirect(u, filepath.Dir(r)); from != "" && !none {
			c, descend, r = &Change{Kind: Moved, From: from}, true, from
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
func compare(up, real string, none bool) (c *Change, descend bool) {
	var ust unix.Stat_t
	if unix.Lstat(up, &ust) != nil {
		return nil, false
	}
	before, berr := stat(real)
	if none {
		before, berr = nil, fs.ErrNotExist
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
	if after.Type == "file" && (before.Size != after.Size || hash(real) != hash(up)) {
		before.SHA256, after.SHA256 = hash(real), hash(up)
		return &Change{Kind: Modified, Before: before, After: after}, false
	}
	if after.Type == "symlink" && before.Target != after.Target {
		return &Change{Kind: Modified, Before: before, After: after}, false
	}
	if before.Mode != after.Mode || before.UID != after.UID || before.GID != after.GID ||
		(after.Type != "dir" && !before.MTime.Equal(after.MTime)) || !sameXattrs(real, up) {
		return &Change{Kind: Attrib, Before: before, After: after}, true
	}
	return nil, true
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

// hash is the SHA-256 of a file's contents, "" when it cannot be read.
func hash(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
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
