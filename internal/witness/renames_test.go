package witness

import (
	"os"
	"testing"
)

// A rename onto a new name replaces no file; one onto a file's name
// does: the queue says which, between the rename's Rename and its
// MoveSelf (the atomic save of a file that was not there, and of one
// that was).
func TestRenameReplacedAFile(t *testing.T) {
	dir := tempDir(t)
	w, c := start(t, dir, Options{})
	c.setKeep(func(ev Event) bool { return ev.Path == "" }) // the link count changes and MoveSelfs
	must(t, os.WriteFile(dir+"/old.json", []byte("before the run"), 0o644))
	sync1(t, w)
	runChild(t, nil, "write", dir+"/a.tmp", ",", "rename", dir+"/a.tmp", dir+"/new.json")
	runChild(t, nil, "write", dir+"/b.tmp", ",", "rename", dir+"/b.tmp", dir+"/old.json")
	runChild(t, nil, "write", dir+"/c.tmp", ",", "rename", dir+"/c.tmp", dir+"/new.json")
	sync1(t, w)
	if !w.Features().Rename {
		t.Skip("no FAN_RENAME (Linux 5.17)")
	}
	ch := NewChecker(CheckOptions{})
	for _, ev := range c.events() {
		ch.renamed(&ev)
	}
	for _, want := range []struct {
		path     string
		replaced bool
	}{{dir + "/new.json", false}, {dir + "/old.json", true}} {
		replaced, known := ch.RenamedOnto(want.path)
		if !known || replaced != want.replaced {
			t.Errorf("%s: replaced %v, known %v; want replaced %v", want.path, replaced, known, want.replaced)
		}
	}
	if _, known := ch.RenamedOnto(dir + "/a.tmp"); known {
		t.Errorf("a.tmp was never renamed onto")
	}
}

// After an overflow, no rename is known: its events may be lost.
func TestRenamedOntoAfterOverflow(t *testing.T) {
	ch := NewChecker(CheckOptions{})
	for _, ev := range []Event{
		{Pid: 7, Op: Rename, Path: "/p/x.json", Name: "x.json", Dev: 1, Ino: 10},
		{Pid: 8, Op: Attrib, Dev: 1, Ino: 11}, // another process's
		{Pid: 7, Op: MoveSelf, Dev: 1, Ino: 10},
		{Pid: 7, Op: Rename, Path: "/p/y.json", Name: "y.json", Dev: 1, Ino: 12},
		{Pid: 7, Op: Attrib, Dev: 1, Ino: 13},
		{Pid: 7, Op: MoveSelf, Dev: 1, Ino: 12},
		{Pid: 7, Op: Rename, Path: "/p/z.json", Name: "z.json", Dev: 1, Ino: 14}, // no MoveSelf
	} {
		ch.Change(&ev, 0, ch.opts.Now())
	}
	for path, want := range map[string]bool{"/p/x.json": false, "/p/y.json": true} {
		if replaced, known := ch.RenamedOnto(path); !known || replaced != want {
			t.Errorf("%s: replaced %v, known %v; want %v", path, replaced, known, want)
		}
	}
	if _, known := ch.RenamedOnto("/p/z.json"); known {
		t.Error("a rename whose MoveSelf never came is known")
	}
	ch.Change(&Event{Op: Overflow}, 0, ch.opts.Now())
	if _, known := ch.RenamedOnto("/p/x.json"); known {
		t.Error("known after an overflow")
	}
}
