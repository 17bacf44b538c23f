package render

import (
	"fmt"
	"strings"

	"github.com/writewatch/writewatch/report"
)

// maxCrossTestReads is the most cross-test reads the summary lists.
const maxCrossTestReads = 10

// crossTestReads explains the order-dependent tests: each test that read
// a file another test wrote, with the tests that wrote it.
//
//	TestB (pkg example.com/app) read /home/u/proj/state.json, which TestA wrote (open)
func (t *textWriter) crossTestReads(r *report.Report) {
	n := uint64(len(r.CrossTestReads)) + r.UnlistedCrossTestReads
	if n == 0 {
		return
	}
	t.line()
	t.line(fmt.Sprintf("Cross-test reads: %s of a file another test wrote outside the allowlist.", plural(n, "read", "reads")))
	t.line("These pass or fail with the order the tests run in: alone, or before the test that wrote the file, they do not find it as that test left it.")
	for i := range r.CrossTestReads[:min(len(r.CrossTestReads), maxCrossTestReads)] {
		x := &r.CrossTestReads[i]
		t.line("  " + t.paint(ansiBold, whoText(accessViolation(&x.ReadBy))) + " " + crossReadText(x))
	}
	if more := n - uint64(min(len(r.CrossTestReads), maxCrossTestReads)); more > 0 {
		t.line(fmt.Sprintf("  … and %d more (the JSON report lists them)", more))
	}
}

// crossReadText says what x's reader read, and which tests wrote it:
// "read /p/state.json, which TestA (open) wrote".
func crossReadText(x *report.CrossTestRead) string {
	return "read " + displayPath(x.Path) + ", which " + writersText(x.WrittenBy, accessViolation(&x.ReadBy)) + " wrote"
}

// maxWriters is the most writers of one file the summary names.
const maxWriters = 3

// writersText names the tests that wrote a file, each with its
// operation, and its package when it is not the reader's.
func writersText(ws []report.Access, reader *report.Violation) string {
	var names []string
	for i := range ws[:min(len(ws), maxWriters)] {
		v := accessViolation(&ws[i])
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

// accessViolation is a as a Violation's attribution, for the text's
// wording.
func accessViolation(a *report.Access) *report.Violation {
	w := a.Who
	w.TestFile, w.TestLine = "", 0
	return &report.Violation{Op: a.Op, Who: w, PID: a.PID, Comm: a.Comm}
}
