package witness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// collector keeps the events under one directory. gate, while locked by
// a test, holds the reader in Handle so that the kernel's queue fills.
type collector struct {
	under string
	// keep, when set, keeps events outside under too.
	keep func(Event) bool
	gate sync.Mutex
	mu   sync.Mutex
	evs  []Event
	all  int
}

func (c *collector) handle(ev Event) {
	c.gate.Lock()
	c.gate.Unlock() //nolint:staticcheck // only waits for the test to open the gate
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all++
	if ev.Op == Overflow || strings.HasPrefix(ev.Path, c.under) || strings.HasPrefix(ev.OldPath, c.under) ||
		(c.keep != nil && c.keep(ev)) {
		c.evs = append(c.evs, ev)
	}
}

func (c *collector) setKeep(keep func(Event) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keep = keep
}

func (c *collector) events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.evs...)
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_ADMIN) for fanotify filesystem marks")
	}
}

// start watches the filesystem of dir and collects the events under dir.
func start(t testing.TB, dir string, opts Options) (*Witness, *collector) {
	t.Helper()
	needRoot(t)
	c := &collector{under: dir + "/"}
	if opts.Paths == nil {
		opts.Paths = []string{dir}
	}
	opts.Handle = c.handle
	if opts.SyncDir == "" {
		opts.SyncDir = t.TempDir()
	}
	w, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w, c
}

func sync1(t testing.TB, w *Witness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// tempDir is a fresh directory with no symlink in its path, so that the
// paths the kernel reports compare equal to the ones the test builds.
func tempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

type want struct {
	op    Op
	path  string
	pid   int32
	isDir bool
	old   string // OldPath of a Rename
}

func (w want) String() string {
	return fmt.Sprintf("%v %s (pid %d, dir %v, from %q)", w.op, w.path, w.pid, w.isDir, w.old)
}

func (w want) matches(ev Event, op Op) bool {
	return ev.Op&op != 0 && ev.Path == w.path && ev.Pid == w.pid && ev.IsDir == w.isDir &&
		(w.old == "" || ev.OldPath == w.old)
}

// expect checks that each op of each want is in some event with the
// want's path, pid and kind. The kernel merges an event into a queued one
// of the same process and object, so ops arrive alone or together
// depending on when the reader ran.
func expect(t *testing.T, evs []Event, wants ...want) {
	t.Helper()
	for _, w := range wants {
		for op := Op(1); op != 0 && op <= w.op; op <<= 1 {
			if w.op&op == 0 {
				continue
			}
			found := false
			for _, ev := range evs {
				if w.matches(ev, op) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("no %v event in %v", op, w)
			}
		}
	}
	if t.Failed() {
		for _, ev := range evs {
			t.Logf("seen: #%d pid %d %v %s (from %q) dir=%v %v ino=%d", ev.Seq, ev.Pid, ev.Op, ev.Path, ev.OldPath, ev.IsDir, ev.Source, ev.Ino)
		}
	}
}

// renameOps is what one rename is reported as on this kernel.
func renameWant(w *Witness, old, new string, pid int32, isDir bool) []want {
	if w.Features().Rename {
		return []want{{op: Rename, path: new, old: old, pid: pid, isDir: isDir}}
	}
	return []want{{op: MoveFrom, path: old, pid: pid, isDir: isDir}, {op: MoveTo, path: new, pid: pid, isDir: isDir}}
}

// New in a process without CAP_SYS_ADMIN fails with ErrNeedsRoot, with
// or without the unlimited queue (which alone needs the capability).
func TestNeedsRootWithoutCapability(t *testing.T) {
	needRoot(t)
	runChild(t, nil, "new-unprivileged", "/")
}

func TestChildChangesAreReportedWithPathAndPid(t *testing.T) {
	dir := tempDir(t)
	w, c := start(t, dir, Options{})
	must(t, os.Mkdir(dir+"/tests", 0o755))
	must(t, os.Mkdir(dir+"/real", 0o755))
	must(t, os.Symlink(dir+"/real", dir+"/link"))
	must(t, os.WriteFile(dir+"/config.toml", []byte("x"), 0o644))
	inherited, err := os.OpenFile(dir+"/inherited.txt", os.O_WRONLY|os.O_CREATE, 0o644)
	must(t, err)
	self := int32(os.Getpid())

	pid := runChild(t, []*os.File{inherited},
		"write", dir+"/a.txt", ",",
		"chmod", dir+"/a.txt", "600", ",",
		"rename", dir+"/a.txt", dir+"/b.txt", ",",
		"mkdir", dir+"/d", ",",
		"rmdir", dir+"/d", ",",
		"write", dir+"/link/through-symlink", ",",
		"symlink", ".", dir+"/tests/x", ",",
		"unlink", dir+"/tests/x/../config.toml", ",",
		"link-fd", dir+"/b.txt", dir+"/tests/hard", ",",
		"append", dir+"/tests/hard", ",",
		"writefd", "3", ",",
		"unlink", dir+"/b.txt",
	)
	must(t, inherited.Close())
	sync1(t, w)

	evs := c.events()
	wants := []want{
		{op: Create | Modify | CloseWrite, path: dir + "/a.txt", pid: pid},
		{op: Attrib, path: dir + "/a.txt", pid: pid},
		{op: Create, path: dir + "/d", pid: pid, isDir: true},
		{op: Delete, path: dir + "/d", pid: pid, isDir: true},
		// The kernel followed the symlink: the real directory is named.
		{op: Create | Modify | CloseWrite, path: dir + "/real/through-symlink", pid: pid},
		{op: Create, path: dir + "/tests/x", pid: pid},
		// tests/x -> . is followed before "..": config.toml in dir goes.
		{op: Delete, path: dir + "/config.toml", pid: pid},
		{op: Create, path: dir + "/tests/hard", pid: pid},
		// Written through the hard link's own name.
		{op: Modify | CloseWrite, path: dir + "/tests/hard", pid: pid},
		// A write through a descriptor the child inherited is the child's;
		// the close, by the test, is the test's.
		{op: Create, path: dir + "/inherited.txt", pid: self},
		{op: Modify, path: dir + "/inherited.txt", pid: pid},
		{op: CloseWrite, path: dir + "/inherited.txt", pid: self},
		{op: Delete, path: dir + "/b.txt", pid: pid},
	}
	wants = append(wants, renameWant(w, dir+"/a.txt", dir+"/b.txt", pid, false)...)
	expect(t, evs, wants...)

	// No event under dir names the symlinked path or tests/x/..: the
	// kernel reports what it acted on.
	for _, ev := range evs {
		if strings.Contains(ev.Path, "/link/") || strings.Contains(ev.Path, "/x/") {
			t.Errorf("event names a path through a symlink: %+v", ev)
		}
	}

	// The same file: dev and ino from its handle, for both names (the
	// hard link was made from a read-only descriptor of b.txt).
	var st unix.Stat_t
	must(t, unix.Stat(dir+"/tests/hard", &st))
	for _, ev := range evs {
		if ev.Path == dir+"/b.txt" && w.Features().TargetFID && ev.Ino != st.Ino {
			t.Errorf("%v %s: ino %d, want that of tests/hard, %d", ev.Op, ev.Path, ev.Ino, st.Ino)
		}
	}
	var dst unix.Stat_t
	must(t, unix.Stat(dir+"/tests", &dst))
	for _, ev := range evs {
		if ev.Path == dir+"/tests/hard" && ev.Op&Modify != 0 {
			if ev.Ino != st.Ino || ev.Dev != st.Dev || ev.DirIno != dst.Ino || ev.Name != "hard" {
				t.Errorf("hard link write: dev %d ino %d dir ino %d name %q, want %d %d %d hard",
					ev.Dev, ev.Ino, ev.DirIno, ev.Name, st.Dev, st.Ino, dst.Ino)
			}
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Changes made through io_uring are reported too, with the submitter's
// pid (the kernel's io workers are threads of its process).
func TestIOUringChanges(t *testing.T) {
	dir := tempDir(t)
	r, err := newRing()
	if err != nil {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	r.close()
	w, c := start(t, dir, Options{})
	pid := runChild(t, nil, "uring-write", dir+"/u.txt", ",",
		"uring-rename", dir+"/u.txt", dir+"/u2.txt", ",",
		"uring-mkdir", dir+"/ud", ",",
		"uring-unlink", dir+"/u2.txt")
	sync1(t, w)
	wants := []want{
		{op: Create | Modify | CloseWrite, path: dir + "/u.txt", pid: pid},
		{op: Create, path: dir + "/ud", pid: pid, isDir: true},
		{op: Delete, path: dir + "/u2.txt", pid: pid},
	}
	expect(t, c.events(), append(wants, renameWant(w, dir+"/u.txt", dir+"/u2.txt", pid, false)...)...)
}

// Processes that have nothing to do with each other each get their own
// pid on their own changes, while they run at the same time.
func TestUnrelatedProcessesCarryTheirOwnPid(t *testing.T) {
	dir := tempDir(t)
	w, c := start(t, dir, Options{})
	const n = 300
	must(t, os.Mkdir(dir+"/a", 0o755))
	must(t, os.Mkdir(dir+"/b", 0o755))
	a := child(t, nil, "churn", dir+"/a", fmt.Sprint(n))
	b := child(t, nil, "churn", dir+"/b", fmt.Sprint(n))
	must(t, os.WriteFile(dir+"/mine", nil, 0o644))
	must(t, a.Wait())
	must(t, b.Wait())
	sync1(t, w)
	pids := map[string]int32{"a": int32(a.Process.Pid), "b": int32(b.Process.Pid), "mine": int32(os.Getpid())}
	creates := map[string]int{}
	for _, ev := range c.events() {
		rel := strings.TrimPrefix(ev.Path, dir+"/")
		top, _, _ := strings.Cut(rel, "/")
		want, ok := pids[top]
		if !ok {
			t.Errorf("unexpected event %+v", ev)
			continue
		}
		if ev.Pid != want && !(ev.Pid == int32(os.Getpid()) && rel == top) {
			t.Errorf("event %v %s has pid %d, want %d", ev.Op, ev.Path, ev.Pid, want)
		}
		if ev.Op&Create != 0 && rel != top {
			creates[top]++
		}
	}
	if creates["a"] != n || creates["b"] != n {
		t.Errorf("creates: %v, want %d in each of a and b", creates, n)
	}
}

func ino(t testing.TB, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(path, &st))
	return st.Ino
}

// A directory that is gone by the time its events are read is reported
// with what is known: the path the events themselves or an earlier
// resolution gave it, else the name and directory inode alone.
func TestDeletedDirectoriesAreReportedWithWhatIsKnown(t *testing.T) {
	dir := tempDir(t)
	must(t, os.Mkdir(dir+"/unseen", 0o755))
	unseen := ino(t, dir+"/unseen")
	w, c := start(t, dir, Options{})
	c.setKeep(func(ev Event) bool { return ev.DirIno == unseen })
	must(t, os.Mkdir(dir+"/seen", 0o755))
	must(t, os.WriteFile(dir+"/seen/first", nil, 0o644))
	sync1(t, w)

	c.gate.Lock() // the reader stops at the next event: all below is queued
	pid := runChild(t, nil,
		// Learned: created, used and removed before the reader looks.
		"mkdir", dir+"/made", ",",
		"write", dir+"/made/f", ",",
		"unlink", dir+"/made/f", ",",
		"rmdir", dir+"/made", ",",
		// A directory moved: no cached path is trusted after it.
		"mkdir", dir+"/r1", ",",
		"rename", dir+"/r1", dir+"/r2", ",",
		// Resolved before, gone now: its last known path.
		"write", dir+"/seen/f", ",",
		"unlink", dir+"/seen/f", ",",
		"unlink", dir+"/seen/first", ",",
		"rmdir", dir+"/seen", ",",
		// Never resolved, gone now: name and directory inode only.
		"write", dir+"/unseen/f", ",",
		"unlink", dir+"/unseen/f", ",",
		"rmdir", dir+"/unseen",
	)
	c.gate.Unlock()
	sync1(t, w)
	evs := c.events()
	expect(t, evs,
		want{op: Create | Delete, path: dir + "/made", pid: pid, isDir: true},
		want{op: Create | Modify | CloseWrite | Delete, path: dir + "/made/f", pid: pid},
		want{op: Create | Modify | CloseWrite | Delete, path: dir + "/seen/f", pid: pid},
		want{op: Delete, path: dir + "/seen", pid: pid, isDir: true},
	)
	var unseenOps Op
	for _, ev := range evs {
		switch {
		case strings.HasPrefix(ev.Path, dir+"/made/"):
			// Learned from the mkdir event; last-known when the kernel
			// merged the rmdir into it.
			if ev.Source != ByName && ev.Source != LastKnown {
				t.Errorf("%s: source %v, want by-name or last-known", ev.Path, ev.Source)
			}
		case strings.HasPrefix(ev.Path, dir+"/seen/") && ev.Name == "f":
			if ev.Source != LastKnown {
				t.Errorf("%s: source %v, want last-known", ev.Path, ev.Source)
			}
		case ev.DirIno == unseen && ev.Pid == pid:
			// (Only the child's: once the directory is gone, another
			// process's new directory may get its inode number.)
			// The kernel may still hold the removed directory and name
			// it with the path it had; else there is no path.
			if ev.Source != LastKnown || ev.Name != "f" || (ev.Path != "" && ev.Path != dir+"/unseen/f") {
				t.Errorf("event in the unseen directory: %+v", ev)
			}
			unseenOps |= ev.Op
		}
	}
	if unseenOps&(Create|Delete) != Create|Delete {
		t.Errorf("events in the unseen directory: %v, want create and delete", unseenOps)
	}
}

// A cached directory path is not used after a directory above it moved.
func TestRenamedDirectoriesAreNotNamedByTheirOldPath(t *testing.T) {
	dir := tempDir(t)
	must(t, os.MkdirAll(dir+"/a/b", 0o755))
	w, c := start(t, dir, Options{})
	p1 := runChild(t, nil, "write", dir+"/a/b/f1")
	sync1(t, w) // a/b is resolved and cached
	p2 := runChild(t, nil, "rename", dir+"/a", dir+"/a2")
	sync1(t, w)
	p3 := runChild(t, nil, "write", dir+"/a2/b/f2", ",", "mkdir", dir+"/a2/b/new")
	sync1(t, w)
	p4 := runChild(t, nil, "rename", dir+"/a2/b/new", dir+"/a2/b/moved", ",", "write", dir+"/a2/b/moved/f3")
	sync1(t, w)
	evs := c.events()
	expect(t, evs,
		want{op: Create, path: dir + "/a/b/f1", pid: p1},
		want{op: Create, path: dir + "/a2/b/f2", pid: p3},
		want{op: Create, path: dir + "/a2/b/moved/f3", pid: p4},
	)
	expect(t, evs, renameWant(w, dir+"/a", dir+"/a2", p2, true)...)
	expect(t, evs, renameWant(w, dir+"/a2/b/new", dir+"/a2/b/moved", p4, true)...)
	for _, ev := range evs {
		if strings.HasPrefix(ev.Path, dir+"/a/b/f2") || strings.Contains(ev.Path, "/new/") {
			t.Errorf("a path from before a rename: %+v", ev)
		}
	}
}

// Sync returns only once every event queued before it was handled.
func TestSyncReadsEverythingQueuedBefore(t *testing.T) {
	dir := tempDir(t)
	w, c := start(t, dir, Options{})
	syncBarrier(t, w, c, dir)
}

// The private directory may lie on a filesystem that is not watched: it
// is then watched alone, and its markers still come in order.
func TestSyncDirectoryOnAnotherFilesystem(t *testing.T) {
	dir := tempDir(t)
	var a, b unix.Stat_t
	if unix.Stat("/dev/shm", &b) != nil || unix.Stat(dir, &a) != nil || a.Dev == b.Dev {
		t.Skip("no /dev/shm on another filesystem than the temp dir")
	}
	needRoot(t)
	shm, err := os.MkdirTemp("/dev/shm", "witness-test-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(shm) })
	c := &collector{under: dir + "/"}
	w, err := New(Options{Paths: []string{dir}, SyncDir: shm, Handle: c.handle})
	if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("this kernel's tmpfs cannot be watched with file handles: %v", err)
	}
	must(t, err)
	defer w.Close()
	syncBarrier(t, w, c, dir)
}

func syncBarrier(t *testing.T, w *Witness, c *collector, dir string) {
	const n = 2000
	for round := range 3 {
		sub := fmt.Sprintf("%s/%d", dir, round)
		must(t, os.Mkdir(sub, 0o755))
		// Hold the reader while the child runs, so that its events are
		// all still queued when Sync starts.
		c.gate.Lock()
		runChild(t, nil, "churn", sub, fmt.Sprint(n))
		c.gate.Unlock()
		sync1(t, w)
		creates, deletes := 0, 0
		for _, ev := range c.events() {
			if strings.HasPrefix(ev.Path, sub+"/") {
				if ev.Op&Create != 0 {
					creates++
				}
				if ev.Op&Delete != 0 {
					deletes++
				}
			}
		}
		if creates != n || deletes != n {
			t.Fatalf("round %d: right after Sync, %d creates and %d deletes, want %d each", round, creates, deletes, n)
		}
	}
}

// With a bounded queue that fills while the reader is held, the kernel
// drops events and says so once: Stats.Overflows counts it, an Overflow
// event marks the place, and Sync still returns.
func TestOverflowIsReported(t *testing.T) {
	dir := tempDir(t)
	data, err := os.ReadFile("/proc/sys/fs/fanotify/max_queued_events")
	must(t, err)
	var max int
	_, err = fmt.Sscan(string(data), &max)
	must(t, err)
	w, c := start(t, dir, Options{LimitedQueue: true})
	if w.Features().UnlimitedQueue {
		t.Fatal("LimitedQueue asked, unlimited queue got")
	}
	c.gate.Lock()
	runChild(t, nil, "churn", dir, fmt.Sprint(max+1000))
	c.gate.Unlock()
	sync1(t, w)
	if w.Stats().Overflows == 0 {
		t.Fatalf("no overflow after %d changes with a queue of %d: %+v", 2*(max+1000), max, w.Stats())
	}
	found := false
	for _, ev := range c.events() {
		found = found || ev.Op == Overflow
	}
	if !found {
		t.Error("no Overflow event")
	}
}

// An ignore mark drops the events of a directory's direct entries, not
// of what lies deeper, and not renames into or out of it.
func TestIgnoreDropsDirectEntriesOnly(t *testing.T) {
	dir := tempDir(t)
	must(t, os.MkdirAll(dir+"/ign/deep", 0o755))
	w, c := start(t, dir, Options{})
	if err := w.Ignore(dir + "/ign"); err != nil {
		if errors.Is(err, ErrUnsupported) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	pid := runChild(t, nil,
		"write", dir+"/ign/f", ",",
		"mkdir", dir+"/ign/sub", ",",
		"write", dir+"/ign/deep/g", ",",
		"rename", dir+"/ign/f", dir+"/out", ",",
		"write", dir+"/kept")
	sync1(t, w)
	evs := c.events()
	expect(t, evs,
		want{op: Create | Modify | CloseWrite, path: dir + "/ign/deep/g", pid: pid},
		want{op: Create, path: dir + "/kept", pid: pid})
	expect(t, evs, renameWant(w, dir+"/ign/f", dir+"/out", pid, false)...)
	for _, ev := range evs {
		if ev.Path == dir+"/ign/f" || ev.Path == dir+"/ign/sub" {
			t.Errorf("event in the ignored directory: %v %s", ev.Op, ev.Path)
		}
	}
}

// IgnoreFile drops a file's writes and attribute changes, not the
// creation or removal of its names, nor other files' events.
func TestIgnoreFileDropsItsChangesOnly(t *testing.T) {
	dir := tempDir(t)
	w, c := start(t, dir, Options{})
	must(t, os.WriteFile(dir+"/ign", nil, 0o644))
	if err := w.IgnoreFile(dir + "/ign"); err != nil {
		if errors.Is(err, ErrUnsupported) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	pid := runChild(t, nil,
		"append", dir+"/ign", ",",
		"chmod", dir+"/ign", "600", ",",
		"write", dir+"/kept", ",",
		"unlink", dir+"/ign")
	sync1(t, w)
	evs := c.events()
	expect(t, evs,
		want{op: Create | Modify | CloseWrite, path: dir + "/kept", pid: pid},
		want{op: Delete, path: dir + "/ign", pid: pid})
	for _, ev := range evs {
		if ev.Pid == pid && ev.Path == dir+"/ign" && ev.Op&(Modify|CloseWrite|Attrib) != 0 {
			t.Errorf("a change of the ignored file: %v %s", ev.Op, ev.Path)
		}
	}
}

// Handles resolve through the mount of the given path first, then
// through one of the filesystem's root: through a bind mount of a
// subdirectory, a directory outside it would read as "/".
func TestBindMountOfASubdirectory(t *testing.T) {
	needRoot(t)
	src, mnt := tempDir(t), tempDir(t)
	must(t, os.Mkdir(src+"/inner", 0o755))
	if err := unix.Mount(src+"/inner", mnt, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	w, c := start(t, mnt, Options{})
	c.setKeep(func(ev Event) bool { return strings.HasSuffix(ev.Path, "/outside") || ev.Name == "outside" })
	fss := w.Filesystems()
	if len(fss) != 1 || len(fss[0].Mounts) < 2 || fss[0].Mounts[0] != mnt {
		t.Fatalf("filesystems: %+v, want the bind mount first, then the root's", fss)
	}
	pid := runChild(t, nil, "write", mnt+"/f", ",", "write", src+"/outside")
	sync1(t, w)
	expect(t, c.events(),
		want{op: Create, path: mnt + "/f", pid: pid},
		want{op: Create, path: src + "/outside", pid: pid})
}

// Each filesystem is marked once, whatever number of paths lie on it;
// one that cannot be marked is listed with the kernel's reason.
func TestFilesystemsAreListedOnceWithTheirReasons(t *testing.T) {
	needRoot(t)
	a, b := tempDir(t), tempDir(t)
	w, err := New(Options{Paths: []string{a, b, "/proc", a + "/missing"}, SyncDir: tempDir(t), Handle: func(Event) {}})
	must(t, err)
	defer w.Close()
	fss := w.Filesystems()
	if len(fss) != 3 {
		t.Fatalf("%d filesystems, want 3: %+v", len(fss), fss)
	}
	if f := fss[0]; f.Err != nil || len(f.Paths) != 2 || f.Type == "" || len(f.Mounts) == 0 {
		t.Errorf("temp dir's filesystem: %+v", f)
	}
	// No file handles (EOPNOTSUPP); 6.1 first finds it has no fsid
	// (ENODEV).
	if f := fss[1]; f.Type != "proc" || !(errors.Is(f.Err, unix.EOPNOTSUPP) || errors.Is(f.Err, unix.ENODEV)) {
		t.Errorf("/proc: %+v, want EOPNOTSUPP or ENODEV", f)
	}
	if f := fss[2]; !errors.Is(f.Err, unix.ENOENT) {
		t.Errorf("missing path: %+v", f)
	}
	if _, err := New(Options{Paths: []string{"/proc"}, SyncDir: tempDir(t), Handle: func(Event) {}}); !errors.Is(err, ErrNothingWatched) {
		t.Errorf("only /proc: %v, want ErrNothingWatched", err)
	}
}

// On tmpfs too (seen on 6.1, 6.12 and 6.18): paths, and inode numbers
// from the handles' layout.
func TestTmpfs(t *testing.T) {
	needRoot(t)
	dir, err := os.MkdirTemp("/dev/shm", "witness-test-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := &collector{under: dir + "/"}
	w, err := New(Options{Paths: []string{dir}, SyncDir: dir, Handle: c.handle})
	if errors.Is(err, ErrNothingWatched) {
		t.Skipf("this kernel cannot watch tmpfs: %v", err)
	}
	must(t, err)
	defer w.Close()
	pid := runChild(t, nil, "mkdir", dir+"/d", ",", "write", dir+"/d/f", ",", "chmod", dir+"/d/f", "600")
	sync1(t, w)
	evs := c.events()
	expect(t, evs,
		want{op: Create, path: dir + "/d", pid: pid, isDir: true},
		want{op: Create | Modify | CloseWrite | Attrib, path: dir + "/d/f", pid: pid})
	f, d := ino(t, dir+"/d/f"), ino(t, dir+"/d")
	for _, ev := range evs {
		if ev.Path == dir+"/d/f" && (ev.Ino != f || ev.DirIno != d) {
			t.Errorf("%v %s: ino %d in %d, want %d in %d", ev.Op, ev.Path, ev.Ino, ev.DirIno, f, d)
		}
	}
}

// After Close, Sync, Ignore, WatchContents and WatchFile say so, a
// second Close is harmless, and the private directory is gone.
func TestClose(t *testing.T) {
	dir := tempDir(t)
	syncDir := tempDir(t)
	w, _ := start(t, dir, Options{SyncDir: syncDir})
	sync1(t, w)
	must(t, w.Close())
	must(t, w.Close())
	if err := w.Sync(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: %v", err)
	}
	if err := w.Ignore(dir); !errors.Is(err, ErrClosed) {
		t.Errorf("Ignore after Close: %v", err)
	}
	if err := w.WatchContents(); !errors.Is(err, ErrClosed) {
		t.Errorf("WatchContents after Close: %v", err)
	}
	f, err := os.Create(dir + "/f")
	must(t, err)
	defer f.Close()
	if err := w.WatchFile(int(f.Fd())); !errors.Is(err, ErrClosed) {
		t.Errorf("WatchFile after Close: %v", err)
	}
	if left, _ := os.ReadDir(syncDir); len(left) != 0 {
		t.Errorf("left in the sync directory's parent: %v", left)
	}
}

// Unmark leaves the group no mark, as the kernel lists them in the
// descriptor's fdinfo (a filesystem mark, an inode mark of Ignore and of
// WatchFile before it), and places none again.
func TestUnmarkRemovesEveryMark(t *testing.T) {
	dir := tempDir(t)
	w, _ := start(t, dir, Options{})
	must(t, w.Ignore(dir))
	f, err := os.Create(dir + "/f")
	must(t, err)
	defer f.Close()
	must(t, w.WatchFile(int(f.Fd())))
	sync1(t, w)
	marks := func() []string {
		data, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", w.fd))
		must(t, err)
		var m []string
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "fanotify ") && strings.Contains(line, "mflags:") {
				m = append(m, line)
			}
		}
		return m
	}
	before := marks()
	if !slices.ContainsFunc(before, func(l string) bool { return strings.HasPrefix(l, "fanotify sdev:") }) ||
		!slices.ContainsFunc(before, func(l string) bool { return strings.HasPrefix(l, "fanotify ino:") }) {
		t.Fatalf("before Unmark, want a filesystem mark and inode marks; fdinfo lists:\n%s", strings.Join(before, "\n"))
	}
	must(t, w.Unmark())
	if after := marks(); len(after) != 0 {
		t.Errorf("after Unmark, fdinfo lists marks:\n%s", strings.Join(after, "\n"))
	}
	if err := w.Ignore(dir); !errors.Is(err, ErrClosed) {
		t.Errorf("Ignore after Unmark: %v", err)
	}
	if err := w.WatchContents(); !errors.Is(err, ErrClosed) {
		t.Errorf("WatchContents after Unmark: %v", err)
	}
	if err := w.Unmark(); !errors.Is(err, ErrClosed) {
		t.Errorf("a second Unmark: %v", err)
	}
}
