package witness

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/writewatch/writewatch/tracer"
)

// HeldFile finds the file a hard link was made from when the call named
// it by a descriptor the process held (/proc/self/fd/N with
// AT_SYMLINK_FOLLOW, or "" with AT_EMPTY_PATH, fdPath ""): a file the
// process may have opened read-only or O_PATH, which the tracer saw no
// write to. linkPath is the new name.
//
// It reads the descriptor's link in /proc while the process still has
// it. A file with no name then (O_TMPFILE, the usual idiom) is no
// other file: ok is false. When the descriptor is gone, a file with one
// link has no other name either; for a file with more, the other names
// are looked for under Options.Roots, the first outside the allowlist
// returned; when not all are found, the run could not see everything
// (Incomplete). So are they when the descriptor names the new link
// itself: the process closed the one it linked, and its number went to
// an open of the new name (ln, then a write through it, read after
// both), which tells nothing of the file's other names.
func (c *Checker) HeldFile(ev *tracer.Event, fdPath, linkPath string) (string, bool) {
	if target, ok := c.heldByDescriptor(ev, fdPath, linkPath); ok && target != filepath.Clean(linkPath) {
		if !strings.HasPrefix(target, "/") || strings.HasSuffix(target, " (deleted)") {
			return "", false
		}
		return target, true
	}
	st, err := c.opts.Host.Lstat(linkPath)
	if err != nil || st.Nlink < 2 || st.IsDir() {
		return "", false
	}
	names := c.opts.Host.OtherNames(st.Dev, st.Ino, linkPath, int(st.Nlink)-1, c.opts.Roots)
	for _, n := range names {
		if c.opts.Allow == nil || !c.opts.Allow.Allowed(n) {
			return n, true
		}
	}
	if len(names) < int(st.Nlink)-1 {
		c.Incompletely("a hard link was made to a file held open (" + linkPath + "), whose other names writewatch could not find: writes through it may have changed a file outside the allowlist")
	}
	return "", false
}

// heldByDescriptor reads the link of the descriptor fdPath names, in the
// writing process's /proc, when it still has it and it still is the
// file linked.
func (c *Checker) heldByDescriptor(ev *tracer.Event, fdPath, linkPath string) (string, bool) {
	rest, ok := strings.CutPrefix(fdPath, "/proc/")
	if !ok {
		return "", false
	}
	who, rest, _ := strings.Cut(rest, "/")
	switch who {
	case "self", "thread-self":
		pid := ev.NSTGID
		if c.opts.InitialPIDNS || pid == 0 {
			pid = ev.TGID
		}
		who = strconv.FormatUint(uint64(pid), 10)
	}
	n, ok := strings.CutPrefix(rest, "fd/")
	if !ok {
		return "", false
	}
	held := c.opts.Host.Descriptor("/proc/"+who+"/fd/"+n, linkPath)
	return held.Target, held.OK
}
