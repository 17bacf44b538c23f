package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/writewatch/writewatch/report"
)

// Each write's severity, from what the kernel said of the call and what
// is on disk at the end: an open with O_CREAT of a file that was there
// before the run (the kernel's FMODE_CREATED unset) loses data; one that
// created its file leaves it behind, or is transient when the file is
// removed again; a call that failed is an attempt. An atomic save onto a
// path that held nothing loses nothing (the kernel's record, or else the
// filesystem witness, says the rename replaced no file); onto a file from
// before the run, it replaces it.
func TestSeverity(t *testing.T) {
	root, out := project(t)
	o := func(name string) string { return filepath.Join(out, name) }
	for _, name := range []string{"existing", "truncated", "chmodded", "config", "removed"} {
		writeFile(t, o(name), "from before the run\n")
	}
	script := strings.Join([]string{
		opBin + " write " + o("existing"),                      // O_CREAT|O_TRUNC over a file from before: data-loss
		opBin + " write " + o("new"),                           // created, kept: left-behind
		opBin + " write " + o("tmp") + " , unlink " + o("tmp"), // created and removed: transient
		opBin + " trunc " + o("truncated"),                     // data-loss
		opBin + " chmod " + o("chmodded"),                      // data-loss
		opBin + " unlink " + o("removed"),                      // data-loss
		opBin + " write " + o("config.tmp") + " , rename " + o("config.tmp") + " " + o("config"),   // renamed over: data-loss
		opBin + " write " + o("saved.tmp") + " , rename " + o("saved.tmp") + " " + o("saved.json"), // onto nothing: left-behind
		opBin + " unlink " + o("missing") + " 2>/dev/null",                                         // ENOENT: attempt
		opBin + " mkdir " + o("dir") + " , write " + o("dir/f") + " , unlink " + o("dir/f") + " , rmdir " + o("dir"),
		"true",
	}, "; ")
	res := ww(t, root, nil, "sh", "-c", script)
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
	}
	for _, c := range []struct{ op, role, name, want string }{
		{"open", "", "existing", report.SeverityDataLoss},
		{"open", "", "new", report.SeverityLeftBehind},
		{"open", "", "tmp", report.SeverityTransient},
		{"unlink", "", "tmp", report.SeverityTransient},
		{"open", "", "truncated", report.SeverityDataLoss},
		{"chmod", "", "chmodded", report.SeverityDataLoss},
		{"unlink", "", "removed", report.SeverityDataLoss},
		{"open", "", "config.tmp", report.SeverityTransient},
		{"rename", "old", "config.tmp", report.SeverityTransient},
		{"rename", "new", "config", report.SeverityDataLoss},
		{"rename", "old", "saved.tmp", report.SeverityTransient},
		{"rename", "new", "saved.json", report.SeverityLeftBehind},
		{"unlink", "", "missing", report.SeverityAttempt},
		{"mkdir", "", "dir", report.SeverityTransient},
		{"open", "", "dir/f", report.SeverityTransient},
		{"rmdir", "", "dir", report.SeverityTransient},
	} {
		var got *report.Violation
		for i, v := range res.rep.Violations {
			if v.Op == c.op && v.Role == c.role && v.Path == o(c.name) {
				got = &res.rep.Violations[i]
			}
		}
		if got == nil {
			t.Errorf("no %s %s %s in the report\n%s", c.op, c.role, c.name, res.stderr)
			continue
		}
		if got.Severity != c.want {
			t.Errorf("%s %s %s: severity %q, want %q", c.op, c.role, c.name, got.Severity, c.want)
		}
	}
	// Worst first.
	for i := 1; i < len(res.rep.Violations); i++ {
		if report.SeverityRank(res.rep.Violations[i-1].Severity) > report.SeverityRank(res.rep.Violations[i].Severity) {
			t.Errorf("violations not sorted by severity: %q before %q", res.rep.Violations[i-1].Severity, res.rep.Violations[i].Severity)
		}
	}
	if !strings.Contains(res.stderr, "[data-loss] open O_WRONLY|O_CREAT|O_TRUNC") {
		t.Errorf("text summary lacks the severity:\n%s", res.stderr)
	}
}

// A mode changed and set back by the suite (chmod 700 d; chmod 755 d),
// and times set back (touch -r): judged by the state at the end against
// the state at the start, which the kernel's record of the first change
// carries, they are transient; a mode left changed is data-loss. Where
// the kernel cannot hook its VFS (no fentry), nothing says what the
// state at the start was: data-loss, with a note that says why.
func TestMetadataSetBack(t *testing.T) {
	root, out := project(t)
	o := func(name string) string { return filepath.Join(out, name) }
	for _, d := range []string{"back", "changed"} {
		must(t, os.Mkdir(o(d), 0o755))
	}
	writeFile(t, o("ref"), "")
	writeFile(t, o("touched"), "from before the run\n")
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	must(t, os.Chtimes(o("touched"), old, old))
	must(t, os.Chtimes(o("ref"), old, old))
	script := strings.Join([]string{
		"chmod 700 " + o("back"), "chmod 755 " + o("back"),
		"chmod 700 " + o("changed"),
		"touch " + o("touched"), "touch -r " + o("ref") + " " + o("touched"),
	}, "; ")
	res := ww(t, root, nil, "sh", "-c", script)
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
	}
	if v := violation(res.rep, "chmod", o("changed")); v == nil || v.Severity != report.SeverityDataLoss {
		t.Errorf("chmod of changed: %+v", v)
	}
	back, touched := violation(res.rep, "chmod", o("back")), violation(res.rep, "utimes", o("touched"))
	if back == nil || touched == nil {
		t.Fatalf("chmod of back %+v, utimes of touched %+v\n%s", back, touched, res.stderr)
	}
	if back.Severity == report.SeverityDataLoss && slices.ContainsFunc(res.rep.Notes, func(n string) bool { return strings.Contains(n, "could not be hooked") }) {
		t.Skipf("this kernel's VFS cannot be hooked: %q", res.rep.Notes)
	}
	if back.Severity != report.SeverityTransient || touched.Severity != report.SeverityTransient {
		t.Errorf("set back: chmod %q, utimes %q, want transient\n%s", back.Severity, touched.Severity, res.stderr)
	}
}

// os.Remove("") is an unlink of "", which fails with ENOENT: reported as
// the empty path it is, never as the working directory, and no allow
// entry is offered for it. A failed call that changed nothing does not
// fail the run.
func TestEmptyPath(t *testing.T) {
	root, _ := project(t)
	res := ww(t, root, nil, "sh", "-c", opBin+` unlink "" 2>/dev/null; true`)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\n%s", res.code, res.stderr)
	}
	if len(res.rep.Violations) != 1 {
		t.Fatalf("%d violations, want 1: %+v", len(res.rep.Violations), res.rep.Violations)
	}
	v := res.rep.Violations[0]
	if v.Op != "unlink" || v.Path != "" || v.RequestedPath != "" || v.Errno != "ENOENT" || v.Severity != report.SeverityAttempt {
		t.Errorf("got %s %q (requested %q) %s %s, want unlink \"\" ENOENT attempt", v.Op, v.Path, v.RequestedPath, v.Errno, v.Severity)
	}
	if strings.Contains(res.stderr, root+"\n") || strings.Contains(res.stderr, "- .\n") {
		t.Errorf("the working directory is reported:\n%s", res.stderr)
	}
}

// A group of calls says how many failed, and its severity is what
// happened: rmdir d fails (ENOTEMPTY), the suite empties d, and rmdir d
// removes it, a directory from before the run.
func TestGroupOfFailedAndDoneCalls(t *testing.T) {
	root, out := project(t)
	d := filepath.Join(out, "d")
	must(t, os.Mkdir(d, 0o755))
	writeFile(t, filepath.Join(d, "f"), "from before the run\n")
	res := ww(t, root, nil, "sh", "-c", "rmdir "+d+" 2>/dev/null; rm "+d+"/f; rmdir "+d)
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
	}
	v := violation(res.rep, "rmdir", d)
	if v == nil || v.Count != 2 || v.Failed != 1 || v.Errno != "ENOTEMPTY" || v.Severity != report.SeverityDataLoss {
		t.Fatalf("rmdir of d: %+v\n%s", v, res.stderr)
	}
	if !strings.Contains(res.stderr, "[data-loss] rmdir ×2 (1 failed: ENOTEMPTY)") {
		t.Errorf("the summary does not say one of two rmdirs failed:\n%s", res.stderr)
	}
}
