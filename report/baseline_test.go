package report_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/report"
)

func TestApplyBaseline(t *testing.T) {
	v := func(test, op, path string) report.Violation {
		return report.Violation{Op: op, Path: path, Who: report.Who{Runner: report.RunnerGo, Package: "p", Test: test}, Severity: report.SeverityLeftBehind}
	}
	pid := func(v report.Violation, pid int) report.Violation { v.PID = pid; return v }
	base := emptyReport()
	base.Violations = []report.Violation{
		v("TestA", "open", "/p/out.txt"),
		v("TestA", "open", "/p/outline_demo_158482901.pdf"), // a numbered name
		v("TestB", "open", "/p/chart1.xlsx"),                // several names: a pattern
		v("TestB", "open", "/p/chart7.xlsx"),
		v("TestC", "unlink", "/p/gone.txt"),                // not made again: fixed
		pid(v("TestE", "open", "/p/scratch-355.tmp"), 355), // named after its writer
		pid(v("TestE", "open", "/p/page-12.txt"), 355),
	}
	r := emptyReport()
	r.Violations = []report.Violation{
		v("TestA", "open", "/p/out.txt"),                   // the same
		v("TestA", "open", "/p/outline_demo_2342.pdf"),     // another number
		v("TestB", "open", "/p/chart99.xlsx"),              // fits chart*.xlsx
		v("TestB", "open", "/p/other.xlsx"),                // does not
		v("TestB", "open", "/p/out.txt"),                   // another test
		v("TestA", "unlink", "/p/out.txt"),                 // another op
		v("TestA", "open", "/p/sub/out.txt"),               // another directory
		v("TestD", "open", "/p/new.txt"),                   // a new test
		pid(v("TestE", "open", "/p/scratch-412.tmp"), 412), // the writer's pid again
		pid(v("TestE", "open", "/p/page-13.txt"), 412),     // another page: a counter
	}
	report.ApplyBaseline(r, base, "old.json", func(string) bool { return false })
	var got []bool
	for _, v := range r.Violations {
		got = append(got, v.Baselined)
	}
	if want := []bool{true, true, true, false, false, false, false, false, true, true}; !slices.Equal(got, want) {
		t.Errorf("baselined %v, want %v", got, want)
	}
	if len(r.Fixed) != 1 || r.Fixed[0].Path != "/p/gone.txt" || len(r.Leftovers) != 0 {
		t.Errorf("fixed %+v, leftovers %+v, want /p/gone.txt fixed", r.Fixed, r.Leftovers)
	}
	if !r.Failed() {
		t.Errorf("new violations do not fail the run")
	}
	out := writeText(t, r)
	if strings.Contains(out, "- /p/sub/out.txt") {
		t.Errorf("an entry under another:\n%s", out)
	}
	for _, want := range []string{
		"writewatch: 5 of them in the baseline (old.json) fail nothing; 5 new\n",
		"; in the baseline\n",
		"Fixed since the baseline (old.json): 1 write no longer made:\n  unlink /p/gone.txt by TestC (pkg p)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}

	// Only baselined violations: the run passes.
	r.Violations = r.Violations[:3]
	if r.Failed() {
		t.Errorf("baselined violations fail the run")
	}
}

func TestReadBaseline(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, testsReport()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "r.json")
	os.WriteFile(path, buf.Bytes(), 0o644)
	r, err := report.ReadBaseline(path)
	if err != nil || len(r.Violations) != 5 {
		t.Fatalf("ReadBaseline: %v, %d violations", err, len(r.Violations))
	}
	os.WriteFile(path, []byte("not json"), 0o644)
	if _, err := report.ReadBaseline(path); err == nil || !strings.Contains(err.Error(), "not a writewatch JSON report") {
		t.Errorf("ReadBaseline of junk: %v", err)
	}
}

// baselineV is a write of op on path by Go test test, of severity sev.
func baselineV(test, op, path, sev string) report.Violation {
	return report.Violation{Op: op, Path: path, Severity: sev, Who: report.Who{Runner: report.RunnerGo, Package: "p", Test: test, Phase: report.PhaseTest}}
}

// baselined lists which of r's violations the baseline covers.
func baselinedOf(r *report.Report) []bool {
	var got []bool
	for _, v := range r.Violations {
		got = append(got, v.Baselined)
	}
	return got
}

// A baseline entry never covers a write of worse severity, nor data loss
// on a file it does not name: new stray files debug.toml and trace.toml
// do not cover an overwrite of config.toml, nor a new data-0002.json an
// overwrite of data-0001.json.
func TestBaselineNeverHidesDataLoss(t *testing.T) {
	base := emptyReport()
	base.Violations = []report.Violation{
		baselineV("TestA", "open", "/p/debug.toml", report.SeverityLeftBehind),
		baselineV("TestA", "open", "/p/trace.toml", report.SeverityLeftBehind),
		baselineV("TestA", "open", "/p/data-0002.json", report.SeverityLeftBehind),
		baselineV("TestA", "open", "/p/scratch.txt", report.SeverityTransient),
		baselineV("TestA", "open", "/p/keep.txt", report.SeverityDataLoss),
		baselineV("TestA", "unlink", "/p/old-0001.txt", report.SeverityDataLoss),
		baselineV("TestA", "open", "/p/odd.txt", ""),
	}
	r := emptyReport()
	r.Violations = []report.Violation{
		baselineV("TestA", "open", "/p/config.toml", report.SeverityDataLoss),    // another name, data loss
		baselineV("TestA", "open", "/p/data-0001.json", report.SeverityDataLoss), // the same shape, data loss
		baselineV("TestA", "open", "/p/scratch.txt", report.SeverityLeftBehind),  // worse than transient
		baselineV("TestA", "open", "/p/keep.txt", report.SeverityDataLoss),       // the very file: covered
		baselineV("TestA", "unlink", "/p/old-0002.txt", report.SeverityDataLoss), // the same shape, data loss
		baselineV("TestA", "open", "/p/debug.toml", report.SeverityTransient),    // milder than the entry: covered
		baselineV("TestA", "open", "/p/other.toml", report.SeverityLeftBehind),   // another name, new
		baselineV("TestA", "open", "/p/odd.txt", report.SeverityDataLoss),        // unknown covers any severity
	}
	report.ApplyBaseline(r, base, "old.json", nil)
	if got, want := baselinedOf(r), []bool{false, false, false, true, false, true, false, true}; !slices.Equal(got, want) {
		t.Errorf("baselined %v, want %v", got, want)
	}
	if !r.Failed() {
		t.Errorf("the run passes with data loss the baseline does not name")
	}
}

// Names of one shape are one write from run to run: a timestamp of
// two-digit runs (a page per subtest), a counter, a random hexadecimal
// suffix, a UUID. Only the same
// test's writes, of the same operation, in the same directory match.
func TestBaselineNameShapes(t *testing.T) {
	lb := report.SeverityLeftBehind
	base := emptyReport()
	r := emptyReport()
	for i, page := range []string{"cover", "intro", "body", "index", "back"} {
		base.Violations = append(base.Violations, baselineV("TestPages/"+page, "open", fmt.Sprintf("/p/out/page_%s-05-14-10-22-%02d.pdf", page, 30+i), lb))
		r.Violations = append(r.Violations, baselineV("TestPages/"+page, "open", fmt.Sprintf("/p/out/page_%s-05-15-09-01-%02d.pdf", page, 2+i), lb))
	}
	base.Violations = append(base.Violations,
		baselineV("TestCount", "open", "/p/run-3.log", lb),
		baselineV("TestRand", "open", "/p/cache-3f9a2c81.bin", report.SeverityTransient),
		baselineV("TestUUID", "mkdir", "/p/job-0b7e4f2a-91c3-4d5e-8f00-1a2b3c4d5e6f", lb),
	)
	r.Violations = append(r.Violations,
		baselineV("TestCount", "open", "/p/run-4.log", lb),                                                       // a counter
		baselineV("TestRand", "open", "/p/cache-9be01d7f.bin", report.SeverityTransient),                         // a random suffix
		baselineV("TestUUID", "mkdir", "/p/job-7c1d0e9b-2f4a-4b6c-a1d2-e3f4a5b6c7d8", lb),                        // a UUID
		baselineV("TestOther", "open", "/p/out/page_cover-05-15-09-01-02.pdf", lb),                               // another test
		baselineV("TestPages/cover", "open", "/p/out/page_cover-05-15-09-01-02.txt", lb),                         // another shape
		baselineV("TestPages/cover", "open", "/p/out/sub/page_cover-05-15-09-01-02.pdf", lb),                     // another directory
		baselineV("TestPages/cover", "unlink", "/p/out/page_cover-05-15-09-01-02.pdf", report.SeverityTransient), // another op
	)
	report.ApplyBaseline(r, base, "old.json", nil)
	want := []bool{true, true, true, true, true, true, true, true, false, false, false, false}
	if got := baselinedOf(r); !slices.Equal(got, want) {
		t.Errorf("baselined %v, want %v", got, want)
	}
	if len(r.Fixed) != 0 {
		t.Errorf("fixed %+v, want none: every entry was made again, under another name of its shape", r.Fixed)
	}
}

// A file the baseline run left behind is not the user's: overwriting it
// again is not data loss, whichever test does it (a new test's write
// still fails the run). An entry not made again whose file is still
// there is not fixed: the test may have found the file and skipped the
// write. A path the baseline lists as data-loss too is not a leftover.
func TestBaselineLeftovers(t *testing.T) {
	lb, dl := report.SeverityLeftBehind, report.SeverityDataLoss
	base := emptyReport()
	base.Violations = []report.Violation{
		baselineV("TestA", "open", "/p/out.txt", lb),
		baselineV("TestA", "open", "/p/tmp.txt", lb),
		baselineV("TestA", "mkdir", "/p/cache", lb),     // not made again, still there
		baselineV("TestA", "open", "/p/gone.txt", lb),   // not made again, gone
		baselineV("TestA", "unlink", "/p/user.txt", dl), // removed, then made again
		baselineV("TestA", "open", "/p/user.txt", lb),
	}
	r := emptyReport()
	r.Violations = []report.Violation{
		baselineV("TestA", "open", "/p/out.txt", dl),    // the leftover overwritten
		baselineV("TestZ", "open", "/p/out.txt", dl),    // by a new test
		baselineV("TestA", "open", "/p/tmp.txt", dl),    // overwritten, then removed
		baselineV("TestA", "unlink", "/p/user.txt", dl), // the very file: covered
		baselineV("TestA", "open", "/p/user.txt", dl),   // worse than the entry
	}
	there := func(p string) bool { return p != "/p/gone.txt" && p != "/p/tmp.txt" }
	report.ApplyBaseline(r, base, "old.json", there)
	for i, want := range []struct {
		severity            string
		leftover, baselined bool
	}{{lb, true, true}, {lb, true, false}, {report.SeverityTransient, true, true}, {dl, false, true}, {dl, false, false}} {
		v := r.Violations[i]
		if v.Severity != want.severity || v.BaselineLeftover != want.leftover || v.Baselined != want.baselined {
			t.Errorf("%s %s by %s: %s, leftover %v, baselined %v; want %+v", v.Op, v.Path, v.Test, v.Severity, v.BaselineLeftover, v.Baselined, want)
		}
	}
	if !r.Failed() {
		t.Errorf("a new test's write fails nothing")
	}
	var fixed, leftovers []string
	for _, v := range r.Fixed {
		fixed = append(fixed, v.Op+" "+v.Path)
	}
	for _, v := range r.Leftovers {
		leftovers = append(leftovers, v.Op+" "+v.Path)
	}
	if !slices.Equal(fixed, []string{"open /p/gone.txt"}) || !slices.Equal(leftovers, []string{"mkdir /p/cache"}) {
		t.Errorf("fixed %q, leftovers %q; want gone.txt fixed, cache left over", fixed, leftovers)
	}
	out := writeText(t, r)
	for _, want := range []string{
		"[left-behind, the baseline run's leftover] open",
		"Fixed since the baseline (old.json): 1 write no longer made:\n  open /p/gone.txt by TestA (pkg p)\n",
		"Not made again, but still there (old.json): 1 write no longer made, but the baseline run left its path there; remove it and run again to know whether it is fixed:\n  mkdir /p/cache by TestA (pkg p)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}
}
