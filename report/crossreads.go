package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// CrossTestRead is one test reading a file outside the allowlist that
// another test of the same run had created or changed: the outcome of the
// reader may depend on which tests ran before it, and in which order.
type CrossTestRead struct {
	// Path is the file as the reader opened it.
	Path string `json:"path"`
	// WrittenBy are the tests that wrote the file before the read, in the
	// order of their first write.
	WrittenBy []Access `json:"written_by"`
	// ReadBy is the test (or phase outside tests) that read it.
	ReadBy Access `json:"read_by"`
}

// Access is one test's write or read of a file: who, with the same
// attribution fields a Violation has, which process, and when first.
type Access struct {
	// Op is the write's operation (a writer only).
	Op             string    `json:"op,omitempty"`
	Runner         string    `json:"runner,omitempty"`
	Package        string    `json:"package,omitempty"`
	Test           string    `json:"test,omitempty"`
	Phase          string    `json:"phase,omitempty"`
	Fixture        string    `json:"fixture,omitempty"`
	AmbiguousTests []string  `json:"ambiguous_tests,omitempty"`
	TestFile       string    `json:"test_file,omitempty"`
	TestLine       int       `json:"test_line,omitempty"`
	PID            int       `json:"pid"`
	Comm           string    `json:"comm"`
	First          time.Time `json:"first"`
}

// AccessOf is the access that violation v describes: its first
// occurrence's test, process and time.
func AccessOf(v *Violation) Access {
	return Access{Op: v.Op, Runner: v.Runner, Package: v.Package, Test: v.Test, Phase: v.Phase,
		Fixture: v.Fixture, AmbiguousTests: v.AmbiguousTests, TestFile: v.TestFile, TestLine: v.TestLine,
		PID: v.PID, Comm: v.Comm, First: v.First}
}

// violation is a as a Violation's attribution, for the text's wording.
func (a *Access) violation() *Violation {
	return &Violation{Op: a.Op, Runner: a.Runner, Package: a.Package, Test: a.Test, Phase: a.Phase, Fixture: a.Fixture,
		AmbiguousTests: a.AmbiguousTests, PID: a.PID, Comm: a.Comm}
}

// testKey names the test of an access: "" when it is no one test (a
// phase outside tests, or ambiguous).
func (a *Access) testKey() string {
	if a.Test == "" {
		return ""
	}
	return a.Runner + "\x00" + a.Package + "\x00" + a.Test
}

// readerKey names a reader: its test, or its phase outside tests.
func (a *Access) readerKey() string {
	return strings.Join(append([]string{a.Runner, a.Package, a.Test, a.Phase, a.Fixture}, a.AmbiguousTests...), "\x00")
}

// FileID names a file the way the kernel does (device, inode number and
// the inode's generation, which tells a file from a later one that reuses
// its number), for CrossReads.
type FileID struct {
	Dev uint64
	Ino uint64
	Gen uint32
}

// CrossReads finds cross-test reads: callers tell it of the writes
// outside the allowlist to known files (Wrote) and of reads of files the
// run wrote (Read). The zero value is ready to use. Not safe for
// concurrent use.
type CrossReads struct {
	written map[FileID][]Access
	seen    map[crossKey]bool
	reads   []CrossTestRead
	// Limit caps the reads kept (0: no cap); Unlisted counts those beyond.
	Limit    int
	Unlisted uint64
}

type crossKey struct {
	file   FileID
	reader string
}

// Created notes that file id was made anew: its earlier writers wrote
// another file that had the same inode number.
func (c *CrossReads) Created(id FileID) { delete(c.written, id) }

// HasWriter reports whether test (runner, pkg, id) wrote file id, as far
// as Wrote was told.
func (c *CrossReads) HasWriter(f FileID, runner, pkg, id string) bool {
	for _, w := range c.written[f] {
		if w.Test == id && w.Package == pkg && w.Runner == runner {
			return true
		}
	}
	return false
}

// Wrote notes that w wrote file id outside the allowlist. Only writes
// by one named test are kept, the first of each test.
func (c *CrossReads) Wrote(id FileID, w Access) {
	if w.Test == "" || c.HasWriter(id, w.Runner, w.Package, w.Test) {
		return
	}
	if c.written == nil {
		c.written = map[FileID][]Access{}
	}
	c.written[id] = append(c.written[id], w)
}

// Written reports whether file id was written outside the allowlist by a
// test, as far as Wrote was told.
func (c *CrossReads) Written(id FileID) bool { return len(c.written[id]) > 0 }

// Read notes that r read file id at path, and reports whether that was a
// cross-test read: the file was written outside the allowlist by another
// test, and r's own test had not written it. Reads outside any runner's
// tests or phases (nothing attributed) are not.
func (c *CrossReads) Read(id FileID, path string, r Access) bool {
	writers := c.written[id]
	if len(writers) == 0 || (r.Runner == "" && r.Package == "" && r.Test == "" && len(r.AmbiguousTests) == 0) {
		return false
	}
	if k := r.testKey(); k != "" {
		for _, w := range writers {
			if w.testKey() == k {
				return false
			}
		}
	}
	key := crossKey{id, r.readerKey()}
	if c.seen[key] {
		return true
	}
	if c.seen == nil {
		c.seen = map[crossKey]bool{}
	}
	c.seen[key] = true
	if c.Limit > 0 && len(c.reads) >= c.Limit {
		c.Unlisted++
		return true
	}
	c.reads = append(c.reads, CrossTestRead{Path: path, WrittenBy: slices.Clone(writers), ReadBy: r})
	return true
}

// Reads returns the cross-test reads, by path, then reader; a new slice,
// empty when there were none.
func (c *CrossReads) Reads() []CrossTestRead {
	out := slices.Clone(c.reads)
	if out == nil {
		out = []CrossTestRead{}
	}
	slices.SortStableFunc(out, func(a, b CrossTestRead) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), a.ReadBy.First.Compare(b.ReadBy.First))
	})
	return out
}

// maxCrossTestReads is the most cross-test reads the summary lists.
const maxCrossTestReads = 10

// crossTestReads explains the order-dependent tests: each test that read
// a file another test wrote, with the tests that wrote it.
//
//	TestB (pkg example.com/app) read /home/u/proj/state.json, which TestA wrote (open)
func (t *textWriter) crossTestReads(r *Report) {
	n := uint64(len(r.CrossTestReads)) + r.UnlistedCrossTestReads
	if n == 0 {
		return
	}
	t.line()
	t.line(fmt.Sprintf("Cross-test reads: %s of a file another test wrote outside the allowlist.", plural(n, "read", "reads")))
	t.line("These pass or fail with the order the tests run in: alone, or before the test that wrote the file, they do not find it as that test left it.")
	for i := range r.CrossTestReads[:min(len(r.CrossTestReads), maxCrossTestReads)] {
		x := &r.CrossTestReads[i]
		reader := x.ReadBy.violation()
		t.line("  " + t.paint(ansiBold, whoText(reader)) + " read " + displayPath(x.Path) + ", which " + writersText(x.WrittenBy, reader) + " wrote")
	}
	if more := n - uint64(min(len(r.CrossTestReads), maxCrossTestReads)); more > 0 {
		t.line(fmt.Sprintf("  … and %d more (the JSON report lists them)", more))
	}
}

// maxWriters is the most writers of one file the summary names.
const maxWriters = 3

// writersText names the tests that wrote a file, each with its
// operation, and its package when it is not the reader's.
func writersText(ws []Access, reader *Violation) string {
	var names []string
	for i := range ws[:min(len(ws), maxWriters)] {
		v := ws[i].violation()
		if v.Package == reader.Package {
			v.Package = ""
		}
		s := whoText(v)
		if v.Op != "" {
			s += " (" + displayText(v.Op) + ")"
		}
		names = append(names, s)
	}
	if more := len(ws) - maxWriters; more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	switch len(names) {
	case 1:
		return names[0]
	case 2:
		return names[0] + " and " + names[1]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
