package witness

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// kernelMark is one mark of the group as /proc/self/fdinfo shows it.
type kernelMark struct {
	ino           uint64 // 0 for a filesystem mark
	sdev          uint64 // the kernel's dev_t of its filesystem
	mask, ignored uint64
}

// kernelMarks lists the marks the kernel holds for w's group.
func kernelMarks(t testing.TB, w *Witness) []kernelMark {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", w.fd))
	must(t, err)
	var marks []kernelMark
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "fanotify ")
		if !ok || strings.HasPrefix(rest, "flags:") {
			continue
		}
		var m kernelMark
		for _, f := range strings.Fields(rest) {
			k, v, _ := strings.Cut(f, ":")
			n, err := strconv.ParseUint(v, 16, 64)
			switch k {
			case "ino":
				m.ino = n
			case "sdev":
				m.sdev = n
			case "mask":
				m.mask = n
			case "ignored_mask":
				m.ignored = n
			default:
				continue
			}
			must(t, err)
		}
		marks = append(marks, m)
	}
	return marks
}

// markOf is the mark of the inode at path, or of its filesystem when fs
// is set; ok is false when the group has none.
func markOf(t testing.TB, w *Witness, path string, fs bool) (kernelMark, bool) {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(path, &st))
	sdev := uint64(unix.Major(st.Dev))<<20 | uint64(unix.Minor(st.Dev))
	for _, m := range kernelMarks(t, w) {
		if m.sdev == sdev && (fs && m.ino == 0 || !fs && m.ino == st.Ino) {
			return m, true
		}
	}
	return kernelMark{}, false
}

// contentEvents are the events that report a write or a close after
// writing of path.
func contentEvents(evs []Event, path string) []Event {
	var out []Event
	for _, ev := range evs {
		if ev.Path == path && ev.Op&(Modify|CloseWrite) != 0 {
			out = append(out, ev)
		}
	}
	return out
}

func watchContents(t testing.TB, w *Witness) {
	t.Helper()
	if err := w.WatchContents(); err != nil {
		t.Fatal(err)
	}
	if !w.ContentsWatched() {
		t.Fatal("ContentsWatched is false after WatchContents")
	}
}

// With ContentsLater, the filesystem mark leaves the content events out:
// writing and closing a file makes no event, while creates, deletes,
// renames and attribute changes do. After WatchContents the same write
// makes Modify and CloseWrite events.
func TestContentsLaterReportsContentsOnlyAfterWatchContents(t *testing.T) {
	dir := tempDir(t)
	must(t, os.WriteFile(dir+"/old", nil, 0o644))
	w, c := start(t, dir, Options{ContentsLater: true})
	if w.ContentsWatched() {
		t.Error("ContentsWatched before WatchContents")
	}
	if m, ok := markOf(t, w, dir, true); !ok || m.mask&contentMask != 0 {
		t.Errorf("filesystem mark %+v (found %v), want one without content events", m, ok)
	}
	pid := runChild(t, nil,
		"append", dir+"/old", ",",
		"write", dir+"/new", ",",
		"chmod", dir+"/new", "600", ",",
		"rename", dir+"/new", dir+"/renamed", ",",
		"unlink", dir+"/renamed")
	sync1(t, w)
	evs := c.events()
	expect(t, evs,
		want{op: Create, path: dir + "/new", pid: pid},
		want{op: Attrib, path: dir + "/new", pid: pid},
		want{op: Delete, path: dir + "/renamed", pid: pid})
	expect(t, evs, renameWant(w, dir+"/new", dir+"/renamed", pid, false)...)
	for _, ev := range evs {
		if ev.Op&(Modify|CloseWrite) != 0 {
			t.Errorf("a content event before WatchContents: %v %s", ev.Op, ev.Path)
		}
	}

	watchContents(t, w)
	if m, ok := markOf(t, w, dir, true); !ok || m.mask&contentMask != contentMask {
		t.Errorf("filesystem mark %+v (found %v) after WatchContents, want the content events", m, ok)
	}
	pid = runChild(t, nil, "append", dir+"/old")
	sync1(t, w)
	expect(t, c.events(), want{op: Modify | CloseWrite, path: dir + "/old", pid: pid})
}

// WatchContents a second time, or with contents watched from the start,
// returns nil and leaves contents watched; after Close it says so.
func TestWatchContentsTwice(t *testing.T) {
	for _, later := range []bool{false, true} {
		t.Run(fmt.Sprintf("later=%v", later), func(t *testing.T) {
			dir := tempDir(t)
			must(t, os.WriteFile(dir+"/f", nil, 0o644))
			w, c := start(t, dir, Options{ContentsLater: later})
			if w.ContentsWatched() == later {
				t.Errorf("ContentsWatched %v at the start with ContentsLater %v", w.ContentsWatched(), later)
			}
			watchContents(t, w)
			watchContents(t, w)
			pid := runChild(t, nil, "append", dir+"/f")
			sync1(t, w)
			expect(t, c.events(), want{op: Modify | CloseWrite, path: dir + "/f", pid: pid})
			must(t, w.Close())
			if err := w.WatchContents(); !errors.Is(err, ErrClosed) {
				t.Errorf("WatchContents after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// WatchFile reports a marked file's writes while contents are not
// watched, resolved like the filesystem marks' events, and not those of
// another file.
func TestWatchFileWhileContentsLater(t *testing.T) {
	dir := tempDir(t)
	must(t, os.WriteFile(dir+"/held", nil, 0o644))
	must(t, os.WriteFile(dir+"/other", nil, 0o644))
	w, c := start(t, dir, Options{ContentsLater: true})
	held, err := os.OpenFile(dir+"/held", os.O_WRONLY, 0)
	must(t, err)
	defer held.Close()
	if err := w.WatchFile(int(held.Fd())); err != nil {
		t.Fatal(err)
	}
	pid := runChild(t, []*os.File{held}, "writefd", "3", ",", "append", dir+"/other")
	must(t, held.Close())
	sync1(t, w)
	evs := c.events()
	// The child's close is not the last; the test's is.
	expect(t, evs,
		want{op: Modify, path: dir + "/held", pid: pid},
		want{op: CloseWrite, path: dir + "/held", pid: int32(os.Getpid())})
	for _, ev := range contentEvents(evs, dir+"/held") {
		if ev.Source != ByName || ev.Ino != ino(t, dir+"/held") || ev.DirIno != ino(t, dir) || ev.Name != "held" {
			t.Errorf("held file's event: %+v, want by name with its inode, directory and name", ev)
		}
	}
	if other := contentEvents(evs, dir+"/other"); len(other) != 0 {
		t.Errorf("content events of a file not marked: %+v", other)
	}
}

// WatchFile refuses a file it could not report: a memfd, a pipe, a file
// on a filesystem that is not watched.
func TestWatchFileRefusesFilesOutsideWatchedFilesystems(t *testing.T) {
	dir := tempDir(t)
	w, _ := start(t, dir, Options{ContentsLater: true})
	mfd, err := unix.MemfdCreate("witness-test", unix.MFD_CLOEXEC)
	must(t, err)
	defer unix.Close(mfd)
	if err := w.WatchFile(mfd); err == nil {
		t.Error("WatchFile accepted a memfd")
	}
	var p [2]int
	must(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if err := w.WatchFile(p[1]); err == nil {
		t.Error("WatchFile accepted a pipe")
	}
	proc, err := os.Open("/proc/self/status")
	must(t, err)
	defer proc.Close()
	if err := w.WatchFile(int(proc.Fd())); err == nil {
		t.Error("WatchFile accepted a file of procfs")
	}
	if len(kernelMarks(t, w)) != 1 {
		t.Errorf("marks after refusals: %+v, want the filesystem's alone", kernelMarks(t, w))
	}
}

// Ignore and IgnoreFile leave the content events out while contents are
// not watched, and WatchContents adds them: an ignored directory's files
// and an ignored file then make no content events, while other files do.
func TestIgnoreBeforeWatchContents(t *testing.T) {
	dir := tempDir(t)
	must(t, os.Mkdir(dir+"/ign", 0o755))
	for _, f := range []string{"/ign/f", "/quiet", "/kept"} {
		must(t, os.WriteFile(dir+f, nil, 0o644))
	}
	w, c := start(t, dir, Options{ContentsLater: true})
	if err := w.Ignore(dir + "/ign"); err != nil {
		if errors.Is(err, ErrUnsupported) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	must(t, w.IgnoreFile(dir+"/quiet"))
	for _, p := range []string{dir + "/ign", dir + "/quiet"} {
		if m, ok := markOf(t, w, p, false); !ok || m.ignored&contentMask != 0 {
			t.Errorf("%s: ignore mark %+v (found %v), want one without content events", p, m, ok)
		}
	}
	// Moved away: WatchContents does not need the paths.
	must(t, os.Rename(dir+"/ign", dir+"/ign2"))
	must(t, os.Rename(dir+"/quiet", dir+"/quiet2"))
	watchContents(t, w)
	for _, p := range []string{dir + "/ign2", dir + "/quiet2"} {
		if m, ok := markOf(t, w, p, false); !ok || m.ignored&contentMask != contentMask {
			t.Errorf("%s: ignore mark %+v (found %v) after WatchContents, want the content events", p, m, ok)
		}
	}
	pid := runChild(t, nil,
		"append", dir+"/ign2/f", ",",
		"append", dir+"/quiet2", ",",
		"append", dir+"/kept")
	sync1(t, w)
	evs := c.events()
	expect(t, evs, want{op: Modify | CloseWrite, path: dir + "/kept", pid: pid})
	for _, p := range []string{dir + "/ign2/f", dir + "/quiet2"} {
		if evs := contentEvents(evs, p); len(evs) != 0 {
			t.Errorf("content events of an ignored file: %+v", evs)
		}
	}
}

// Ignore marks placed while WatchContents runs in another goroutine all
// end up with the content events.
func TestWatchContentsWhileIgnoring(t *testing.T) {
	dir := tempDir(t)
	const n = 64
	for i := range n {
		must(t, os.Mkdir(fmt.Sprintf("%s/d%d", dir, i), 0o755))
	}
	w, _ := start(t, dir, Options{ContentsLater: true})
	if err := w.Ignore(dir + "/d0"); errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() {
			if err := w.Ignore(fmt.Sprintf("%s/d%d", dir, i)); err != nil {
				t.Error(err)
			}
			if i == n/2 {
				if err := w.WatchContents(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if !w.ContentsWatched() {
		t.Fatal("ContentsWatched is false after WatchContents")
	}
	for i := range n {
		p := fmt.Sprintf("%s/d%d", dir, i)
		if m, ok := markOf(t, w, p, false); !ok || m.ignored&contentMask != contentMask {
			t.Errorf("%s: ignore mark %+v (found %v), want the content events", p, m, ok)
		}
	}
}
