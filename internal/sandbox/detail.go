package sandbox

import (
	"bytes"
	"os"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/writewatch/writewatch/report"
)

// maxDiffBytes bounds the files a diff is made of: a larger one is
// shown by its size and hash.
const maxDiffBytes = 256 << 10

// Detail is what the report shows of a change: the file before and
// after, and, for a text file whose contents changed, a unified diff.
func (sb *Sandbox) Detail(c *Change) *report.Change {
	d := &report.Change{Kind: string(c.Kind), From: c.From, Before: state(c.Before), After: state(c.After)}
	if c.After != nil && c.After.Type == "file" && c.After.SHA256 == "" {
		d.After.SHA256 = hash(sb.Root() + c.Path)
	}
	if c.Before != nil && c.Before.Type == "file" && c.Before.SHA256 == "" {
		d.Before.SHA256 = hash(c.Path)
	}
	if c.Kind != Modified && c.Kind != Created {
		return d
	}
	var before []byte
	if c.Before != nil {
		var ok bool
		if before, ok = text(c.Path); !ok {
			return d
		}
	}
	after, ok := text(sb.Root() + c.Path)
	if !ok || (c.Before == nil && len(after) == 0) {
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

// text reads a file that is text: small, UTF-8, without NUL bytes.
func text(p string) ([]byte, bool) {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxDiffBytes {
		return nil, false
	}
	data, err := os.ReadFile(p)
	if err != nil || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return nil, false
	}
	return data, true
}

func state(f *File) *report.FileState {
	if f == nil {
		return nil
	}
	return &report.FileState{Type: f.Type, Mode: modeString(f), UID: f.UID, GID: f.GID, Size: f.Size, SHA256: f.SHA256, Target: f.Target}
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
