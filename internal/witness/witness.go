package witness

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/writewatch/writewatch/internal/mountinfo"
	"github.com/writewatch/writewatch/internal/phases"
	"golang.org/x/sys/unix"
)

// ErrNeedsRoot means the kernel refused to watch whole filesystems:
// FAN_MARK_FILESYSTEM needs CAP_SYS_ADMIN.
var ErrNeedsRoot = errors.New("watching whole filesystems needs CAP_SYS_ADMIN (root)")

// ErrUnsupported means the kernel has no fanotify directory events with
// file handles and names (FAN_REPORT_DFID_NAME, Linux 5.9).
var ErrUnsupported = errors.New("kernel lacks fanotify events with directory handles and names (Linux 5.9 or later)")

// ErrNothingWatched means none of the given paths' filesystems could be
// watched; the error says why for each.
var ErrNothingWatched = errors.New("no filesystem could be watched")

// ErrClosed is returned by Sync once the witness is closed.
var ErrClosed = errors.New("witness closed")

// ErrNotWatched means WatchFile's file is on a filesystem the witness
// does not watch (an overlay, a tmpfs no path asked for).
var ErrNotWatched = errors.New("its file is not on a watched filesystem")

// Options configure a Witness.
type Options struct {
	// Paths are the paths whose filesystems are watched, whole: every
	// change on such a filesystem, by any process, is an event.
	Paths []string
	// Handle receives each event, in the kernel's order, from one
	// goroutine. It must not call Sync or Close.
	Handle func(Event)
	// Wanted, when set, is asked about each event's pid before anything
	// else is done with it: events it declines are counted (Stats.Skipped)
	// but not resolved to paths nor handed to Handle. It is asked when
	// the event is read, which can be before whatever tells the caller
	// that the pid is of interest (a fork record from another source), so
	// it must decline only pids it is sure of.
	Wanted func(pid int32) bool
	// SyncDir is where the witness makes its private directory for Sync
	// barriers (default os.TempDir()). Its filesystem must support
	// fanotify's file handles; it need not be one of Paths'.
	SyncDir string
	// LimitedQueue leaves FAN_UNLIMITED_QUEUE out: the kernel then keeps
	// at most /proc/sys/fs/fanotify/max_queued_events events and reports
	// an overflow past that. For tests; a run wants every event.
	LimitedQueue bool
	// ContentsLater leaves the content events (FAN_MODIFY and
	// FAN_CLOSE_WRITE) out of the filesystem marks until WatchContents
	// is called: a filesystem-wide interest in them makes every write,
	// and every close after writing, on the filesystem take the
	// kernel's slow path, whoever makes it (see Cost in the package
	// documentation). Until then, creates, deletes, renames and
	// attribute changes are events, and contents only those of the
	// files WatchFile marks.
	ContentsLater bool
}

// Filesystem is one filesystem the witness was asked to watch.
type Filesystem struct {
	// Paths are the given paths that lie on it.
	Paths []string
	// Dev is its st_dev; Type its type as mountinfo names it.
	Dev  uint64
	Type string
	// Mounts are the mount points its handles are resolved through, in
	// the order they are tried: those of Paths first, then one that
	// mounts the filesystem's root.
	Mounts []string
	// Err is nil when it is watched, else why it is not.
	Err error
}

// Features are what the kernel let the witness use.
type Features struct {
	// TargetFID (FAN_REPORT_TARGET_FID, 5.17): create, delete and rename
	// events carry the object's handle too, so Ino and Handle are set on
	// them.
	TargetFID bool
	// Rename (FAN_RENAME, 5.17): a rename is one Rename event with both
	// names instead of a MoveFrom and a MoveTo.
	Rename bool
	// UnlimitedQueue (FAN_UNLIMITED_QUEUE): the kernel never drops an
	// event for lack of queue room.
	UnlimitedQueue bool
}

// Stats count what the witness did.
type Stats struct {
	Read        uint64 // records read from the kernel, Sync's own included
	Delivered   uint64 // events handed to Handle
	Skipped     uint64 // events Wanted declined
	Overflows   uint64 // queue overflows: the kernel lost events each time
	Unresolved  uint64 // delivered events with no path (Source Unresolved, or LastKnown without one)
	Resolutions uint64 // handles resolved through open_by_handle_at (cache misses)
}

type counters struct {
	read, delivered, skipped, overflows, unresolved, resolutions atomic.Uint64
}

// Witness watches whole filesystems through fanotify.
type Witness struct {
	opts     Options
	fd       int // the fanotify group
	stopFD   int // an eventfd that wakes the reader to stop
	hurryFD  int // an eventfd that cuts the reader's wait between batches short (Sync)
	features Features
	markMask uint64 // what the filesystem marks ask for once contents are watched
	fss      []*fsys
	byFsid   map[fsid]*fsys
	all      []*Filesystem
	self     int32
	// layers are the upper and work directories of the overlay mounts
	// (mountinfo.Mount.OverlayLayers); hiddenLayers: one of them is not
	// in this mount namespace (a container's root, its layers on the
	// host), so changes there cannot be named (Layer).
	layers       []string
	hiddenLayers bool

	syncDir    string
	syncFsid   fsid
	syncPrefix string
	syncSeq    atomic.Uint64
	mu         sync.Mutex
	waiters    map[string]*waiter

	// marksMu serializes the marks placed after New (WatchContents,
	// WatchFile, Ignore, IgnoreFile) with each other and with release,
	// which closes the descriptors they use.
	marksMu     sync.Mutex
	marksClosed bool
	// contents: WatchContents was called, or ContentsLater was not set;
	// ignore marks then hold the content events. contentsWatched: every
	// filesystem mark holds them too.
	contents        bool
	contentsWatched atomic.Bool
	// pending are the ignore marks placed without the content events,
	// for WatchContents to extend.
	pending []pendingIgnore

	done      chan struct{}
	err       error // why the reader stopped; read after done is closed
	closeOnce sync.Once
	closeErr  error

	stats counters
	seq   uint64
	// Scratch buffers of the reader goroutine.
	buf, fhBuf, linkBuf, keyBuf []byte
}

// fsys is a watched filesystem.
type fsys struct {
	info   *Filesystem
	fsid   fsid
	dev    uint64
	mounts []mountFD
	// markFD is an O_PATH descriptor of the path the filesystem mark was
	// placed through, for WatchContents to mark it again whatever became
	// of that path; contents says the mark holds the content events.
	markFD   int
	contents bool
	// trusted: the handle of every given path on fs decoded to its
	// inode (layoutOf), so Ino is decoded on fs.
	trusted bool
	// dirs maps a directory handle to its path; lastKnown keeps the last
	// path each directory handle had, for when it no longer opens. See
	// the package documentation for when dirs entries are dropped.
	dirs      map[string]string
	lastKnown map[string]string
	// layerDirs are directory handles that open but have no path here
	// while hiddenLayers: an overlay's layers (Layer).
	layerDirs map[string]struct{}
}

type mountFD struct {
	fd    int
	point string
}

// pendingIgnore is an ignore mark placed while contents were not
// watched: fd is an O_PATH descriptor of its object, flags and mask what
// to mark it with once they are.
type pendingIgnore struct {
	fd    int
	flags uint
	mask  uint64
}

// New watches the filesystems of opts.Paths. It returns ErrNeedsRoot
// (errors.Is) without CAP_SYS_ADMIN, ErrUnsupported on kernels without
// the events it needs, and ErrNothingWatched when no filesystem could be
// watched. A filesystem that cannot be watched while others can is
// listed by Filesystems with the reason.
func New(opts Options) (*Witness, error) {
	if opts.Handle == nil {
		return nil, errors.New("witness: Options.Handle is nil")
	}
	if len(opts.Paths) == 0 {
		return nil, fmt.Errorf("witness: %w: no paths given", ErrNothingWatched)
	}
	w := &Witness{
		opts:    opts,
		byFsid:  map[fsid]*fsys{},
		self:    int32(os.Getpid()),
		waiters: map[string]*waiter{},
		done:    make(chan struct{}),
		buf:     make([]byte, 256*1024),
		fhBuf:   make([]byte, 0, 160),
		linkBuf: make([]byte, 0, 4096),
		keyBuf:  make([]byte, 0, 160),
	}
	fd, err := w.initGroup()
	if err != nil {
		return nil, err
	}
	w.fd, w.stopFD, w.hurryFD = fd, -1, -1
	w.contents = !opts.ContentsLater
	w.contentsWatched.Store(w.contents)
	ok := false
	defer func() {
		if !ok {
			w.release()
		}
	}()
	if err := w.markAll(fd); err != nil {
		return nil, err
	}
	if err := w.makeSyncDir(fd, opts.SyncDir); err != nil {
		return nil, err
	}
	if w.stopFD, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("witness: eventfd: %w", err)
	}
	if w.hurryFD, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("witness: eventfd: %w", err)
	}
	ok = true
	go w.loop()
	return w, nil
}

// initGroup calls fanotify_init with the richest reporting the kernel
// accepts.
func (w *Witness) initGroup() (int, error) {
	base := unix.FAN_CLASS_NOTIF | unix.FAN_CLOEXEC | unix.FAN_NONBLOCK
	if !w.opts.LimitedQueue {
		base |= unix.FAN_UNLIMITED_QUEUE
	}
	for _, report := range []uint{unix.FAN_REPORT_DFID_NAME_TARGET, unix.FAN_REPORT_DFID_NAME | unix.FAN_REPORT_FID} {
		fd, err := unix.FanotifyInit(uint(base)|report, unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
		switch {
		case err == nil:
			w.features.TargetFID = report&unix.FAN_REPORT_TARGET_FID != 0
			w.features.UnlimitedQueue = base&unix.FAN_UNLIMITED_QUEUE != 0
			return fd, nil
		case err == unix.EPERM:
			return -1, fmt.Errorf("witness: fanotify_init: %w (%v)", ErrNeedsRoot, err)
		case err == unix.EINVAL:
			continue
		case err == unix.ENOSYS:
			return -1, fmt.Errorf("witness: fanotify_init: %w (%v)", ErrUnsupported, err)
		default:
			return -1, fmt.Errorf("witness: fanotify_init: %w", err)
		}
	}
	return -1, fmt.Errorf("witness: fanotify_init: %w", ErrUnsupported)
}

// Events every filesystem mark asks for; renames are added by markAll.
const baseMask = unix.FAN_CREATE | unix.FAN_DELETE | unix.FAN_ATTRIB |
	unix.FAN_CLOSE_WRITE | unix.FAN_MODIFY | unix.FAN_ONDIR

// contentMask are the content events, which ContentsLater defers.
const contentMask = unix.FAN_MODIFY | unix.FAN_CLOSE_WRITE

// fdPath names the object open as fd, for fanotify_mark: the kernel
// follows /proc/self/fd/N to the descriptor's own object, whatever became
// of the path it was opened by. (With no path, fanotify_mark marks dirfd's
// object, but refuses an O_PATH descriptor: EBADF.)
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// markAll marks the filesystem of each given path once.
func (w *Witness) markAll(fd int) error {
	mounts, err := mountinfo.Read()
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	byID := map[int]mountinfo.Mount{}
	for _, m := range mounts {
		byID[m.ID] = m
		for _, l := range m.OverlayLayers() {
			var st unix.Stat_t
			w.layers = append(w.layers, filepath.Clean(l))
			w.hiddenLayers = w.hiddenLayers || unix.Stat(l, &st) != nil
		}
	}
	// A rename's MoveSelf ends its events: between the two comes the
	// link count change of the file it replaced (renames.go).
	w.markMask = baseMask | unix.FAN_RENAME | unix.FAN_MOVE_SELF
	w.features.Rename = true
	byDev := map[uint64]*Filesystem{}
	var errs []error
	for _, p := range w.opts.Paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			w.all = append(w.all, &Filesystem{Paths: []string{p}, Err: err})
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(abs, &st); err != nil {
			w.all = append(w.all, &Filesystem{Paths: []string{abs}, Err: fmt.Errorf("stat: %w", err)})
			errs = append(errs, fmt.Errorf("%s: %w", abs, err))
			continue
		}
		if info := byDev[st.Dev]; info != nil {
			info.Paths = append(info.Paths, abs)
			if fs := w.fsOfDev(st.Dev); fs != nil {
				w.addMount(fs, abs, &st, byID)
			}
			continue
		}
		info := &Filesystem{Paths: []string{abs}, Dev: st.Dev}
		w.all = append(w.all, info)
		byDev[st.Dev] = info
		if err := w.markOne(fd, info, abs, &st, byID, mounts); err != nil {
			if errors.Is(err, ErrNeedsRoot) {
				return fmt.Errorf("witness: %s: %w", abs, err)
			}
			info.Err = err
			errs = append(errs, fmt.Errorf("%s: %w", abs, err))
		}
	}
	for _, fs := range w.fss {
		for _, m := range fs.mounts {
			fs.info.Mounts = append(fs.info.Mounts, m.point)
		}
	}
	if len(w.fss) == 0 {
		return fmt.Errorf("witness: %w: %w", ErrNothingWatched, errors.Join(errs...))
	}
	return nil
}

func (w *Witness) fsOfDev(dev uint64) *fsys {
	for _, fs := range w.fss {
		if fs.dev == dev {
			return fs
		}
	}
	return nil
}

// markOne puts a filesystem mark on the filesystem of path.
func (w *Witness) markOne(fd int, info *Filesystem, path string, st *unix.Stat_t, byID map[int]mountinfo.Mount, mounts []mountinfo.Mount) error {
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return fmt.Errorf("statfs: %w", err)
	}
	id := fsid{sfs.Fsid.Val[0], sfs.Fsid.Val[1]}
	// The mount path is on, by id: mountinfo's device numbers are not
	// st_dev on btrfs.
	var mnt mountinfo.Mount
	if _, mountID, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0); err == nil {
		mnt = byID[mountID]
	} else {
		// No handles here (the mark will say so): find it by device.
		for _, m := range mounts {
			if m.Dev == st.Dev {
				mnt = m
			}
		}
	}
	info.Type = mnt.FSType
	if other := w.byFsid[id]; other != nil {
		return fmt.Errorf("its fsid %x:%x is also that of the filesystem of %s (a copy of one filesystem?): events could not tell them apart",
			uint32(id[0]), uint32(id[1]), other.info.Paths[0])
	}
	// The mark is placed through a descriptor that WatchContents marks
	// again.
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	later := uint64(0)
	if !w.contents {
		later = contentMask
	}
	mark := func(mask uint64) error {
		return unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, mask&^later, unix.AT_FDCWD, fdPath(pfd))
	}
	err = mark(w.markMask)
	if err == unix.EINVAL && w.markMask&unix.FAN_RENAME != 0 {
		// Before 5.17: no FAN_RENAME; a rename is a MoveFrom and a MoveTo.
		old := uint64(baseMask | unix.FAN_MOVED_FROM | unix.FAN_MOVED_TO)
		if err = mark(old); err == nil {
			w.markMask, w.features.Rename = old, false
		}
	}
	if err != nil {
		unix.Close(pfd)
		return markError(err)
	}
	fs := &fsys{
		info: info, fsid: id, dev: st.Dev, trusted: true,
		dirs:      map[string]string{},
		lastKnown: map[string]string{},
		layerDirs: map[string]struct{}{},
		markFD:    pfd, contents: w.contents,
	}
	w.fss = append(w.fss, fs)
	w.byFsid[id] = fs
	w.addMount(fs, path, st, byID)
	// Then a mount of the filesystem's root, for objects outside the
	// given paths' mounts (bind mounts of a subdirectory).
	for _, m := range mounts {
		if mnt.Point != "" && m.Dev == mnt.Dev && m.Root == "/" {
			w.addMountFD(fs, m.Point, m.Point)
		}
	}
	return nil
}

// markError explains why fanotify_mark refused a filesystem.
func markError(err error) error {
	switch err {
	case unix.EPERM:
		return fmt.Errorf("fanotify_mark: %w (%v)", ErrNeedsRoot, err)
	case unix.EXDEV:
		return fmt.Errorf("a subvolume whose fsid differs from its filesystem's root (btrfs): fanotify cannot watch it whole: %w", err)
	case unix.ENODEV:
		return fmt.Errorf("the filesystem has no fsid, so events could not name its files: %w", err)
	case unix.EOPNOTSUPP:
		return fmt.Errorf("the filesystem cannot encode or decode file handles: %w", err)
	}
	return fmt.Errorf("fanotify_mark: %w", err)
}

// addMount adds the mount path lies on to fs's mounts and checks that
// path's handle decodes to its inode.
func (w *Witness) addMount(fs *fsys, path string, st *unix.Stat_t, byID map[int]mountinfo.Mount) {
	h, mountID, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0)
	if err != nil {
		fs.trusted = false
		return
	}
	if layoutOf(h.Type(), h.Size()).ino(h.Bytes()) != st.Ino {
		fs.trusted = false
	}
	point := byID[mountID].Point
	if point == "" {
		point = path
	}
	// The path itself, not its mount point, which a later mount may cover.
	dir := path
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		dir = filepath.Dir(path)
	}
	w.addMountFD(fs, dir, point)
}

// addMountFD opens dir, on the mount at point, as a mount descriptor for
// open_by_handle_at (which takes no O_PATH descriptor), unless fs has
// one for that mount already or dir is on another filesystem.
func (w *Witness) addMountFD(fs *fsys, dir, point string) {
	for _, m := range fs.mounts {
		if m.point == point {
			return
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	var sfs unix.Statfs_t
	if unix.Fstatfs(fd, &sfs) != nil || (fsid{sfs.Fsid.Val[0], sfs.Fsid.Val[1]}) != fs.fsid {
		unix.Close(fd)
		return
	}
	fs.mounts = append(fs.mounts, mountFD{fd: fd, point: point})
}

// makeSyncDir makes the private directory Sync creates its markers in,
// and watches it when its filesystem is not watched already.
func (w *Witness) makeSyncDir(fd int, parent string) error {
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "writewatch-witness-")
	if err != nil {
		return fmt.Errorf("witness: sync directory: %w", err)
	}
	w.syncDir = dir
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return fmt.Errorf("witness: sync directory: %w", err)
	}
	w.syncFsid = fsid{sfs.Fsid.Val[0], sfs.Fsid.Val[1]}
	if w.byFsid[w.syncFsid] == nil {
		err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD, unix.FAN_CREATE|unix.FAN_DELETE, unix.AT_FDCWD, dir)
		if err != nil {
			return fmt.Errorf("witness: sync directory %s: %w", dir, markError(err))
		}
	}
	var token [8]byte
	if _, err := rand.Read(token[:]); err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	w.syncPrefix = "sync-" + hex.EncodeToString(token[:]) + "-"
	return nil
}

// Features says what the kernel let the witness use.
func (w *Witness) Features() Features { return w.features }

// Filesystems lists the filesystems of Options.Paths, watched or not.
func (w *Witness) Filesystems() []Filesystem {
	out := make([]Filesystem, len(w.all))
	for i, f := range w.all {
		out[i] = *f
		out[i].Paths = append([]string(nil), f.Paths...)
		out[i].Mounts = append([]string(nil), f.Mounts...)
	}
	return out
}

// Stats returns the counters so far.
func (w *Witness) Stats() Stats {
	c := &w.stats
	return Stats{
		Read: c.read.Load(), Delivered: c.delivered.Load(), Skipped: c.skipped.Load(),
		Overflows: c.overflows.Load(), Unresolved: c.unresolved.Load(), Resolutions: c.resolutions.Load(),
	}
}

// Sync returns once every event the kernel queued before Sync was called
// has been handed to Handle (or declined by Wanted). It creates and
// removes a uniquely named file in the witness's private directory and
// waits for the reader to reach the event that creation queued: the
// kernel queues events in order, at the time of the change, so every
// earlier change is ahead of it. Under sustained load the wait is
// bounded by the queue ahead of the marker, unlike waiting for an empty
// queue. When the queue overflowed meanwhile (the marker itself may have
// been lost), Sync places a new marker and waits again.
func (w *Witness) Sync(ctx context.Context) error {
	for {
		retry, err := w.syncOnce(ctx)
		if !retry {
			return err
		}
	}
}

// waiter is a Sync waiting for its marker; retry is set, before ch is
// closed, when an overflow woke it instead.
type waiter struct {
	ch    chan struct{}
	retry bool
}

func (w *Witness) syncOnce(ctx context.Context) (bool, error) {
	name := fmt.Sprintf("%s%d", w.syncPrefix, w.syncSeq.Add(1))
	wt := &waiter{ch: make(chan struct{})}
	w.mu.Lock()
	if w.waiters == nil {
		w.mu.Unlock()
		return false, ErrClosed
	}
	w.waiters[name] = wt
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if w.waiters != nil {
			delete(w.waiters, name)
		}
		w.mu.Unlock()
	}()
	p := filepath.Join(w.syncDir, name)
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false, fmt.Errorf("witness: sync: %w", err)
	}
	unix.Close(fd)
	if err := unix.Unlink(p); err != nil {
		return false, fmt.Errorf("witness: sync: %w", err)
	}
	// The marker is queued: the reader need not wait for more.
	signal(w.hurryFD)
	select {
	case <-wt.ch:
		return wt.retry, nil
	case <-w.done:
		return false, w.err
	case <-ctx.Done():
		return false, fmt.Errorf("witness: sync: %w", ctx.Err())
	}
}

// wakeSyncs wakes the Syncs waiting for a marker: marker names the one
// whose marker was read; "" wakes them all to place new markers.
func (w *Witness) wakeSyncs(marker string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, wt := range w.waiters {
		if marker == "" || name == marker {
			wt.retry = marker == ""
			close(wt.ch)
			delete(w.waiters, name)
		}
	}
}

// Ignore asks the kernel to drop events on dir itself and on its direct
// entries (files and subdirectories, but not what lies deeper), which
// cuts the volume of a busy allowed directory. Renames stay reported,
// since one FAN_RENAME event is dropped when either of its directories
// ignores it. An ignored directory hides writes through hard links made
// in it to files elsewhere (their link count change, an event on the
// file alone, stays). While contents are not watched (ContentsLater),
// the mark leaves the content events out, which would make every write
// to the directory's entries take the kernel's slow path, and
// WatchContents adds them. Needs FAN_MARK_IGNORE (Linux 6.0).
func (w *Witness) Ignore(dir string) error {
	mask := uint64(unix.FAN_CREATE | unix.FAN_DELETE | unix.FAN_ATTRIB | unix.FAN_CLOSE_WRITE |
		unix.FAN_MODIFY | unix.FAN_ONDIR | unix.FAN_EVENT_ON_CHILD)
	if !w.features.Rename {
		mask |= unix.FAN_MOVED_FROM | unix.FAN_MOVED_TO
	}
	return w.ignore(dir, unix.FAN_MARK_ONLYDIR, mask)
}

// IgnoreFile asks the kernel to drop the data and attribute changes of
// the file at path (its writes, closes after writing and attribute
// changes), for a caller that has learnt all it needs of them. Creates,
// deletes and renames of its names are events of their directories and
// stay reported. The mark is on the inode: a file that replaces it at
// path is not ignored. While contents are not watched (ContentsLater),
// the mark holds the attribute changes alone, and WatchContents adds the
// writes and closes. Needs FAN_MARK_IGNORE (Linux 6.0).
func (w *Witness) IgnoreFile(path string) error {
	return w.ignore(path, unix.FAN_MARK_DONT_FOLLOW, unix.FAN_MODIFY|unix.FAN_CLOSE_WRITE|unix.FAN_ATTRIB)
}

// ignore places an ignore mark on path. While contents are not watched,
// the mark leaves contentMask out and is placed through an O_PATH
// descriptor of path (O_NOFOLLOW for FAN_MARK_DONT_FOLLOW), kept in
// w.pending until WatchContents or release.
func (w *Witness) ignore(path string, flags uint, mask uint64) error {
	w.marksMu.Lock()
	defer w.marksMu.Unlock()
	if w.closed() {
		return ErrClosed
	}
	flags |= unix.FAN_MARK_ADD | unix.FAN_MARK_IGNORE_SURV
	var err error
	if w.contents {
		err = unix.FanotifyMark(w.fd, flags, mask, unix.AT_FDCWD, path)
	} else {
		err = w.ignoreLater(path, flags, mask)
	}
	if err == unix.EINVAL {
		return fmt.Errorf("witness: ignore %s: %w (FAN_MARK_IGNORE needs Linux 6.0)", path, ErrUnsupported)
	}
	if err != nil {
		return fmt.Errorf("witness: ignore %s: %w", path, markError(err))
	}
	return nil
}

// ignoreLater places ignore's mark without contentMask, through a
// descriptor of path kept in w.pending.
func (w *Witness) ignoreLater(path string, flags uint, mask uint64) error {
	oflags := unix.O_PATH | unix.O_CLOEXEC
	if flags&unix.FAN_MARK_DONT_FOLLOW != 0 {
		// A symlink at path is opened itself, as FAN_MARK_DONT_FOLLOW
		// would mark it; /proc/self/fd/N leads to it without following it.
		oflags |= unix.O_NOFOLLOW
		flags &^= unix.FAN_MARK_DONT_FOLLOW
	}
	fd, err := unix.Open(path, oflags, 0)
	if err != nil {
		return err
	}
	if err := unix.FanotifyMark(w.fd, flags, mask&^contentMask, unix.AT_FDCWD, fdPath(fd)); err != nil {
		unix.Close(fd)
		return err
	}
	w.pending = append(w.pending, pendingIgnore{fd: fd, flags: flags, mask: mask})
	return nil
}

// closed says the witness is closed or its reader stopped. The caller
// holds marksMu.
func (w *Witness) closed() bool {
	if w.marksClosed {
		return true
	}
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// WatchContents adds the content events (FAN_MODIFY and FAN_CLOSE_WRITE)
// to every filesystem mark, which ContentsLater left out: once it
// returns nil, every write and close after writing on a watched
// filesystem is an event, as without ContentsLater. It marks each
// filesystem through the descriptor its mark was placed through, so the
// given paths need not exist any more. The ignore marks placed before
// (Ignore, IgnoreFile) are extended first, so that they keep dropping
// the content events of what they ignore; one that cannot be extended
// lets those events through, and none is lost.
//
// It returns an error naming each filesystem whose mark could not be
// extended; a later call tries those again. It returns nil at once when
// contents are watched already, and ErrClosed once the witness is
// closed. It may be called from any goroutine, while events are read
// and Ignore or IgnoreFile are called.
func (w *Witness) WatchContents() error {
	w.marksMu.Lock()
	defer w.marksMu.Unlock()
	if w.closed() {
		return ErrClosed
	}
	if w.contentsWatched.Load() {
		return nil
	}
	w.contents = true
	for _, p := range w.pending {
		// An error lets more events through, never fewer.
		unix.FanotifyMark(w.fd, p.flags, p.mask, unix.AT_FDCWD, fdPath(p.fd))
		unix.Close(p.fd)
	}
	w.pending = nil
	var errs []error
	for _, fs := range w.fss {
		if fs.contents {
			continue
		}
		err := unix.FanotifyMark(w.fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, contentMask, unix.AT_FDCWD, fdPath(fs.markFD))
		if err != nil {
			errs = append(errs, fmt.Errorf("the filesystem of %s: %w", fs.info.Paths[0], markError(err)))
			continue
		}
		fs.contents = true
	}
	if len(errs) > 0 {
		return fmt.Errorf("witness: watch contents: %w", errors.Join(errs...))
	}
	w.contentsWatched.Store(true)
	return nil
}

// ContentsWatched says every filesystem mark holds the content events:
// ContentsLater was not set, or WatchContents returned nil.
func (w *Witness) ContentsWatched() bool { return w.contentsWatched.Load() }

// WatchFile marks the file open as fd for its writes and closes after
// writing (an inode mark), for a file that may be written, while
// contents are not watched, through a descriptor whose opening the
// caller did not see (one inherited from outside what it traces). Its
// events are delivered like those of the filesystem marks: by directory
// and name, or by the file's own handle when the kernel knows no
// directory for it. The file must lie on a
// watched filesystem: for any other (a memfd, a pipe, a filesystem not
// watched or that could not be marked) WatchFile returns an error. When
// the file's filesystem mark holds the content events already, it does
// nothing. The mark lasts until Close.
func (w *Witness) WatchFile(fd int) error {
	var sfs unix.Statfs_t
	var st unix.Stat_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return fmt.Errorf("witness: watch descriptor %d: %w", fd, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("witness: watch descriptor %d: %w", fd, err)
	}
	fs := w.byFsid[fsid{sfs.Fsid.Val[0], sfs.Fsid.Val[1]}]
	if fs == nil || fs.dev != st.Dev {
		return fmt.Errorf("witness: watch descriptor %d: %w", fd, ErrNotWatched)
	}
	w.marksMu.Lock()
	defer w.marksMu.Unlock()
	if w.closed() {
		return ErrClosed
	}
	if fs.contents {
		return nil
	}
	if err := unix.FanotifyMark(w.fd, unix.FAN_MARK_ADD, contentMask, unix.AT_FDCWD, fdPath(fd)); err != nil {
		return fmt.Errorf("witness: watch descriptor %d: %w", fd, markError(err))
	}
	return nil
}

// Close stops the witness: the reader stops after the batch it is
// handling (it does not wait for more first), the marks go with the
// fanotify descriptor, and the private directory is removed. It returns
// before the kernel has released the fanotify group (see release).
func (w *Witness) Close() error {
	w.closeOnce.Do(func() {
		defer phases.Start("witness: close")()
		if err := signal(w.stopFD); err != nil {
			w.closeErr = fmt.Errorf("witness: stop: %w", err)
		}
		<-w.done
		w.release()
	})
	return w.closeErr
}

// Unmark removes every mark of the group, for a caller that needs no
// change after the last Sync it waited for: the witness reports none
// made after it, and places no mark again (Ignore, IgnoreFile,
// WatchFile and WatchContents return ErrClosed). The kernel frees
// removed marks after a grace period of its own (fsnotify's SRCU, 1 to
// 15 ms here), which the release of the group in Close, and so the
// process's exit, would otherwise wait for: started here, it runs while
// the run ends.
func (w *Witness) Unmark() error {
	w.marksMu.Lock()
	defer w.marksMu.Unlock()
	if w.closed() {
		return ErrClosed
	}
	w.marksClosed = true
	var errs []error
	for _, kind := range []uint{unix.FAN_MARK_FILESYSTEM, unix.FAN_MARK_MOUNT, unix.FAN_MARK_INODE} {
		if err := unix.FanotifyMark(w.fd, unix.FAN_MARK_FLUSH|kind, 0, unix.AT_FDCWD, ""); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("witness: remove the marks: %w", err)
	}
	return nil
}

// signal adds one to the eventfd fd, which wakes the reader's poll.
func signal(fd int) error {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, err := unix.Write(fd, one[:])
	return err
}

// release frees what New acquired.
func (w *Witness) release() {
	for _, fd := range []int{w.stopFD, w.hurryFD} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	w.marksMu.Lock()
	w.marksClosed = true
	// The kernel's release of the group waits for a grace period
	// (fsnotify's SRCU, 1 to 15 ms here) before close returns: closed in
	// the background, that wait overlaps the end of the run, and the
	// process's exit still waits for it.
	go unix.Close(w.fd)
	for _, fs := range w.fss {
		unix.Close(fs.markFD)
	}
	for _, p := range w.pending {
		unix.Close(p.fd)
	}
	w.pending = nil
	w.marksMu.Unlock()
	for _, fs := range w.fss {
		for _, m := range fs.mounts {
			unix.Close(m.fd)
		}
		fs.mounts = nil
	}
	if w.syncDir != "" {
		os.RemoveAll(w.syncDir)
	}
	w.mu.Lock()
	w.waiters = nil
	w.mu.Unlock()
}

// loop reads the queue until Close. It waits in poll(2) itself rather
// than in Go's network poller: the poller would wake on every event the
// kernel queues while the loop sleeps between batches.
func (w *Witness) loop() {
	defer close(w.done)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.stopFD), Events: unix.POLLIN}}
	wake := []unix.PollFd{{Fd: int32(w.stopFD), Events: unix.POLLIN}, {Fd: int32(w.hurryFD), Events: unix.POLLIN}}
	var count [8]byte
	for {
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			w.err = fmt.Errorf("witness: poll: %w", err)
			return
		}
		if fds[1].Revents != 0 {
			w.err = ErrClosed
			return
		}
		unix.Read(w.hurryFD, count[:]) // read now what a Sync asked to hurry for
		n, err := unix.Read(w.fd, w.buf)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			w.err = fmt.Errorf("witness: read: %w", err)
			return
		}
		if err := w.process(w.buf[:n]); err != nil {
			w.err = fmt.Errorf("witness: %w", err)
			return
		}
		if n < len(w.buf)/4 {
			// A trickle: let events gather (and merge) before the next
			// read, rather than waking for each one; a Sync, whose
			// marker is queued, or Close ends the wait.
			wake[0].Revents, wake[1].Revents = 0, 0
			if _, err := unix.Poll(wake, int(batchDelay/time.Millisecond)); err != nil && err != unix.EINTR {
				w.err = fmt.Errorf("witness: poll: %w", err)
				return
			}
			if wake[0].Revents != 0 {
				w.err = ErrClosed
				return
			}
		}
	}
}

// batchDelay is how long the reader lets a trickle of events gather.
const batchDelay = 5 * time.Millisecond
