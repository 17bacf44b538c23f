package render

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/report"
)

func TestSuggest(t *testing.T) {
	proj := t.TempDir()
	home := t.TempDir()
	r := emptyReport()
	r.WorkDir, r.Home, r.ConfigFile = proj, home, filepath.Join(proj, ".writewatch.yaml")
	add := func(op, path, sev string, mod ...func(*report.Violation)) {
		v := report.Violation{Op: op, Path: path, Severity: sev, Who: report.Who{Test: "TestX", Runner: report.RunnerGo, Package: "p"}}
		for _, m := range mod {
			m(&v)
		}
		r.Violations = append(r.Violations, v)
	}
	// A directory made, with everything under it: one entry.
	add("mkdir", home+"/.config/app", report.SeverityLeftBehind)
	add("open", home+"/.config/app/config.toml", report.SeverityLeftBehind)
	// Numbered names in one directory: one glob.
	add("open", proj+"/outline_demo_158482901.pdf", report.SeverityLeftBehind)
	add("open", proj+"/outline_demo_2342.pdf", report.SeverityTransient)
	// A lone numbered name.
	add("open", "/var/tmp/run-20250314.log", report.SeverityLeftBehind)
	// A name with the writer's pid, three digits; a small number that
	// is not a pid stays.
	add("open", proj+"/scratch-355.tmp", report.SeverityTransient, func(v *report.Violation) { v.PID = 355 })
	add("open", proj+"/v2/page-12.txt", report.SeverityLeftBehind, func(v *report.Violation) { v.PID = 355 })
	// Names sharing nothing, three of them, in a directory of their own.
	for _, n := range []string{"a.json", "b.yaml", "c.txt"} {
		add("open", proj+"/out/"+n, report.SeverityLeftBehind)
	}
	// Failed attempts get nothing; the home directory itself gets nothing.
	add("unlink", "/d", report.SeverityAttempt, func(v *report.Violation) { v.Errno = "ENOENT" })
	add("open", "/hopefully not existing", report.SeverityAttempt, func(v *report.Violation) { v.Errno = "EACCES" })
	add("chmod", home, report.SeverityDataLoss)

	got, unsuggested := Suggest(r)
	var entries []string
	for _, s := range got {
		entries = append(entries, s.Entry)
	}
	want := []string{"/var/tmp/run-*.log", "out/", "outline_demo_*.pdf", "scratch-*.tmp", "v2/page-12.txt", "~/.config/app/"}
	if !slices.Equal(entries, want) {
		t.Errorf("entries %q, want %q", entries, want)
	}
	if len(unsuggested) != 1 || unsuggested[0].Path != home {
		t.Errorf("unsuggested %+v, want the chmod of the home directory", unsuggested)
	}

	// The entries, in a config file, allow every write they cover, and
	// the allowlist takes them as they are (none is too broad).
	var cfg strings.Builder
	cfg.WriteString("allow:\n")
	for _, e := range entries {
		s, _ := yamlScalar(e)
		cfg.WriteString("  - " + s + "\n")
	}
	if err := os.WriteFile(r.ConfigFile, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := allowlist.Load(allowlist.Options{ConfigPath: r.ConfigFile, WorkDir: proj, Home: home,
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("%v\n%s", err, cfg.String())
	}
	for _, s := range got {
		for _, v := range s.Covers {
			if !list.Allowed(v.Path) {
				t.Errorf("%s: entry %q does not allow it", v.Path, s.Entry)
			}
		}
	}
	if list.Allowed(proj + "/other.pdf") {
		t.Errorf("an entry allows the project's other files")
	}
	if s := got[len(got)-1]; s.Severity() != report.SeverityLeftBehind || !slices.Equal(s.Tests(), []string{"TestX"}) {
		t.Errorf("~/.config/app: severity %q, tests %q", s.Severity(), s.Tests())
	}
}

// A write to a system path that a library makes on its own (libuuid's
// clock, when a test calls uuid.uuid1()) is not the test's to move
// under tmp_path: How to fix says so, and to allow it or point the
// library elsewhere.
func TestSystemPathFix(t *testing.T) {
	r := emptyReport()
	r.Command = []string{"python3", "-m", "pytest"}
	py := report.Who{Runner: report.RunnerPytest, Package: "tests/test_ids.py", Test: "tests/test_ids.py::test_uuid", Phase: "call",
		TestFile: "/home/dev/proj/tests/test_ids.py", TestLine: 4}
	r.Violations = []report.Violation{{Op: "open", Path: "/var/lib/libuuid/clock.txt", RequestedPath: "/var/lib/libuuid/clock.txt",
		Flags: "O_RDWR|O_CREAT|O_CLOEXEC", PID: 5100, Comm: "python3", Count: 1, First: t0, Action: report.ActionReported,
		Severity: report.SeverityDataLoss, Who: py}}
	out := writeText(t, r)
	for _, bad := range []string{"write under tmp_path", "Make the tests write under a temporary directory"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q advised for a library's own write:\n%s", bad, out)
		}
	}
	for _, want := range []string{
		"  - Writes to system paths, which a library or tool the tests use makes on its own: a temporary directory cannot take them.\n" +
			"    Allow them if they are expected (below), or point the library elsewhere if it reads a setting or an environment variable for the path:\n" +
			"      /var/lib/libuuid/clock.txt (open O_RDWR|O_CREAT|O_CLOEXEC by tests/test_ids.py::test_uuid)\n",
		"\n          - /var/lib/libuuid/clock.txt\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}

	// The test's own writes keep their fix beside it.
	r.Violations = append(r.Violations, report.Violation{Op: "open", Path: "/home/dev/proj/ids.txt", RequestedPath: "ids.txt",
		Flags: "O_WRONLY|O_CREAT|O_TRUNC", PID: 5100, Comm: "python3", Count: 1, First: t0, Action: report.ActionReported,
		Severity: report.SeverityLeftBehind, Who: py})
	out = writeText(t, r)
	if want := "      tests/test_ids.py:4: test_uuid writes ids.txt: monkeypatch.chdir(tmp_path), or a path under tmp_path\n"; !strings.Contains(out, want) ||
		strings.Contains(out, "clock.txt: ") {
		t.Errorf("want the test's fix for ids.txt alone, in:\n%s", out)
	}
}

// A unittest-style test's write in its shared setUp is fixed in setUp,
// where How to fix points, naming the test it ran for; its tearDown's
// removal of that file adds no line.
func TestUnittestFrameFix(t *testing.T) {
	r := emptyReport()
	r.Command = []string{"python3", "-m", "pytest"}
	who := func(test, phase, file string, line int) report.Who {
		return report.Who{Runner: report.RunnerPytest, Package: "tests/test_report.py", Test: "tests/test_report.py::" + test, Phase: phase,
			TestFile: "/home/dev/proj/tests/" + file, TestLine: line}
	}
	add := func(op, name string, w report.Who) {
		r.Violations = append(r.Violations, report.Violation{Op: op, Path: "/home/dev/proj/" + name, RequestedPath: name, PID: 5100, Comm: "python3",
			Count: 1, First: t0, Action: report.ActionReported, Severity: report.SeverityTransient, Who: w})
	}
	add("open", "report.txt", who("TestReport::test_one", "setUp", "base.py", 8))
	add("open", "extra.txt", who("TestReport::test_one", "call", "test_report.py", 20))
	add("unlink", "report.txt", who("TestReport::test_one", "tearDown", "base.py", 12))
	out := writeText(t, r)
	for _, want := range []string{
		"      tests/base.py:8: setUp of TestReport (for test_one) writes report.txt: os.chdir into a tempfile.mkdtemp() made in setUp, or a path under it\n",
		"      tests/test_report.py:20: TestReport::test_one writes extra.txt: os.chdir into a tempfile.mkdtemp() made in setUp, or a path under it\n",
		"in tests/test_report.py::TestReport::test_one [setUp]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tearDown of") {
		t.Errorf("a line for tearDown's removal of setUp's file:\n%s", out)
	}
}
