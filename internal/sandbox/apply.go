package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Apply makes the changes the allowlist allows (Change.Allowed) on the
// real filesystem, as the sandbox holds them: what an allowed glob, or
// an allowed path missing at the start, let COMMAND write there. Each
// file is replaced atomically (written beside it, then renamed over it),
// and no symlink on the way is followed: a path whose directories are
// not the real ones any more is left, and said. Made and changed paths
// go first, parents before children; removals last, children first.
func (sb *Sandbox) Apply(changes []Change) error {
	var errs []error
	var copied []string // directories copied whole: what is under them is done
	for _, c := range changes {
		if !c.Allowed || c.Kind == Removed || slices.ContainsFunc(copied, func(d string) bool { return within(c.Path, d) && c.Path != d }) {
			continue
		}
		whole, err := sb.apply(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", c.Path, c.Kind, err))
		}
		if whole {
			copied = append(copied, c.Path)
		}
	}
	for i := len(changes) - 1; i >= 0; i-- {
		if c := changes[i]; c.Allowed && c.Kind == Removed {
			if err := removeReal(c.Path); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s): %w", c.Path, c.Kind, err))
			}
		}
	}
	return errors.Join(errs...)
}

// apply makes one allowed change other than a removal; whole says it
// copied a directory with everything under it.
func (sb *Sandbox) apply(c Change) (whole bool, err error) {
	src := sb.Root() + c.Path
	switch c.Kind {
	case Attrib:
		return false, setAttrs(c.Path, src)
	case Created, Modified, Replaced, Moved:
		st, err := os.Lstat(src)
		if err != nil {
			return false, err
		}
		if st.IsDir() && c.Kind == Created {
			return false, mkdirReal(c.Path, src)
		}
		return st.IsDir(), replaceReal(c.Path, src)
	}
	return false, nil
}

// parent opens the real directory of path, following no symlink on the
// way.
func parent(path string) (*os.File, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, filepath.Dir(path), &unix.OpenHow{
		Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("its directory: %w", err)
	}
	return os.NewFile(uintptr(fd), filepath.Dir(path)), nil
}

// dirPath is a path to the directory dir was opened as, for the calls
// that take paths.
func dirPath(dir *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", dir.Fd()) }

// mkdirReal makes directory path as src is (its mode and owner).
func mkdirReal(path, src string) error {
	dir, err := parent(path)
	if err != nil {
		return err
	}
	defer dir.Close()
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	name := filepath.Base(path)
	if err := unix.Mkdirat(int(dir.Fd()), name, uint32(st.Mode().Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return copyAttrs(filepath.Join(dirPath(dir), name), src)
}

// replaceReal puts a copy of src (a file, a symlink or a whole
// directory) at path: made beside it under a temporary name, then
// renamed over it (a directory: the old one moved aside first, then
// removed).
func replaceReal(path, src string) error {
	dir, err := parent(path)
	if err != nil {
		return err
	}
	defer dir.Close()
	d := dirPath(dir)
	tmp := fmt.Sprintf(".writewatch-%d-%s", time.Now().UnixNano(), filepath.Base(path))
	if err := copyTree(filepath.Join(d, tmp), src); err != nil {
		os.RemoveAll(filepath.Join(d, tmp))
		return err
	}
	name := filepath.Base(path)
	if err := unix.Renameat2(int(dir.Fd()), tmp, int(dir.Fd()), name, unix.RENAME_EXCHANGE); err == nil {
		return os.RemoveAll(filepath.Join(d, tmp)) // the old one, now under the temporary name
	}
	if err := unix.Renameat(int(dir.Fd()), tmp, int(dir.Fd()), name); err != nil {
		os.RemoveAll(filepath.Join(d, tmp))
		return err
	}
	return nil
}

// copyTree copies src to dst, which does not exist: a file, a symlink,
// or a directory with everything under it, each with its mode, owner
// and times.
func copyTree(dst, src string) error {
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case st.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, dst); err != nil {
			return err
		}
	case st.IsDir():
		if err := os.Mkdir(dst, st.Mode().Perm()); err != nil {
			return err
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := copyTree(filepath.Join(dst, e.Name()), filepath.Join(src, e.Name())); err != nil {
				return err
			}
		}
	case st.Mode().IsRegular():
		if err := copyFile(dst, src, st.Mode().Perm()); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: not a file, a directory or a symlink", src)
	}
	return copyAttrs(dst, src)
}

func copyFile(dst, src string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return errors.Join(out.Sync(), out.Close())
}

// copyAttrs gives dst src's owner, mode and times (not following a
// symlink at dst).
func copyAttrs(dst, src string) error {
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		return err
	}
	if err := unix.Lchown(dst, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	if err := unix.Fchmodat(unix.AT_FDCWD, dst, st.Mode&0o7777, 0); err != nil {
		return err
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	return unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// setAttrs gives the real path src's owner, mode and times.
func setAttrs(path, src string) error {
	dir, err := parent(path)
	if err != nil {
		return err
	}
	defer dir.Close()
	return copyAttrs(filepath.Join(dirPath(dir), filepath.Base(path)), src)
}

// removeReal removes the real path, with what is under it.
func removeReal(path string) error {
	dir, err := parent(path)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer dir.Close()
	err = os.RemoveAll(filepath.Join(dirPath(dir), filepath.Base(path)))
	if err != nil && strings.Contains(err.Error(), "no such file") {
		return nil
	}
	return err
}
