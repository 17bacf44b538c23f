package session

// Cross-test reads: a test's read-only open of a file that another test
// of the run wrote outside the allowlist. The kernel sends read records
// only of files whose write records it sent (bpf/lib/reads.h); the
// session keeps those written outside the allowlist, with their writers,
// and names each reader.

import (
	"cmp"
	"slices"
	"strings"

	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// fileOf names the file a record's SlotResolved holds, if any.
func fileOf(ev *tracer.Event) (FileID, bool) {
	return FileID{Dev: uint64(ev.Dev), Ino: ev.Ino, Gen: ev.Gen}, ev.Ino != 0 && ev.Has(tracer.SlotResolved)
}

// wrote takes a write outside the allowlist, by who, whose op is op.
func (c *CrossReads) wrote(tree *attribution.Tree, ev *tracer.Event, who report.Who, op string) {
	id, ok := fileOf(ev)
	if !ok || (ev.Ret < 0 && !ev.ViaIOUring) {
		return
	}
	if ev.Created {
		c.Created(id)
	}
	if who.Test == "" || c.HasWriter(id, who.Runner, who.Package, who.Test) {
		return
	}
	c.Wrote(id, access(tree, ev, who, op))
}

// read takes a read record: a read-only open of a file the run wrote,
// which is a cross-test read when another test wrote it outside the
// allowlist.
func (c *CrossReads) read(tree *attribution.Tree, tests *attribution.Tests, ev *tracer.Event) {
	id, ok := fileOf(ev)
	if !ok || !c.Written(id) {
		return // a file the kernel sent a write record of that was allowed
	}
	var path []byte
	path = ev.AppendDir(path, tracer.SlotResolved)
	c.Read(id, string(path), access(tree, ev, tests.Attribute(ev), ""))
}

// fill puts the reads in rep.
func (c *CrossReads) fill(rep *report.Report) {
	rep.CrossTestReads, rep.UnlistedCrossTestReads = c.Reads(), c.Unlisted
}

// access describes who wrote or read, for a cross-test read.
func access(tree *attribution.Tree, ev *tracer.Event, who report.Who, op string) report.Access {
	return report.Access{Op: op, Who: who, PID: tree.Report(ev.TGID).PID, Comm: string(ev.Comm), First: ev.Time}
}

// readerKey names a reader: its test, or its phase outside tests.
func readerKey(a *report.Access) string {
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
	written map[FileID][]report.Access
	seen    map[crossKey]bool
	reads   []report.CrossTestRead
	// Limit caps the reads kept (0: no cap); Unlisted counts those beyond.
	Limit    int
	Unlisted uint64
	// UsesFixture, when not nil, says whether test id of runner's pkg
	// uses fixture (attribution.Tests.UsesFixture).
	UsesFixture func(runner, pkg, id, fixture string) bool
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
func (c *CrossReads) Wrote(id FileID, w report.Access) {
	if w.Test == "" || c.HasWriter(id, w.Runner, w.Package, w.Test) {
		return
	}
	if c.written == nil {
		c.written = map[FileID][]report.Access{}
	}
	c.written[id] = append(c.written[id], w)
}

// own reports whether w's write is r's test's own: the same test; a Go
// test and one of its subtests, either way (a subtest always runs inside
// its parent, so neither runs without the other); or the setup of a
// fixture that r's test uses (UsesFixture), though it ran in another
// test (a fixture of a wider scope is set up once, by the first test
// that needs it: run alone, r's test would set it up itself).
func (c *CrossReads) own(w, r *report.Access) bool {
	if w.Runner != r.Runner {
		return false
	}
	if w.Package == r.Package {
		if w.Test == r.Test {
			return true
		}
		if r.Runner == report.RunnerGo && (subtestOf(r.Test, w.Test) || subtestOf(w.Test, r.Test)) {
			return true
		}
	}
	return w.Fixture != "" && c.UsesFixture != nil && c.UsesFixture(r.Runner, r.Package, r.Test, w.Fixture)
}

// subtestOf reports whether Go test sub is a subtest of parent, at any
// depth.
func subtestOf(sub, parent string) bool {
	return len(sub) > len(parent) && sub[len(parent)] == '/' && strings.HasPrefix(sub, parent)
}

// Written reports whether file id was written outside the allowlist by a
// test, as far as Wrote was told.
func (c *CrossReads) Written(id FileID) bool { return len(c.written[id]) > 0 }

// Read notes that r read file id at path, and reports whether that was a
// cross-test read: the file was written outside the allowlist by another
// test, and no writer was r's own test (own). Reads outside any runner's
// tests or phases (nothing attributed) are not.
func (c *CrossReads) Read(id FileID, path string, r report.Access) bool {
	writers := c.written[id]
	if len(writers) == 0 || (r.Runner == "" && r.Package == "" && r.Test == "" && len(r.AmbiguousTests) == 0) {
		return false
	}
	if r.Test != "" {
		for i := range writers {
			if c.own(&writers[i], &r) {
				return false
			}
		}
	}
	key := crossKey{id, readerKey(&r)}
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
	c.reads = append(c.reads, report.CrossTestRead{Path: path, WrittenBy: slices.Clone(writers), ReadBy: r})
	return true
}

// Reads returns the cross-test reads, by path, then reader; a new slice,
// empty when there were none.
func (c *CrossReads) Reads() []report.CrossTestRead {
	out := slices.Clone(c.reads)
	if out == nil {
		out = []report.CrossTestRead{}
	}
	slices.SortStableFunc(out, func(a, b report.CrossTestRead) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), a.ReadBy.First.Compare(b.ReadBy.First))
	})
	return out
}
