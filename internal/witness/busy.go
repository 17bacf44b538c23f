package witness

import (
	"errors"
	"path/filepath"
)

// A directory whose entries the tree changed busyAfter times, all inside
// the allowlist, is ignored by the witness if every entry it can hold is
// allowed: the kernel then drops its entries' events before queuing
// them, which spares the writers most of the witness's cost (a busy test
// directory, a loop rewriting one file).
//
// What an ignored directory hides: changes of its entries, which are
// all allowed, and writes through a hard link made in it to a file
// elsewhere, whose link is judged from the tracer's record. Renames in
// and out of it stay reported (Ignore), and a directory moved
// elsewhere by the tree is judged at its new path by that rename.
//
// A file outside the allowlist that the run already reported, and whose
// writes the witness keeps seeing (a loop rewriting it), is ignored too,
// for its writes and attribute changes only: they would add no path to
// the report. Its names' creation, removal and renames stay reported.
const (
	busyAfter  = 16
	quietAfter = 4    // changes of a reported file before it is ignored
	maxBusy    = 4096 // directories counted at once
	maxIgnored = 1024 // ignore marks placed in a run, of each kind
)

type busyDirs struct {
	counts  map[string]int // -1: ignored, or not to be
	ignored map[string]bool
	files   int // files ignored
	off     bool
}

// quieten ignores the data and attribute changes of a reported file
// outside the allowlist once the witness has seen quietAfter of them.
func (c *Checker) quieten(path string, changes int) {
	b := &c.busy
	if changes != quietAfter || b.off || c.opts.IgnoreFile == nil || b.files >= maxIgnored {
		return
	}
	if err := c.opts.IgnoreFile(path); err != nil {
		if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrClosed) {
			b.off = true
		}
		return
	}
	b.files++
}

// busyDir counts a change, inside the allowlist, of an entry of a
// directory, and ignores the directory once it is busy.
func (c *Checker) busyDir(we *Event) {
	b := &c.busy
	if b.off || c.opts.Ignore == nil {
		return
	}
	dir := we.Path
	if we.Name != "" {
		dir = filepath.Dir(we.Path)
	}
	if b.counts == nil || len(b.counts) >= maxBusy {
		b.counts = map[string]int{}
	}
	n := b.counts[dir]
	if n < 0 {
		return
	}
	if n++; n < busyAfter {
		b.counts[dir] = n
		return
	}
	b.counts[dir] = -1
	if !c.whollyAllowed(dir) || len(b.ignored) >= maxIgnored {
		return
	}
	if err := c.opts.Ignore(dir); err != nil {
		if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrClosed) {
			b.off = true
		}
		return
	}
	if b.ignored == nil {
		b.ignored = map[string]bool{}
	}
	b.ignored[dir] = true
}

// whollyAllowed says every entry dir can hold is inside the allowlist:
// dir is allowed (so is everything under it, unless a deny entry says
// otherwise), and no deny entry can name anything under it.
func (c *Checker) whollyAllowed(dir string) bool {
	if c.opts.Allow == nil || !c.opts.Allow.Allowed(dir) {
		return false
	}
	for _, d := range c.denies {
		if d.Match(dir) || d.CanMatchBelow(dir) {
			return false
		}
	}
	return true
}
