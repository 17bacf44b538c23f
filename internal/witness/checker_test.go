package witness

import (
	"fmt"
	"github.com/writewatch/writewatch/internal/ops"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
	"golang.org/x/sys/unix"
)

const proj = "/proj"

func list(t testing.TB, config string) *allowlist.List {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "ww.yaml")
	if err := os.WriteFile(cfg, []byte(config+"defaults: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := allowlist.Load(allowlist.Options{ConfigPath: cfg, WorkDir: proj, Home: "/home/u", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func checker(t *testing.T, opts CheckOptions) *Checker {
	t.Helper()
	if opts.Allow == nil {
		opts.Allow = list(t, "allow:\n  - /proj/tests/**\n")
	}
	opts.InitialPIDNS = true
	c := NewChecker(opts)
	c.Joined(100, 100)
	return c
}

// writeRecord builds a write record of process 100.
func writeRecord(t *testing.T, op ops.Op, path string, slots ...[]byte) *tracer.Event {
	t.Helper()
	h := tracer.RecordHeader{Kind: uint32(tracer.KindWrite), Op: uint32(op), Tgid: 100}
	var ev tracer.Event
	raw := tracer.AppendRecord(nil, h, append([][]byte{[]byte(path + "\x00")}, slots...)...)
	if err := tracer.Decode(raw, &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

func change(op Op, path string) *Event {
	return &Event{Pid: 100, Op: op, Path: path, Name: filepath.Base(path), Source: ByName, Ino: 7}
}

func only(t *testing.T, fs []Finding) Finding {
	t.Helper()
	if len(fs) != 1 {
		t.Fatalf("findings %+v, want one", fs)
	}
	return fs[0]
}

// Case 1: the judge called the unlink of tests/x/../config.toml allowed
// (tests/config.toml); the witness saw the project's config.toml go. The
// record lends the finding its operation and requested path.
func TestAllowedRecordExplainsChangeOutside(t *testing.T) {
	c := checker(t, CheckOptions{})
	if fs := c.Record(writeRecord(t, ops.Unlink, "tests/x/../config.toml")); fs != nil {
		t.Fatalf("record alone: %+v", fs)
	}
	f := only(t, c.Change(change(Delete, "/proj/config.toml"), 1, time.Now()))
	if f.Path != "/proj/config.toml" || f.Op != "unlink" || f.Requested != "tests/x/../config.toml" || f.Record == nil || f.TGID != 100 || f.Seen != nil {
		t.Errorf("finding %+v", f)
	}
	if s := c.Stats(); s.Changes != 1 || s.Unexplained != 1 {
		t.Errorf("stats %+v", s)
	}
}

// A change at a path the run reported for the same process confirms
// that violation; another process's change at it does not.
func TestReportedViolationIsSeen(t *testing.T) {
	c := checker(t, CheckOptions{})
	g := Group{Op: "open", Path: "/proj/out.txt"}
	c.Noted(100, g, false)
	c.Record(writeRecord(t, ops.Open, "out.txt"))
	f := only(t, c.Change(change(Create|Modify|CloseWrite, "/proj/out.txt"), 1, time.Now()))
	if len(f.Seen) != 1 || f.Seen[0] != g || f.Path != "" {
		t.Errorf("finding %+v", f)
	}
	c.Joined(200, 200)
	other := change(Modify, "/proj/out.txt")
	other.Pid = 200
	if fs := c.Change(other, 2, time.Now()); len(fs) != 0 {
		t.Errorf("another process's change: %+v", fs)
	}
	if fs := c.Expire(time.Now().Add(time.Hour)); len(fs) != 1 || fs[0].Op != report.OpWrite || fs[0].TGID != 200 {
		t.Errorf("another process's change, expired: %+v", fs)
	}
}

// A change read before its record waits for it: the record then
// explains it, or, when none comes, it is reported as the witness names
// it.
func TestChangeWaitsForItsRecord(t *testing.T) {
	c := checker(t, CheckOptions{})
	if fs := c.Change(change(Rename, "/proj/b.txt"), 1, time.Now()); len(fs) != 0 {
		t.Fatalf("before its record: %+v", fs)
	}
	c.Noted(100, Group{Op: "rename", Path: "/proj/b.txt", Role: "new"}, false)
	f := only(t, c.Record(writeRecord(t, ops.Rename, "tests/a.txt", nil, []byte("b.txt\x00"))))
	if len(f.Seen) != 1 || f.Seen[0].Path != "/proj/b.txt" {
		t.Errorf("explained by the record's violation: %+v", f)
	}

	c.Change(change(Delete, "/proj/c.txt"), 2, time.Now())
	f = only(t, c.Record(writeRecord(t, ops.Unlink, "tests/z/../c.txt")))
	if f.Op != "unlink" || f.Requested != "tests/z/../c.txt" || f.Path != "/proj/c.txt" {
		t.Errorf("explained by an allowed record: %+v", f)
	}

	c.Change(change(Modify|CloseWrite, "/proj/d.txt"), 3, time.Now())
	if fs := c.Expire(time.Now()); len(fs) != 0 {
		t.Errorf("expired too soon: %+v", fs)
	}
	f = only(t, c.Expire(time.Now().Add(wait)))
	if f.Op != report.OpWrite || f.Path != "/proj/d.txt" || f.Record != nil {
		t.Errorf("no record: %+v", f)
	}
	// Once reported by the filesystem alone, the path's next changes are
	// occurrences of it at once.
	c.Noted(100, Group{Op: report.OpWrite, Path: "/proj/d.txt"}, true)
	f = only(t, c.Change(change(Modify, "/proj/d.txt"), 4, time.Now()))
	if f.Op != report.OpWrite || f.Path != "/proj/d.txt" {
		t.Errorf("again: %+v", f)
	}
}

// Both names of a rename are judged, each in its role.
func TestRenameRoles(t *testing.T) {
	c := checker(t, CheckOptions{})
	ev := change(Rename, "/proj/tests/new")
	ev.OldPath = "/proj/config.toml"
	c.Change(ev, 1, time.Now())
	f := only(t, c.Flush())
	if f.Path != "/proj/config.toml" || f.Role != report.RoleOld || f.Op != ops.Rename.String() {
		t.Errorf("finding %+v", f)
	}
}

// What the witness names for changes no record explains.
func TestWitnessOp(t *testing.T) {
	for _, c := range []struct {
		op   Op
		dir  bool
		want string
	}{
		{Create | Modify | CloseWrite, false, report.OpCreate},
		{Create, true, ops.Mkdir.String()},
		{Delete, false, ops.Unlink.String()},
		{Delete, true, ops.Rmdir.String()},
		{Modify, false, report.OpWrite},
		{CloseWrite, false, report.OpWrite},
		{Attrib, false, report.OpAttrib},
		{Rename, false, ops.Rename.String()},
	} {
		if got := witnessOp(&Event{Op: c.op, IsDir: c.dir}, ""); got != c.want {
			t.Errorf("%s (dir %v): %s, want %s", c.op, c.dir, got, c.want)
		}
	}
}

// An operation witnessOp names a change by is one that makes such a
// change, as its row says: the two are kept in step.
func TestWitnessOpInTable(t *testing.T) {
	for op := Op(1); op < Overflow; op++ {
		for _, dir := range []bool{false, true} {
			we := &Event{Op: op, IsDir: dir, Path: "/p/new", OldPath: "/p/old"}
			var ts [2]target
			for _, tg := range targets(we, &ts) {
				name := witnessOp(we, tg.role)
				rec, ok := ops.ByName(name)
				if !ok {
					continue // create, write, attrib: no operation's name
				}
				if !compatible(rec, op, tg.role) {
					t.Errorf("%s (dir %v, role %q) is named %s, which its row says cannot make it", op, dir, tg.role, name)
				}
			}
		}
	}
}

// Changes that change no named file outside the allowlist, or that say
// nothing more than other events do, are no findings; the tree's changes
// without a path and queue overflows make the run incomplete.
func TestChangesLeftAlone(t *testing.T) {
	c := checker(t, CheckOptions{})
	at := time.Now()
	for _, we := range []*Event{
		change(Create|Modify, "/proj/tests/ok.txt"),                                    // allowed
		{Pid: 100, Op: Attrib, Path: "/proj/config.toml", Source: ByObject, Ino: 7},    // a link count change
		{Pid: 100, Op: Delete, Name: "gone", Source: LastKnown, DirIno: 3},             // in a directory gone
		{Pid: 100, Op: Modify, Path: "/proj/#4242", Name: "#4242", Ino: 4242},          // an O_TMPFILE
		{Pid: 100, Op: Modify, Name: "x", Source: Unresolved},                          // no path
		{Pid: 100, Op: Modify, Name: "x", Source: Unresolved},                          // no path
		{Op: Overflow, Source: Unresolved},                                             // lost events
		{Pid: 300, Op: Modify, Path: "/proj/config.toml", Name: "config.toml", Ino: 7}, // not of the tree
	} {
		if fs := c.Change(we, 1, at); len(fs) != 0 {
			t.Errorf("%+v: %+v", we, fs)
		}
	}
	if fs := c.Flush(); len(fs) != 0 {
		t.Errorf("flushed: %+v", fs)
	}
	s := c.Stats()
	if s.Unresolved != 2 || s.Overflows != 1 || s.Unexplained != 0 {
		t.Errorf("stats %+v", s)
	}
	got := strings.Join(c.Incomplete(), "\n")
	if !strings.Contains(got, "overflowed once") || !strings.Contains(got, "2 changes on disk by the tree could not be named") {
		t.Errorf("incomplete:\n%s", got)
	}
	// A process that only forked later was not of the tree then.
	c.Joined(300, 300)
	if fs := c.Caught(^uint64(0)); len(fs) != 0 {
		t.Errorf("a change before the process joined: %+v", fs)
	}
}

// A change of a process the tree did not know yet waits until the
// stream has caught up with it: a fork record handled meanwhile makes it
// the tree's.
func TestUnknownProcessWaitsForTheTree(t *testing.T) {
	c := checker(t, CheckOptions{})
	we := change(Delete, "/proj/config.toml")
	we.Pid = 400
	stamp := uint64(time.Second)
	if fs := c.Change(we, stamp, time.Now()); len(fs) != 0 {
		t.Fatalf("before the tree decided: %+v", fs)
	}
	if fs := c.Caught(stamp); len(fs) != 0 {
		t.Fatalf("within the margin: %+v", fs)
	}
	c.Joined(400, 400)
	c.Caught(stamp + margin)
	f := only(t, c.Flush())
	if f.Path != "/proj/config.toml" || f.TGID != 400 {
		t.Errorf("finding %+v", f)
	}
}

// A process that left stays of the tree until a barrier placed after
// its exit is reached.
func TestLeftUntilBarrier(t *testing.T) {
	c := checker(t, CheckOptions{})
	c.Joined(500, 500)
	if _, ok := c.Barrier(); ok {
		t.Error("a barrier with nobody leaving")
	}
	c.Left(500, 500)
	id, ok := c.Barrier()
	if !ok {
		t.Fatal("no barrier for a process that left")
	}
	c.Joined(501, 501)
	c.Left(501, 501) // after the barrier was placed
	if _, ok := c.Barrier(); ok {
		t.Error("a second barrier while one is in flight")
	}
	if !c.Wanted(500) || !c.Wanted(501) {
		t.Error("left processes not wanted before the barrier")
	}
	c.BarrierReached(id)
	if _, ok := c.members.has(500); ok {
		t.Error("500 still a member after the barrier")
	}
	if _, ok := c.members.has(501); !ok {
		t.Error("501 left after the barrier was placed, and is gone")
	}
	id2, ok := c.Barrier()
	if !ok || id2 <= id {
		t.Fatalf("next barrier %d after %d", id2, id)
	}
	c.BarrierReached(id2)
	if _, ok := c.members.has(501); ok {
		t.Error("501 still a member after its barrier")
	}
}

// Wanted declines writewatch itself and live processes the kernel does
// not count in the tree (remembered until they exit), and keeps members,
// processes the kernel counts, and processes already gone.
func TestWanted(t *testing.T) {
	tracked := map[uint32]bool{}
	c := checker(t, CheckOptions{Self: 42, Tracked: func(tgid uint32) bool { return tracked[tgid] }})
	defer c.Close()
	if c.Wanted(42) || c.Wanted(0) {
		t.Error("writewatch itself, or pid 0, wanted")
	}
	if !c.Wanted(100) {
		t.Error("a member not wanted")
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	pid := int32(sleeper.Process.Pid)
	tracked[uint32(pid)] = true
	if !c.Wanted(pid) {
		t.Error("a process the kernel counts not wanted")
	}
	tracked[uint32(pid)] = false
	if c.Wanted(pid) || c.Wanted(pid) {
		t.Error("a live process outside the tree wanted")
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	time.Sleep(2 * reapEvery) // Wanted asks which exited once a millisecond
	if !c.Wanted(pid) {
		t.Error("a process gone (its pid may be reused) not wanted")
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // exited, not reaped: a zombie
	if !c.Wanted(int32(zombie.Process.Pid)) {
		t.Error("a zombie (maybe of the tree, just exited) not wanted")
	}
	zombie.Wait()
}

// A busy directory whose every entry is allowed is ignored; one a deny
// entry reaches below is not.
func TestBusyDirectoryIgnored(t *testing.T) {
	var ignored []string
	c := checker(t, CheckOptions{
		Allow:  list(t, "allow:\n  - /proj/tests/**\ndeny:\n  - /proj/tests/keep/secret\n"),
		Ignore: func(dir string) error { ignored = append(ignored, dir); return nil },
	})
	for i := range 3 * busyAfter {
		for _, dir := range []string{"/proj/tests/busy", "/proj/tests/keep", "/proj/tests/calm"} {
			if dir == "/proj/tests/calm" && i >= busyAfter-1 {
				continue
			}
			c.Change(change(Modify, fmt.Sprintf("%s/f%d", dir, i)), 1, time.Now())
		}
	}
	if !slices.Equal(ignored, []string{"/proj/tests/busy"}) {
		t.Errorf("ignored %q", ignored)
	}
	if c.Stats().Ignored != 1 {
		t.Errorf("stats %+v", c.Stats())
	}
}

// HeldFile names the file a descriptor held, while the process has it,
// and else finds its other names; an O_TMPFILE has none.
func TestHeldFile(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	cfgFile := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "tests"), 0o755)
	c := NewChecker(CheckOptions{Allow: list(t, "allow:\n  - "+dir+"/tests/**\n"), Roots: []string{dir}, InitialPIDNS: true})
	f, err := os.Open(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "tests", "h")
	if err := os.Link(cfgFile, link); err != nil {
		t.Fatal(err)
	}
	ev := &tracer.Event{TGID: uint32(os.Getpid())}
	fdPath := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if got, ok := c.HeldFile(ev, fdPath, link); !ok || got != cfgFile {
		t.Errorf("by descriptor: %q %v", got, ok)
	}
	f.Close()
	if got, ok := c.HeldFile(ev, fdPath, link); !ok || got != cfgFile {
		t.Errorf("by its other names: %q %v", got, ok)
	}
	// The descriptor's number reused by an open of the new link: its
	// other names are looked for.
	g, err := os.OpenFile(link, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	reused := fmt.Sprintf("/proc/self/fd/%d", g.Fd())
	if got, ok := c.HeldFile(ev, reused, link); !ok || got != cfgFile {
		t.Errorf("a descriptor of the new link: %q %v, want %q", got, ok, cfgFile)
	}
	g.Close()
	if len(c.opts.Ledger.Reasons()) != 0 {
		t.Errorf("incomplete: %q", c.opts.Ledger.Reasons())
	}
	// Other names outside the roots: the run could not see everything.
	c.opts.Roots = []string{filepath.Join(dir, "tests")}
	if got, ok := c.HeldFile(ev, fdPath, link); ok {
		t.Errorf("found %q outside the roots", got)
	}
	if len(c.opts.Ledger.Reasons()) != 1 {
		t.Errorf("incomplete: %q", c.opts.Ledger.Reasons())
	}
	// One link: no other name.
	single := filepath.Join(dir, "tests", "single")
	os.WriteFile(single, nil, 0o644)
	if got, ok := c.HeldFile(ev, fdPath, single); ok {
		t.Errorf("a file with one name: %q", got)
	}
}

// An O_TMPFILE linked into place through its descriptor had no other
// name: HeldFile finds none.
func TestHeldFileTmpfile(t *testing.T) {
	dir := t.TempDir()
	c := NewChecker(CheckOptions{Allow: list(t, "allow:\n  - "+dir+"/**\n"), Roots: []string{dir}, InitialPIDNS: true})
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Skip("no O_TMPFILE here:", err)
	}
	defer unix.Close(fd)
	fdPath := fmt.Sprintf("/proc/self/fd/%d", fd)
	link := filepath.Join(dir, "named")
	if err := unix.Linkat(unix.AT_FDCWD, fdPath, unix.AT_FDCWD, link, unix.AT_SYMLINK_FOLLOW); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.HeldFile(&tracer.Event{TGID: uint32(os.Getpid())}, fdPath, link); ok {
		t.Errorf("found %q", got)
	}
	if len(c.opts.Ledger.Reasons()) != 0 {
		t.Errorf("incomplete: %q", c.opts.Ledger.Reasons())
	}
}

// A reported file the witness keeps seeing written is ignored for its
// writes, once; its removal is still judged.
func TestReportedFileQuietened(t *testing.T) {
	var files []string
	c := checker(t, CheckOptions{IgnoreFile: func(p string) error { files = append(files, p); return nil }})
	c.Noted(100, Group{Op: "open", Path: "/proj/loop.txt"}, false)
	for range 3 * quietAfter {
		if fs := c.Change(change(Modify|CloseWrite, "/proj/loop.txt"), 1, time.Now()); len(fs) != 1 || fs[0].Seen == nil {
			t.Fatalf("findings %+v", fs)
		}
	}
	c.Change(change(Delete, "/proj/loop.txt"), 1, time.Now())
	if !slices.Equal(files, []string{"/proj/loop.txt"}) || c.Stats().IgnoredFiles != 1 {
		t.Errorf("ignored %q (stats %+v)", files, c.Stats())
	}
}
