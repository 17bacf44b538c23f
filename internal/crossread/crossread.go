// Package crossread finds a run's cross-test reads from its records: a
// test's read-only open of a file that another test of the run wrote
// outside the allowlist. The kernel sends read records only of files
// whose write records it sent (bpf/lib/reads.h); this package keeps
// those written outside the allowlist, with their writers, and names
// each reader (report.CrossReads).
package crossread

import (
	"github.com/writewatch/writewatch/internal/attribution"
	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/internal/tracer"
)

// Tracker collects the cross-test reads of one run.
type Tracker struct {
	reads report.CrossReads
}

// New returns a Tracker that lists at most limit reads (0: no limit).
func New(limit int) *Tracker {
	return &Tracker{reads: report.CrossReads{Limit: limit}}
}

// fileOf names the file a record's SlotResolved holds, if any.
func fileOf(ev *tracer.Event) (report.FileID, bool) {
	return report.FileID{Dev: uint64(ev.Dev), Ino: ev.Ino, Gen: ev.Gen}, ev.Ino != 0 && ev.Has(tracer.SlotResolved)
}

// Wrote takes a write outside the allowlist, by who, whose op is op.
func (t *Tracker) Wrote(tree *attribution.Tree, ev *tracer.Event, who attribution.Who, op string) {
	id, ok := fileOf(ev)
	if !ok || (ev.Ret < 0 && !ev.ViaIOUring) {
		return
	}
	if ev.Created {
		t.reads.Created(id)
	}
	if who.Test == "" || t.reads.HasWriter(id, who.Runner, who.Package, who.Test) {
		return
	}
	t.reads.Wrote(id, access(tree, ev, who, op))
}

// Read takes a read record: a read-only open of a file the run wrote,
// which is a cross-test read when another test wrote it outside the
// allowlist.
func (t *Tracker) Read(tree *attribution.Tree, tests *attribution.Tests, ev *tracer.Event) {
	id, ok := fileOf(ev)
	if !ok || !t.reads.Written(id) {
		return // a file the kernel sent a write record of that was allowed
	}
	var path []byte
	path = ev.AppendDir(path, tracer.SlotResolved)
	t.reads.Read(id, string(path), access(tree, ev, tests.Attribute(ev), ""))
}

// Fill puts the reads in rep.
func (t *Tracker) Fill(rep *report.Report) {
	rep.CrossTestReads, rep.UnlistedCrossTestReads = t.reads.Reads(), t.reads.Unlisted
}

// access describes who wrote or read, for a cross-test read.
func access(tree *attribution.Tree, ev *tracer.Event, who attribution.Who, op string) report.Access {
	var v report.Violation
	who.Fill(&v)
	v.Op, v.PID, v.Comm, v.First = op, tree.Report(ev.TGID).PID, string(ev.Comm), ev.Time
	return report.AccessOf(&v)
}
