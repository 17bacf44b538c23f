package witness

import (
	"bytes"
	"errors"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/pathwalk"
)

// maxCache bounds each filesystem's directory caches; a full cache is
// emptied and fills again from resolutions.
const maxCache = 1 << 16

// process handles one read's worth of records, in order.
func (w *Witness) process(buf []byte) error {
	var r record
	for len(buf) > 0 {
		n, err := decodeRecord(buf, &r)
		if err != nil {
			return err
		}
		buf = buf[n:]
		w.stats.read.Add(1)
		w.seq++
		w.handle(&r)
	}
	return nil
}

const moveMask = unix.FAN_RENAME | unix.FAN_MOVED_FROM | unix.FAN_MOVED_TO

func (w *Witness) handle(r *record) {
	if r.mask&unix.FAN_Q_OVERFLOW != 0 {
		w.stats.overflows.Add(1)
		// Lost events may have moved directories: no cached path is sure.
		for _, fs := range w.fss {
			clear(fs.dirs)
		}
		w.deliver(Event{Seq: w.seq, Op: Overflow, Source: Unresolved})
		w.wakeSyncs("")
		return
	}
	if r.pid == w.self && w.syncMarker(r) {
		return
	}
	fs := w.byFsid[r.fsid]
	if w.opts.Wanted != nil && !w.opts.Wanted(r.pid) {
		w.stats.skipped.Add(1)
		if fs != nil {
			w.forget(fs, r)
		}
		return
	}
	ev := Event{Seq: w.seq, Pid: r.pid, Op: opsOf(r.mask), IsDir: r.mask&unix.FAN_ONDIR != 0}
	if fs == nil {
		// Only the sync directory is watched outside w.fss.
		ev.Name, ev.Source = string(r.name), Unresolved
		w.deliver(ev)
		return
	}
	w.build(fs, r, &ev)
	if ev.Source != Layer && w.inLayer(ev.Path) && (ev.OldPath == "" || w.inLayer(ev.OldPath)) {
		ev.Source = Layer
	}
	w.forget(fs, r)
	w.learn(fs, r, &ev)
	w.deliver(ev)
}

func (w *Witness) deliver(ev Event) {
	if ev.Path == "" && ev.Op != Overflow && ev.Op != MoveSelf {
		w.stats.unresolved.Add(1)
	}
	w.stats.delivered.Add(1)
	w.opts.Handle(ev)
}

func opsOf(mask uint64) Op {
	var o Op
	for _, m := range [...]struct {
		bit uint64
		op  Op
	}{
		{unix.FAN_CREATE, Create}, {unix.FAN_DELETE, Delete},
		{unix.FAN_MOVED_FROM, MoveFrom}, {unix.FAN_MOVED_TO, MoveTo},
		{unix.FAN_RENAME, Rename}, {unix.FAN_ATTRIB, Attrib},
		{unix.FAN_MODIFY, Modify}, {unix.FAN_CLOSE_WRITE, CloseWrite},
		{unix.FAN_MOVE_SELF, MoveSelf},
	} {
		if mask&m.bit != 0 {
			o |= m.op
		}
	}
	return o
}

// syncMarker reports whether r is one of Sync's own events, and wakes
// the Sync waiting for it.
func (w *Witness) syncMarker(r *record) bool {
	if r.fsid != w.syncFsid || !r.hasDir || !bytes.HasPrefix(r.name, []byte(w.syncPrefix)) {
		return false
	}
	w.wakeSyncs(string(r.name))
	return true
}

// build fills in ev's paths and identities from r.
func (w *Witness) build(fs *fsys, r *record, ev *Event) {
	ev.Dev = fs.dev
	if r.obj.ok() {
		ev.Ino = fs.ino(r.obj)
		ev.Handle = string(handleKey(w.keyBuf, r.obj))
	}
	switch {
	case r.hasDir && !r.isDot():
		dir, src := w.dirPath(fs, r.dir)
		ev.Path, ev.Source = join(dir, r.name), src
		ev.DirIno, ev.Name = fs.ino(r.dir), string(r.name)
		if r.hasNew {
			dir, src := w.dirPath(fs, r.newDir)
			ev.OldPath = ev.Path
			if (src == Layer) != (ev.Source == Layer) {
				// Into or out of an overlay's layers: not the overlay's.
				ev.Source, src = Unresolved, Unresolved
			}
			ev.Path, ev.Source = join(dir, r.newName), max(ev.Source, src)
			ev.DirIno, ev.Name = fs.ino(r.newDir), string(r.newName)
		}
	case r.hasNew:
		dir, src := w.dirPath(fs, r.newDir)
		ev.Path, ev.Source = join(dir, r.newName), src
		ev.DirIno, ev.Name = fs.ino(r.newDir), string(r.newName)
	case r.hasDir:
		// An event on a directory itself: the kernel names it as "."
		// in itself.
		ev.Path, ev.Source = w.dirPath(fs, r.dir)
		ev.Ino = fs.ino(r.dir)
		ev.Handle = string(handleKey(w.keyBuf, r.dir))
	case r.obj.ok() && r.mask&^unix.FAN_ONDIR == unix.FAN_MOVE_SELF:
		// A rename's end: its object is all that matters (renames.go),
		// not a path, which its Rename gave.
		ev.Source = Unresolved
	case r.obj.ok():
		ev.Path, ev.Source = w.objectPath(fs, r.obj)
	default:
		ev.Source = Unresolved
	}
}

func join(dir string, name []byte) string {
	switch dir {
	case "":
		return ""
	case "/":
		return "/" + string(name)
	}
	return dir + "/" + string(name)
}

func (fs *fsys) ino(h handle) uint64 {
	if !fs.trusted {
		return 0
	}
	return layoutOf(h.typ, len(h.bytes)).ino(h.bytes)
}

// dirPath resolves a directory handle: from the cache, else through the
// filesystem's mounts, else from the last path the directory was seen at.
func (w *Witness) dirPath(fs *fsys, h handle) (string, Source) {
	w.keyBuf = handleKey(w.keyBuf, h)
	if p, ok := fs.dirs[string(w.keyBuf)]; ok {
		return p, ByName
	}
	if _, ok := fs.layerDirs[string(w.keyBuf)]; ok {
		return "", Layer
	}
	p, err := w.lookupHandle(fs, h)
	w.keyBuf = handleKey(w.keyBuf, h)
	switch {
	case err == nil:
		key := string(w.keyBuf)
		fs.remember(key, p)
		return p, ByName
	case errors.Is(err, errStale):
		if last, ok := fs.lastKnown[string(w.keyBuf)]; ok {
			return last, LastKnown
		}
		return p, LastKnown
	case errors.Is(err, errMoved) && w.hiddenLayers:
		if len(fs.layerDirs) >= maxCache {
			clear(fs.layerDirs)
		}
		fs.layerDirs[string(w.keyBuf)] = struct{}{}
		return "", Layer
	}
	return "", Unresolved
}

// objectPath resolves the handle of an object the kernel reported
// without its directory.
func (w *Witness) objectPath(fs *fsys, h handle) (string, Source) {
	p, err := w.lookupHandle(fs, h)
	switch {
	case err == nil:
		return p, ByObject
	case errors.Is(err, errStale):
		return p, LastKnown
	case errors.Is(err, errMoved) && w.hiddenLayers:
		return "", Layer
	}
	return "", Unresolved
}

// inLayer reports whether path is in an overlay's upper or work
// directory.
func (w *Witness) inLayer(path string) bool {
	if path == "" {
		return false
	}
	for _, l := range w.layers {
		if pathwalk.Within(path, l) {
			return true
		}
	}
	return false
}

func (fs *fsys) remember(key, path string) {
	if len(fs.dirs) >= maxCache {
		clear(fs.dirs)
	}
	if len(fs.lastKnown) >= maxCache {
		clear(fs.lastKnown)
	}
	fs.dirs[key] = path
	fs.lastKnown[key] = path
}

// forget applies the cache rule to r, which is read in order: a
// directory moved on fs may have changed the path of any directory
// under it, so every cached path of fs goes; a directory deleted goes
// (all of fs's when the kernel did not say which).
func (w *Witness) forget(fs *fsys, r *record) {
	if r.mask&unix.FAN_ONDIR == 0 {
		return
	}
	switch {
	case r.mask&moveMask != 0:
		clear(fs.dirs)
	case r.mask&unix.FAN_DELETE != 0:
		if !r.obj.ok() {
			clear(fs.dirs)
			return
		}
		w.keyBuf = handleKey(w.keyBuf, r.obj)
		delete(fs.dirs, string(w.keyBuf))
	}
}

// learn remembers where a directory was created or moved to, from the
// event itself: the path it had then, exact as of the event. A directory
// the same event says was deleted too (the kernel merged its mkdir and
// rmdir) is remembered only as last known, for the events of what it
// held, which come after.
func (w *Witness) learn(fs *fsys, r *record, ev *Event) {
	if !ev.IsDir || !r.obj.ok() || ev.Path == "" || ev.Source != ByName ||
		r.mask&(unix.FAN_CREATE|unix.FAN_MOVED_TO|unix.FAN_RENAME) == 0 {
		return
	}
	key := string(handleKey(w.keyBuf, r.obj))
	if r.mask&unix.FAN_DELETE != 0 {
		fs.lastKnown[key] = ev.Path
		return
	}
	fs.remember(key, ev.Path)
}
