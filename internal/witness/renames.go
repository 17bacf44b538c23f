package witness

// Renames that replaced a file. The system calls the tracer sees do not
// tell whether a rename's target held a file (where the kernel can hook
// its rename, the record says: tracer.Prior); the witness's queue does.
// A rename's events come in one piece, in the order the kernel made
// them: its Rename (the target's directory and name, and the object
// moved), then, when it replaced a file, that file's link count change
// (an Attrib that names only the file), then the moved object's
// MoveSelf. So a rename replaced a file when a link count change of
// another object by the same process comes between its Rename and its
// MoveSelf, and it replaced none when nothing does. Another thread of
// the process can put events of its own in between: a link count change
// of another file (a link, an unlink) then makes the rename count as
// replacing one, the safe side. A rename whose MoveSelf never came (one
// the kernel merged with an earlier one's, a kernel before FAN_RENAME)
// tells nothing; nor does any after the queue overflowed.

// maxRenamed bounds the paths whose first rename is kept.
const maxRenamed = 1 << 16

// renaming is a rename whose MoveSelf has not come yet.
type renaming struct {
	path     string
	dev, ino uint64
	replaced bool
}

// renamed follows renames through ev, one of the queue's events in its
// order, of any process.
func (c *Checker) renamed(ev *Event) {
	switch {
	case ev.Op&Rename != 0 && ev.Name != "" && ev.Ino != 0:
		if c.renaming == nil {
			c.renaming = map[int32]renaming{}
		}
		c.renaming[ev.Pid] = renaming{path: ev.Path, dev: ev.Dev, ino: ev.Ino}
	case ev.Op&Attrib != 0 && ev.Name == "":
		if r, ok := c.renaming[ev.Pid]; ok && (ev.Ino != r.ino || ev.Dev != r.dev) {
			r.replaced = true
			c.renaming[ev.Pid] = r
		}
	case ev.Op&MoveSelf != 0:
		r, ok := c.renaming[ev.Pid]
		if !ok || ev.Ino != r.ino || ev.Dev != r.dev {
			return
		}
		delete(c.renaming, ev.Pid)
		if c.renamedOnto == nil {
			c.renamedOnto = map[string]bool{}
		}
		if _, seen := c.renamedOnto[r.path]; !seen && r.path != "" && len(c.renamedOnto) < maxRenamed {
			c.renamedOnto[r.path] = r.replaced
		}
	}
}

// RenamedOnto says whether the first rename onto path the witness saw
// replaced a file there, when it can tell (known): not after the queue
// overflowed, nor for a rename whose events did not all come.
func (c *Checker) RenamedOnto(path string) (replaced, known bool) {
	if c.stats.Overflows > 0 {
		return false, false
	}
	replaced, known = c.renamedOnto[path]
	return replaced, known
}
