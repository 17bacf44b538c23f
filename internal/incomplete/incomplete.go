// Package incomplete keeps the reasons a run could not see everything:
// one ledger that every part of a run writes to (the filesystem witness,
// the judge, the kernel's counters at the end) and the report reads
// (report.Report.Incomplete). A run with any reason is incomplete: it
// never passes clean.
package incomplete

import "slices"

// Ledger is the reasons, each once, in the order they were first given.
// The zero value is ready to use. Not safe for concurrent use.
type Ledger struct {
	reasons []string
}

// Add notes a reason, unless it is noted already.
func (l *Ledger) Add(reason string) {
	if reason != "" && !slices.Contains(l.reasons, reason) {
		l.reasons = append(l.reasons, reason)
	}
}

// Reasons lists the reasons noted; a new slice.
func (l *Ledger) Reasons() []string { return slices.Clone(l.reasons) }
