package witness

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/mountinfo"
	"github.com/writewatch/writewatch/tracer"
)

// File contents on demand. When COMMAND does not run under --enforce
// (whose trampoline, writewatch itself, must run on before the run reads
// any record), the witness starts without the writes to the contents of
// files, which cost every writer on a watched filesystem: every file the
// tree opens for writing is judged from its record, so contents matter
// only for a file that comes from outside the tree, or is reached by a
// path the tree makes its own. StartWatch watches the files COMMAND
// inherits one by one (inherited), and all contents when a mount already
// leads into a watched filesystem by a second path (aliased); the kernel
// side pauses a process of the tree that makes a call after which it may
// hold another, or, with privileges, one that may lead paths elsewhere
// (a mount, chroot: bpf/lib/contents.h), and WatchContents watches every
// file's contents from then on, before the process is resumed
// (Contents).

// contentsLater says the witness watches contents on demand and does not
// yet.
func (w *Watch) contentsLater() bool { return w.Active() && w.lazy }

// inherited watches the files COMMAND inherits, open as fds, before it
// starts: each file open for writing alone (WatchFile), unless
// the allowlist allows it. A descriptor through which other files may
// come (a Unix socket, an anonymous inode such as an io_uring or a
// pidfd), or a file the witness cannot watch alone, makes it watch all
// contents from the start; so does a kernel that cannot be told
// (Options.Later). A file open for writing on a filesystem the witness
// does not watch, other than COMMAND's standard streams, makes the run
// incomplete.
func (w *Watch) inherited(fds []int) {
	if !w.contentsLater() {
		return
	}
	// Every descriptor, also past one that asks for all contents: one on
	// a filesystem the witness does not watch makes the run incomplete.
	why := ""
	for _, fd := range fds {
		if r := w.inherit(fd); why == "" {
			why = r
		}
	}
	if why != "" {
		w.WatchContents(why)
		return
	}
	if w.opts.Later != nil {
		if err := w.opts.Later(); err != nil {
			w.WatchContents(fmt.Sprintf("the start (%v)", err))
		}
	}
}

// Contents takes a record that asks for file contents to be watched
// (tracer.KindContents, or an exec record with ExecContents): it watches
// them, then resumes the process the kernel paused, unless it is a Go
// test binary, which runners.FollowGoTest resumes.
func (w *Watch) Contents(ev *tracer.Event) {
	if ev.Kind != tracer.KindContents && ev.Flags&tracer.ExecContents == 0 {
		return
	}
	w.WatchContents(ev.Why.String())
	if ev.Kind == tracer.KindContents && ev.Flags&tracer.ContentsStopped != 0 || ev.Kind == tracer.KindExec && ev.Flags&tracer.ExecStopped == 0 {
		ev.Resume()
	}
}

// aliased watches all contents from the start when this mount namespace,
// COMMAND's, already has a mount of a directory or file inside a watched
// filesystem (a bind mount: its root is not the filesystem's): through
// it, a path the allowlist allows may lead to a protected file, and the
// records judge the path. mounts are the namespace's (mountinfo.Read).
func (w *Watch) aliased(mounts []mountinfo.Mount) {
	if !w.contentsLater() {
		return
	}
	watched := map[uint64]bool{}
	for _, fs := range w.w.Filesystems() {
		watched[fs.Dev] = fs.Err == nil
	}
	for _, m := range mounts {
		if m.Root != "/" && watched[m.Dev] {
			w.WatchContents("a bind mount at " + m.Point)
			return
		}
	}
}

// inherit watches one inherited descriptor; it says why all contents
// must be watched instead, or "".
func (w *Watch) inherit(fd int) string {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return ""
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err == nil && fl&unix.O_ACCMODE == unix.O_RDONLY {
			return ""
		}
		path, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err == nil && w.opts.Allow != nil && w.opts.Allow.Allowed(path) {
			return ""
		}
		err = w.w.WatchFile(fd)
		switch {
		case errors.Is(err, ErrNotWatched) && fd > 2:
			// Watching every watched filesystem would not see it: what
			// COMMAND writes through it goes unseen.
			w.Incompletely(fmt.Sprintf("COMMAND inherited %s open for writing (descriptor %d), on a filesystem the witness does not watch: writes through it go unseen", path, fd))
		case err != nil:
			return "an inherited file it cannot watch alone"
		}
	case unix.S_IFSOCK:
		if d, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || d == unix.AF_UNIX {
			return "an inherited Unix socket"
		}
	case unix.S_IFIFO, unix.S_IFCHR, unix.S_IFBLK, unix.S_IFDIR:
	default:
		return "an inherited descriptor of no file (an io_uring, a pidfd or the like)"
	}
	return ""
}

// WatchContents makes the witness watch the contents of every file from
// now on, once, then tells the kernel (Options.Watched), which pauses no
// process for them any more; why says what asked for it, for the report.
// A failure makes the run incomplete: what was written through files
// from outside the tree may go unseen. Once the final Sync has returned
// (Finish), the witness has let go of its marks and reports no more
// changes: a call then (a survivor's) asks for nothing that counts.
func (w *Watch) WatchContents(why string) {
	if !w.contentsLater() {
		return
	}
	w.lazy = false
	w.info.ContentsSince = why
	if err := w.w.WatchContents(); err != nil && !errors.Is(err, ErrClosed) {
		w.Incompletely(fmt.Sprintf("the filesystem witness could not watch the contents of files after %s: %v", why, err))
	}
	if w.opts.Watched == nil {
		return
	}
	if err := w.opts.Watched(); err != nil {
		w.Incompletely(fmt.Sprintf("the kernel could not be told that the contents of files are watched: %v", err))
	}
}

// InitialPIDNamespace says writewatch runs in the initial PID namespace
// (its inode number is fixed: PROC_PID_INIT_INO), for
// Options.InitialPIDNS.
func InitialPIDNamespace() bool {
	ns, err := os.Readlink("/proc/self/ns/pid")
	return err == nil && ns == "pid:[4026531836]"
}
