package report_test

import (
	"bytes"
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
		pid(v("TestE", "open", "/p/page-13.txt"), 412),     // another page, not a pid
	}
	report.ApplyBaseline(r, base, "old.json")
	var got []bool
	for _, v := range r.Violations {
		got = append(got, v.Baselined)
	}
	if want := []bool{true, true, true, false, false, false, false, false, true, false}; !slices.Equal(got, want) {
		t.Errorf("baselined %v, want %v", got, want)
	}
	if len(r.Fixed) != 2 || r.Fixed[0].Path != "/p/gone.txt" || r.Fixed[1].Path != "/p/page-12.txt" {
		t.Errorf("fixed %+v, want /p/gone.txt and /p/page-12.txt", r.Fixed)
	}
	if !r.Failed() {
		t.Errorf("new violations do not fail the run")
	}
	out := writeText(t, r)
	if strings.Contains(out, "- /p/sub/out.txt") {
		t.Errorf("an entry under another:\n%s", out)
	}
	for _, want := range []string{
		"writewatch: 4 of them in the baseline (old.json) fail nothing; 6 new\n",
		"; in the baseline\n",
		"Fixed since the baseline (old.json): 2 writes no longer made:\n  unlink /p/gone.txt by TestC (pkg p)\n  open /p/page-12.txt by TestE (pkg p)\n",
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
