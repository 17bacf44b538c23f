package witness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	gate  sync.Mutex
	mu    sync.Mutex
	evs   []Event
	all   int
}

func (c *collector) handle(ev Event) {
	c.gate.Lock()
	c.gate.Unlock() //nolint:staticcheck // only waits for the test to open the gate
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all++
	if ev.Op == Overflow || strings.HasPrefix(ev.Path, c.under) || strings.HasPrefix(ev.OldPath, c.under) {
		c.evs = append(c.evs, ev)
	}
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
		"link", dir+"/b.txt", dir+"/tests/hard", ",",
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

	// The same file: dev and ino from its handle, for both names.
	var st unix.Stat_t
	must(t, unix.Stat(dir+"/tests/hard", &st))
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
