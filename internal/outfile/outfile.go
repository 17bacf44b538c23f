// Package outfile writes the files a run's outputs go to (--json,
// --junit, --metrics-textfile, $GITHUB_STEP_SUMMARY) so that nothing the
// traced tree can plant redirects them:
//
//   - The file's own name is never followed through a symbolic link: a
//     file that replaces another is written to a temporary file in the
//     same directory and renamed over the name, which replaces whatever
//     is there (a link a test planted included) without following it;
//     a file that is appended to is opened with O_NOFOLLOW. A name that
//     is a symbolic link when writewatch starts is refused, unless it
//     leads to a character device or a FIFO (/dev/stdout, bash's
//     /dev/fd/63), which is opened then.
//   - The directory is opened once, before COMMAND starts, and every
//     later call is made relative to it: renaming it, or replacing it or
//     a directory above it by a link, during the run changes nothing.
//     Only a directory the run removed and made again (rm -rf build;
//     mkdir -p build/reports) is written in instead, found at the path
//     the directory had then, with every symbolic link of it resolved,
//     through no symbolic link (openat2's RESOLVE_NO_SYMLINKS).
//   - Everything is opened with the rights of the user writewatch writes
//     for (User: the one who invoked sudo), not root's, so a link leads
//     nowhere that user could not write anyway.
//   - A directory that the user COMMAND runs as can write but does not
//     own (/tmp, a shared group directory) is refused: others may plant
//     files there.
package outfile

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// User is a user the files are opened as, or that COMMAND runs as.
type User struct {
	UID, GID uint32
	Groups   []uint32
}

// Options say as whom a file is written, and for whom it must be safe.
type Options struct {
	// As is the user whose rights the files are opened and created with;
	// nil: writewatch's own.
	As *User
	// Command is the user COMMAND runs as, whose tests may plant files: a
	// directory it can write but does not own is refused. nil, or root
	// (who can write everywhere anyway): no check.
	Command *User
	// Mode is the new file's permissions; 0: 0666 less the umask, as
	// os.Create makes them.
	Mode os.FileMode
}

// File is an output file, checked and its directory opened before COMMAND
// starts, written when the run ends.
type File struct {
	path   string
	name   string
	dir    *os.File // the directory, O_PATH
	real   string   // its path when opened, symbolic links resolved; "" when unknown
	direct *os.File // a character device or FIFO the path names, opened at Open
	opts   Options
}

// Open checks that path can be written safely and opens its directory.
// The file itself is written later, by Replace; Open creates nothing it
// leaves behind.
func Open(path string, opts Options) (*File, error) {
	f := &File{path: path, opts: opts}
	err := asUser(opts.As, f.open)
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ErrIsDir is Open's error for a path that names a directory.
var ErrIsDir = errors.New("is a directory")

// ErrSharedDir is Open's error for a file in a directory that the user
// COMMAND runs as can write without owning it (/tmp).
var ErrSharedDir = errors.New("a shared directory")

func (f *File) open() error {
	if err := f.openDir(); err != nil {
		return err
	}
	fd := int(f.dir.Fd())
	name := f.name
	var st unix.Stat_t
	err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		// Said first: what the directory it is in is like does not matter.
		return ErrIsDir
	}
	if err := checkDir(fd, f.dir.Name(), f.opts.Command); err != nil {
		return err
	}
	switch {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return err
	case st.Mode&unix.S_IFMT == unix.S_IFREG:
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		// Followed only to a stream: a pipe, a terminal, /dev/null.
		if err := unix.Fstatat(fd, name, &st, 0); err != nil || !isStream(st.Mode) {
			return errors.New("is a symbolic link; writewatch writes a report only to a file of its own name, or through a link to a pipe or a device such as /dev/stdout")
		}
		return f.openDirect()
	case isStream(st.Mode):
		return f.openDirect()
	default:
		return errors.New("is not a regular file")
	}
	// The directory takes new files: make one, and take it away.
	tmp, err := f.createTemp(fd)
	if err != nil {
		return err
	}
	tmp.Close()
	return unix.Unlinkat(fd, filepath.Base(tmp.Name()), 0)
}

// openDir opens the directory the file's name is in; open and Append
// check it (checkDir).
func (f *File) openDir() error {
	clean := filepath.Clean(f.path)
	dir, name := filepath.Dir(clean), filepath.Base(clean)
	if name == "." || name == ".." || name == "/" {
		return ErrIsDir
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	f.dir, f.name, f.real = os.NewFile(uintptr(fd), dir), name, realPath(fd)
	return nil
}

// realPath is the path of the directory open at fd, as the kernel names
// it: every symbolic link resolved. "" when it cannot say.
func realPath(fd int) string {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(p) || strings.HasSuffix(p, " (deleted)") {
		return ""
	}
	return p
}

// target returns the directory to write in, and what closes it: the
// directory at the path the one opened at Open had then, when that is
// another directory now (the run removed it and made it again), reached
// through no symbolic link, and no shared directory (checkDir); else the
// one opened at Open.
func (f *File) target() (dir int, done func(), err error) {
	held, none := int(f.dir.Fd()), func() {}
	if f.real == "" {
		return held, none, nil
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, f.real, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		// Gone, or reached through a link now: the one opened, if it
		// is still there.
		return held, none, removed(held, f.real, err)
	}
	var now, was unix.Stat_t
	if unix.Fstat(fd, &now) != nil || unix.Fstat(held, &was) != nil || (now.Dev == was.Dev && now.Ino == was.Ino) {
		unix.Close(fd)
		return held, none, nil
	}
	if err := checkDir(fd, f.real, f.opts.Command); err != nil {
		unix.Close(fd)
		return 0, nil, err
	}
	return fd, func() { unix.Close(fd) }, nil
}

// isStream: a character device or a FIFO, written as it is.
func isStream(mode uint32) bool {
	return mode&unix.S_IFMT == unix.S_IFCHR || mode&unix.S_IFMT == unix.S_IFIFO
}

func (f *File) openDirect() error {
	fd, err := unix.Openat(int(f.dir.Fd()), f.name, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f.direct = os.NewFile(uintptr(fd), f.path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || !isStream(st.Mode) {
		return errors.New("changed while it was opened")
	}
	return nil
}

// checkDir refuses a directory that the user COMMAND runs as can write
// but does not own.
func checkDir(fd int, dir string, cmd *User) error {
	if cmd == nil || cmd.UID == 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Uid == cmd.UID || !writableBy(&st, cmd) {
		return nil
	}
	return fmt.Errorf("%w: %s belongs to uid %d, and uid %d, which COMMAND runs as, can write it: its tests could plant a file or link in the output's place; write it in a directory of that user's own", ErrSharedDir, dir, st.Uid, cmd.UID)
}

// writableBy says whether the permission bits let u add and remove names
// in the directory st describes.
func writableBy(st *unix.Stat_t, u *User) bool {
	switch {
	case st.Uid == u.UID:
		return st.Mode&0o300 == 0o300
	case st.Gid == u.GID || slices.Contains(u.Groups, st.Gid):
		return st.Mode&0o030 == 0o030
	}
	return st.Mode&0o003 == 0o003
}

// removed says why the directory opened at Open, held, cannot be
// written in, when it was removed and nothing can be written at its path
// real (openat2's err): nil while it is there.
func removed(held int, real string, err error) error {
	var st unix.Stat_t
	if unix.Fstat(held, &st) != nil || st.Nlink > 0 {
		return nil
	}
	if errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("%s was removed during the run, and a symbolic link is in its place or above it now: not followed", real)
	}
	return fmt.Errorf("%s was removed during the run: %w", real, err)
}

// createTemp makes a new file beside the output, in directory dir,
// hidden and with a name no reader of the directory (node_exporter reads
// *.prom) takes for it.
func (f *File) createTemp(dir int) (*os.File, error) {
	mode := uint32(0o666)
	if f.opts.Mode != 0 {
		mode = uint32(f.opts.Mode.Perm())
	}
	for range 100 {
		var b [8]byte
		rand.Read(b[:])
		name := "." + f.name + ".tmp" + hex.EncodeToString(b[:])
		fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create a file in %s: %w", f.dir.Name(), err)
		}
		tmp := os.NewFile(uintptr(fd), filepath.Join(f.dir.Name(), name))
		if f.opts.Mode != 0 {
			// Exactly Mode, whatever the umask.
			if err := tmp.Chmod(f.opts.Mode.Perm()); err != nil {
				tmp.Close()
				unix.Unlinkat(dir, name, 0)
				return nil, err
			}
		}
		return tmp, nil
	}
	return nil, fmt.Errorf("create a file in %s: every name tried was taken", f.dir.Name())
}

// Replace writes the file: whole, through a temporary file renamed over
// its name, so a reader sees the old file or the new one, never part of
// one; or, for a device or FIFO, straight into it.
func (f *File) Replace(write func(io.Writer) error) error {
	if f.direct != nil {
		w := bufio.NewWriter(f.direct)
		if err := write(w); err != nil {
			return err
		}
		return w.Flush()
	}
	return asUser(f.opts.As, func() error {
		dir, done, err := f.target()
		if err != nil {
			return err
		}
		defer done()
		tmp, err := f.createTemp(dir)
		if err != nil {
			return err
		}
		base := filepath.Base(tmp.Name())
		w := bufio.NewWriter(tmp)
		err = write(w)
		if err == nil {
			err = w.Flush()
		}
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = unix.Renameat(dir, base, dir, f.name)
		}
		if err != nil {
			unix.Unlinkat(dir, base, 0)
		}
		return err
	})
}

// Read hands read the file as it is now, when it is a regular file
// (never through a symbolic link); a missing file, or one of another
// kind, is io.EOF at once.
func (f *File) Read(read func(io.Reader) error) error {
	if f.direct != nil {
		return read(eof{})
	}
	var file *os.File
	err := asUser(f.opts.As, func() error {
		dir, done, err := f.target()
		if err != nil {
			return err
		}
		defer done()
		file, err = f.openExisting(dir, unix.O_RDONLY)
		return err
	})
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, errNotRegular) || errors.Is(err, unix.ELOOP):
		return read(eof{})
	case err != nil:
		return err
	}
	defer file.Close()
	return read(file)
}

type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }

var errNotRegular = errors.New("is not a regular file")

// openExisting opens the file by its name in directory dir, never
// through a symbolic link, never blocking on a FIFO, and only when it is
// a regular file.
func (f *File) openExisting(dir, flags int) (*os.File, error) {
	fd, err := unix.Openat(dir, f.name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return nil, err
	}
	file := os.NewFile(uintptr(fd), f.path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		file.Close()
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		file.Close()
		return nil, errNotRegular
	}
	return file, nil
}

// Append adds to the end of the file at path, as GitHub's step summary
// expects, checking and opening it only now: never through a symbolic
// link, only a regular file (created when missing).
func Append(path string, opts Options, write func(io.Writer) error) error {
	f := &File{path: path, opts: opts}
	defer f.Close()
	var file *os.File
	err := asUser(opts.As, func() error {
		if err := f.openDir(); err != nil {
			return err
		}
		if err := checkDir(int(f.dir.Fd()), f.dir.Name(), opts.Command); err != nil {
			return err
		}
		var err error
		file, err = f.openExisting(int(f.dir.Fd()), unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT)
		if errors.Is(err, unix.ELOOP) {
			return errors.New("is a symbolic link; writewatch does not append through one")
		}
		return err
	})
	if err != nil {
		return err
	}
	w := bufio.NewWriter(file)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes the directory, and the device or FIFO when one was opened.
func (f *File) Close() error {
	var errs []error
	for _, file := range []*os.File{f.dir, f.direct} {
		if file != nil {
			errs = append(errs, file.Close())
		}
	}
	return errors.Join(errs...)
}

// asUser runs fn with the file-system rights of u: on a thread of its own
// whose file-system uid and gid and supplementary groups are u's (which
// also drops the capabilities that bypass file permissions). The thread
// is never unlocked: it ends with fn, and the runtime's other threads keep
// writewatch's own identity. A nil u runs fn as it is.
func asUser(u *User, fn func() error) error {
	if u == nil {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := takeFS(u); err != nil {
			errc <- fmt.Errorf("act as uid %d: %w", u.UID, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// takeFS sets this thread's groups, file-system gid and file-system uid
// to u's: raw syscalls, which act on the calling thread only (unlike
// syscall.Setgroups, which changes every thread).
func takeFS(u *User) error {
	groups := u.Groups
	if len(groups) == 0 {
		groups = []uint32{u.GID}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(&groups[0])), 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	// setfsgid and setfsuid return the previous id and no error: asking
	// again with an invalid id (-1) returns the current one.
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(u.GID), 0, 0)
	if cur, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0); uint32(cur) != u.GID {
		return fmt.Errorf("setfsgid(%d) left %d", u.GID, cur)
	}
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(u.UID), 0, 0)
	if cur, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0); uint32(cur) != u.UID {
		return fmt.Errorf("setfsuid(%d) left %d", u.UID, cur)
	}
	return nil
}
