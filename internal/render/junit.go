package render

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/writewatch/writewatch/report"
)

func init() {
	register(Format{Name: "junit", Usage: "write a JUnit XML report to `FILE`", Example: "junit.xml", Ext: "junit.xml", Write: WriteJUnit})
}

// JUnit XML, as Jenkins, GitLab and GitHub test reporters read it: one
// testsuite per package (Go) or test file (pytest), one testcase per
// test. A test's writes outside the allowlist are a failure of that test;
// writes no single test made (package setup, ambiguous parallel tests,
// runners that announce no tests) are failures of a testcase named for
// what is known. Tests the runner reported (pytest, go test -json) keep
// their own result: failed, skipped or passed.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      string        `xml:"line,attr,omitempty"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// junitFailureType marks failures that are writewatch's findings.
const junitFailureType = "writewatch.WriteOutsideAllowlist"

// junitIncompleteType marks the failure of a run that could not see
// everything.
const junitIncompleteType = "writewatch.Incomplete"

// WriteJUnit writes r as JUnit XML.
func WriteJUnit(w io.Writer, r *report.Report) error {
	if r == nil {
		return fmt.Errorf("report: write JUnit: nil report")
	}
	out := junitSuitesOf(r, junitEntries(r))
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("report: write JUnit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("report: write JUnit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("report: write JUnit: %w", err)
	}
	return nil
}

// junitEntry is one testcase as it is gathered.
type junitEntry struct {
	suite   string
	c       junitCase
	seconds float64
	writes  []*report.Violation
	reads   []*report.CrossTestRead // of files other tests wrote
	outcome string
	message string
	kill    *report.Kill // the kill of the test's process
	lost    bool         // the refused writes whose records were lost
	// incomplete: the testcase that says writewatch could not see
	// everything (Report.Incomplete).
	incomplete bool
}

// junitEntries gathers the testcases, in the order they first appear:
// each test a runner reported, each test (or process) that wrote outside
// the allowlist, one for refused writes whose records were lost, and one
// for a run that could not see everything.
func junitEntries(r *report.Report) []*junitEntry {
	type caseKey struct{ suite, name string }
	var (
		order []*junitEntry
		cases = map[caseKey]*junitEntry{}
	)
	get := func(k caseKey) *junitEntry {
		e := cases[k]
		if e == nil {
			e = &junitEntry{suite: k.suite, c: junitCase{Name: k.name, Classname: k.suite}}
			cases[k] = e
			order = append(order, e)
		}
		return e
	}
	for _, t := range r.Tests {
		e := get(caseKey{suiteName(t.Runner, t.Package), t.ID})
		e.outcome, e.message, e.seconds = t.Outcome, t.Message, t.Seconds
		e.c.File, e.c.Line = t.File, lineAttr(t.Line)
	}
	for i := range r.Violations {
		v := &r.Violations[i]
		if !v.Fails() { // an attempt, or in the baseline
			continue
		}
		e := get(caseKey{suiteName(v.Runner, v.Package), junitCaseName(r, v)})
		if e.c.File == "" {
			e.c.File, e.c.Line = v.TestFile, lineAttr(v.TestLine)
		}
		e.writes = append(e.writes, v)
	}
	for i := range r.CrossTestReads {
		x := &r.CrossTestReads[i]
		if x.ReadBy.Test == "" {
			continue
		}
		e := get(caseKey{suiteName(x.ReadBy.Runner, x.ReadBy.Package), x.ReadBy.Test})
		if e.c.File == "" {
			e.c.File, e.c.Line = x.ReadBy.TestFile, lineAttr(x.ReadBy.TestLine)
		}
		e.reads = append(e.reads, x)
	}
	for i := range r.Kills {
		k := &r.Kills[i]
		suite, name := killCase(r, k)
		if e := get(caseKey{suite, name}); e.kill == nil {
			e.kill = k
			if e.c.File == "" {
				e.c.File, e.c.Line = k.TestFile, lineAttr(k.TestLine)
			}
		}
	}
	// Refused writes whose records were lost fail a testcase of their own.
	if r.LostRefusals > 0 {
		get(caseKey{"writewatch", "refused writes whose records were lost"}).lost = true
	}
	if r.Blind() {
		get(caseKey{"writewatch", "writewatch: incomplete"}).incomplete = true
	}
	return order
}

// finish sets the testcase's time, and its failure or skip.
func (e *junitEntry) finish(r *report.Report) {
	e.c.Time = strconv.FormatFloat(e.seconds, 'f', 3, 64)
	switch {
	case e.lost:
		e.c.Failure = &junitMessage{
			Message: "the kernel refused " + plural(r.LostRefusals, "write", "writes") + " outside the allowlist",
			Type:    junitFailureType,
			Text:    "Their records were lost (ring buffer full): run again with a larger --ringbuf-mib to see them.",
		}
	case e.incomplete:
		e.c.Failure = &junitMessage{
			Message: "writewatch could not see everything: writes outside the allowlist may have gone unseen",
			Type:    junitIncompleteType,
			Text:    strings.Join(r.Incomplete, "\n") + "\n",
		}
	case e.kill != nil:
		e.c.Failure = e.junitKill()
	case len(e.writes) > 0:
		e.c.Failure = &junitMessage{
			Message: plural(len(e.writes), "write", "writes") + " outside the allowlist" + severityCounts(e.writes),
			Type:    junitFailureType,
			Text:    junitWrites(e.writes),
		}
		if e.outcome == report.OutcomeFailed {
			e.c.Failure.Message += "; the test failed too"
			e.c.Failure.Text += "\nThe test's own failure:\n" + e.message
		}
	case e.outcome == report.OutcomeFailed:
		e.c.Failure = &junitMessage{Message: firstLineOf(e.message), Type: "failure", Text: e.message}
	case e.outcome == report.OutcomeSkipped:
		e.c.Skipped = &junitMessage{Message: e.message}
	}
	e.crossReads()
}

// crossReads names the tests that wrote the files the test read: in its
// failure, when it has one, else in its system-out, which leaves its
// result as it was.
func (e *junitEntry) crossReads() {
	if len(e.reads) == 0 {
		return
	}
	text := "Cross-test reads: this test read " + plural(len(e.reads), "file", "files") +
		" other tests wrote outside the allowlist; it passes or fails with the order the tests run in:\n"
	for _, x := range e.reads {
		text += "  " + crossReadText(x) + "\n"
	}
	f := e.c.Failure
	if f == nil {
		e.c.SystemOut = text
		return
	}
	first := "it " + crossReadText(e.reads[0])
	if n := len(e.reads) - 1; n > 0 {
		first += fmt.Sprintf(" (and %d more)", n)
	}
	if f.Type == junitFailureType {
		f.Message += "; " + first
	} else {
		f.Message += " (writewatch: " + first + ")"
	}
	f.Text += "\n" + text
}

// junitSuitesOf groups the testcases into suites, sorted by name, and
// counts them.
func junitSuitesOf(r *report.Report, entries []*junitEntry) junitSuites {
	out := junitSuites{Name: "writewatch"}
	suites := map[string]*junitSuite{}
	var suiteOrder []string
	for _, e := range entries {
		e.finish(r)
		s := suites[e.suite]
		if s == nil {
			s = &junitSuite{Name: e.suite}
			suites[e.suite] = s
			suiteOrder = append(suiteOrder, e.suite)
		}
		s.Cases = append(s.Cases, e.c)
	}
	slices.Sort(suiteOrder)
	for _, name := range suiteOrder {
		s := suites[name]
		var secs float64
		for _, c := range s.Cases {
			s.Tests++
			if c.Failure != nil {
				s.Failures++
			}
			if c.Skipped != nil {
				s.Skipped++
			}
			f, _ := strconv.ParseFloat(c.Time, 64)
			secs += f
		}
		s.Time = strconv.FormatFloat(secs, 'f', 3, 64)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Skipped += s.Skipped
		out.Suites = append(out.Suites, *s)
	}
	return out
}

// suiteName is the testsuite of a test or violation.
func suiteName(runner, pkg string) string {
	switch {
	case pkg != "":
		return pkg
	case runner != "":
		return runner
	}
	return "writewatch"
}

// junitCaseName is the testcase a violation fails: its test, or what is
// known of who wrote when no single test did.
func junitCaseName(r *report.Report, v *report.Violation) string {
	switch {
	case v.Test != "":
		return v.Test
	case len(v.AmbiguousTests) > 0:
		return "one of " + strings.Join(v.AmbiguousTests, ", ")
	case v.Runner == report.RunnerGo && v.Phase == report.PhaseSetup:
		return "(package setup: init, TestMain)"
	case v.Runner == report.RunnerGo && v.Phase == report.PhaseTeardown:
		return "(package teardown: TestMain)"
	case v.Runner == report.RunnerGo && v.Phase == report.PhaseInit:
		return "(package init)"
	case v.Runner == report.RunnerGo && v.Phase == report.PhaseAfter:
		return "(package code after the tests)"
	case v.Phase != "":
		return "(" + v.Phase + ")"
	}
	return "writewatch: " + shortCmdline(r.Command, lineWidth)
}

// junitWrites lists writes one per line, with the process that made
// each and its ancestors.
func junitWrites(vs []*report.Violation) string {
	slices.SortStableFunc(vs, func(a, b *report.Violation) int {
		return cmp.Or(cmp.Compare(report.SeverityRank(a.Severity), report.SeverityRank(b.Severity)), cmp.Compare(a.Path, b.Path))
	})
	var b strings.Builder
	for _, v := range vs {
		if v.Severity != "" {
			b.WriteString("[" + severityLabel(v) + "] ")
		}
		b.WriteString(v.Op)
		if v.Flags != "" {
			b.WriteString(" " + v.Flags)
		}
		b.WriteString(" " + displayPath(v.Path))
		if v.AllFailed() {
			b.WriteString(" (failed: " + v.Errno + ")")
		}
		if v.Count > 1 {
			b.WriteString(" ×" + strconv.Itoa(v.Count))
		}
		if v.PartlyFailed() {
			b.WriteString(" (" + partlyFailed(v, identity) + ")")
		}
		if v.Phase != "" {
			b.WriteString(" [" + v.Phase + "]")
		}
		b.WriteString("\n    by " + procName("", v.PID, v.Comm))
		if len(v.Cmdline) > 0 {
			b.WriteString(": " + shortCmdline(v.Cmdline, lineWidth))
		}
		for _, p := range v.Chain {
			b.WriteString("\n" + chainLine(p))
		}
		b.WriteString("\n")
		if c := v.Change; c != nil {
			b.WriteString("    would have been " + changeText(c) + "\n")
			for _, l := range diffLines(c, textDiffLines) {
				b.WriteString("      " + l + "\n")
			}
		}
	}
	return b.String()
}

// severityCounts is " (1 data-loss, 2 transient)", worst first, or ""
// when no severity is known.
func severityCounts(vs []*report.Violation) string {
	n := map[string]int{}
	for _, v := range vs {
		n[v.Severity]++
	}
	var parts []string
	for _, s := range report.Severities {
		if n[s] > 0 {
			parts = append(parts, strconv.Itoa(n[s])+" "+severityWord(n[s], s))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func lineAttr(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
