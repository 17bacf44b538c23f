package sandbox

import (
	"cmp"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/writewatch/writewatch/report"
)

// maxDiffBytes bounds the files a diff is made of: a larger one is
// shown by its size and hash.
const maxDiffBytes = 256 << 10

// Detail is what the report shows of a change: the file before and
// after, and, for a text file whose contents changed, a unified diff.
// Each file is read once, for its hash and its text.
func (sb *Sandbox) Detail(c *Change) *report.Change {
	d := &report.Change{Kind: string(c.Kind), From: c.From, Before: state(c.Before), After: state(c.After)}
	var before, after []byte
	beforeText, afterText := c.Before == nil, false
	if c.Before != nil && c.Before.Type == "file" {
		d.Before.SHA256, before, beforeText = contents(c.Path, c.Before.Size)
	}
	switch {
	case c.After == nil || c.After.Type != "file":
	case c.sameData:
		d.After.SHA256 = d.Before.SHA256
	default:
		// The upper layer holds the whole file (metacopy is off): read
		// there rather than through the overlay.
		d.After.SHA256, after, afterText = contents(cmp.Or(c.upper, sb.Root()+c.Path), c.After.Size)
	}
	if c.Kind != Modified && c.Kind != Created || !beforeText || !afterText || (c.Before == nil && len(after) == 0) {
		return d
	}
	diff := udiff.Unified("a"+c.Path, "b"+c.Path, string(before), string(after))
	lines := strings.SplitAfter(diff, "\n")
	if len(lines) > report.DiffLines {
		d.DiffCut = len(lines) - report.DiffLines
		lines = lines[:report.DiffLines]
	}
	d.Diff = strings.Join(lines, "")
	return d
}

func state(f *File) *report.FileState {
	if f == nil {
		return nil
	}
	return &report.FileState{Type: f.Type, Mode: modeString(f), UID: f.UID, GID: f.GID, Size: f.Size, Target: f.Target}
}

// modeString is f's permissions as ls shows them.
func modeString(f *File) string {
	s := f.Mode.String() // "-rwxr-xr-x", with setuid bits as 'u'...
	switch f.Type {
	case "dir":
		s = "d" + s[1:]
	case "symlink":
		s = "l" + s[1:]
	}
	return s
}
