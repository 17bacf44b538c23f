package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"
	"github.com/writewatch/writewatch/report"
)

// copyDir copies the sample suite src (under the repository's testdata)
// into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	out, err := exec.Command("cp", "-R", src+"/.", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("copy %s: %v: %s", src, err, out)
	}
}

// goProject is a project holding testdata/gotests.
func goProject(t *testing.T) string {
	t.Helper()
	root, _ := project(t)
	copyDir(t, "../testdata/gotests", root)
	return root
}

// who is what a violation says about who wrote.
type who struct {
	pkg, test, phase string
	ambiguous        []string
}

func whoWrote(t *testing.T, rep report.Report, path string) who {
	t.Helper()
	var found []who
	for _, v := range rep.Violations {
		if v.Path == path {
			found = append(found, who{v.Package, v.Test, v.Phase, v.AmbiguousTests})
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d violations, want 1: %+v", path, len(found), found)
	}
	return found[0]
}

// The sample Go module, under every go test flag that changes how tests
// run, and built by each Go release whose layout writewatch tables (the
// go command fetches those toolchains from the module proxy): each write
// is attributed to its test exactly, the parallel writer alone (at worst
// ambiguous between the two parallel tests, never the clean one),
// TestMain's write to the package's setup.
func TestGoTestAttribution(t *testing.T) {
	requireRoot(t)
	type run struct {
		flags []string
		env   []string
	}
	runs := []run{
		{}, {flags: []string{"-v"}}, {flags: []string{"-json"}},
		{flags: []string{"-count=2", "-parallel=2"}}, {flags: []string{"-p=1", "-run", "."}},
		{flags: []string{"-exec", "env"}}, {flags: []string{"-race"}},
		// Linked by the system's linker, as a package using cgo is: the
		// C runtime's code comes before Go's in .text.
		{flags: []string{"-ldflags=-linkmode=external"}},
	}
	for _, toolchain := range []string{"go1.24.0", "go1.25.0", "go1.27.3"} {
		runs = append(runs, run{env: []string{"GOTOOLCHAIN=" + toolchain}})
	}
	for _, r := range runs {
		t.Run(strings.Join(append(r.env, r.flags...), " "), func(t *testing.T) {
			if slices.Contains(r.flags, "-ldflags=-linkmode=external") {
				if cc := goEnvCC(t); cc == "" {
					t.Skip("needs the go command's C compiler (go env CC) to link externally")
				}
			}
			root := goProject(t)
			cmd := append(append([]string{"go", "test"}, r.flags...), "./...")
			res := wwEnv(t, root, r.env, nil, cmd...)
			if res.code != 86 {
				t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
			}
			p := func(s string) string { return filepath.Join(root, s) }
			const pkg = "example.com/gotests"
			for path, want := range map[string]who{
				"sequential.txt":  {pkg: pkg, test: "TestSequentialWrites", phase: "test"},
				"subtest.txt":     {pkg: pkg, test: "TestWithSubtests/writes", phase: "test"},
				"goroutine.txt":   {pkg: pkg, test: "TestGoroutineWrites", phase: "test"},
				"child.txt":       {pkg: pkg, test: "TestChildProcessWrites", phase: "test"},
				"cleanup.txt":     {pkg: pkg, test: "TestCleanupWrites", phase: "cleanup"},
				"testmain.txt":    {pkg: pkg, phase: "setup"},
				"other/other.txt": {pkg: pkg + "/other", test: "TestOtherWrites", phase: "test"},
				"other/gorun.txt": {pkg: pkg + "/other", test: "TestGoRunWrites", phase: "test"},
				"parallel.txt":    {pkg: pkg, test: "TestParallelWriter", phase: "test"},
			} {
				got := whoWrote(t, res.rep, p(path))
				if path == "parallel.txt" && got.test == "" &&
					slices.Equal(got.ambiguous, []string{"TestParallelClean", "TestParallelWriter"}) {
					t.Logf("parallel.txt: ambiguous between the two parallel tests")
					continue
				}
				if got.pkg != want.pkg || got.test != want.test || got.phase != want.phase || len(got.ambiguous) != 0 {
					t.Errorf("%s: got %+v, want %+v", path, got, want)
				}
			}
			if n := len(res.rep.Violations); n != 9 {
				t.Errorf("%d violations, want 9:\n%s", n, res.stderr)
			}
			for _, v := range res.rep.Violations {
				if v.Test == "TestClean" || v.Test == "TestParallelClean" {
					t.Errorf("a clean test named: %+v", v)
				}
			}
			var followed []string
			for _, pr := range res.rep.Packages {
				if pr.Followed {
					followed = append(followed, pr.Package)
				}
			}
			slices.Sort(followed)
			followed = slices.Compact(followed)
			if !slices.Equal(followed, []string{pkg, pkg + "/other"}) {
				t.Errorf("packages followed: %+v", res.rep.Packages)
			}
			if !strings.Contains(res.stderr, "TestSequentialWrites (pkg example.com/gotests) wrote "+p("sequential.txt")) {
				t.Errorf("summary lacks the by-test line:\n%s", res.stderr)
			}
		})
	}
}

// The uprobes of a test binary are attached to its file as soon as the
// Go linker has written it, while go test finishes it, and the kernel
// does not pause a process that executes it once they are
// (WRITEWATCH_PHASES says so): its parent sees no stop and no continue (one SIGCHLD, at its
// exit, as os/exec's TestSIGCHLD checks). They fire for every process
// that runs the file: a test that runs its own binary again has that
// child followed too, its write named for the child's test.
func TestGoTestPreparedUprobes(t *testing.T) {
	requireRoot(t)
	root, _ := project(t)
	writeFile(t, root+"/go.mod", "module example.com/reexec\n\ngo 1.22\n")
	writeFile(t, root+"/reexec_test.go", `package reexec

import (
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParent(t *testing.T) {
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGCHLD)
	defer signal.Stop(sig)
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$")
	cmd.Env = append(os.Environ(), "REEXEC_CHILD=1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child sleeps 200 ms in its test: halfway, no SIGCHLD yet.
	time.Sleep(100 * time.Millisecond)
	if n := len(sig); n > 0 {
		t.Errorf("%d SIGCHLD while the child ran: it was stopped or continued", n)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if err := os.WriteFile("parent.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestChild(t *testing.T) {
	if os.Getenv("REEXEC_CHILD") == "" {
		t.Skip("run by TestParent")
	}
	time.Sleep(200 * time.Millisecond)
	if err := os.WriteFile("child.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
`)
	res := wwEnv(t, root, []string{"WRITEWATCH_PHASES=1"}, nil, "go", "test", "-count=1", ".")
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
	}
	const pkg = "example.com/reexec"
	for path, want := range map[string]who{
		"parent.txt": {pkg: pkg, test: "TestParent", phase: "test"},
		"child.txt":  {pkg: pkg, test: "TestChild", phase: "test"},
	} {
		if got := whoWrote(t, res.rep, filepath.Join(root, path)); got.pkg != want.pkg || got.test != want.test || got.phase != want.phase || len(got.ambiguous) != 0 {
			t.Errorf("%s: got %+v, want %+v", path, got, want)
		}
	}
	if n := strings.Count(res.stderr, "phase Go test binary: prepared uprobes"); n != 2 {
		t.Errorf("%d test binaries ran with prepared uprobes, want 2 (the binary and its child)\n%s", n, res.stderr)
	}
	// The binary itself is paused when go test runs it before its
	// uprobes are attached (the attach waits for a grace period of the
	// kernel's, about as long as go test takes to finish the file); the
	// child, run later, never is.
	if n := strings.Count(res.stderr, "phase Go test binary: paused"); n > 1 {
		t.Errorf("%d test binaries paused at their exec, want at most 1 (the binary, not its child)\n%s", n, res.stderr)
	}
}

// A package whose result go test would take from its cache still runs,
// is traced, and the report says why.
func TestGoTestCacheIsNotTrusted(t *testing.T) {
	root := goProject(t)
	warm := exec.Command("go", "test", "-run", "TestSequentialWrites", "./...")
	warm.Dir = root
	if out, err := warm.CombinedOutput(); err != nil {
		t.Fatalf("warm the cache: %v\n%s", err, out)
	}
	again := exec.Command("go", "test", "-run", "TestSequentialWrites", "./...")
	again.Dir = root
	if out, _ := again.CombinedOutput(); !bytes.Contains(out, []byte("(cached)")) {
		t.Fatalf("the sample did not come from the cache without writewatch; the test proves nothing:\n%s", out)
	}
	os.Remove(filepath.Join(root, "sequential.txt"))
	res := ww(t, root, nil, "go", "test", "-run", "TestSequentialWrites", "./...")
	if strings.Contains(res.stdout, "(cached)") {
		t.Errorf("a package result came from the cache:\n%s", res.stdout)
	}
	if got := whoWrote(t, res.rep, filepath.Join(root, "sequential.txt")); got.test != "TestSequentialWrites" {
		t.Errorf("sequential.txt: %+v", got)
	}
	if len(res.rep.Notes) == 0 || !strings.Contains(res.rep.Notes[0], "GOFLAGS=-count=1") {
		t.Errorf("notes: %q", res.rep.Notes)
	}
}

// go test -json output passes through writewatch unchanged: the same
// events in the same order as without it, timings aside, and test2json's
// consumers still read it.
func TestGoTestJSONStdoutUnchanged(t *testing.T) {
	root := goProject(t)
	args := []string{"go", "test", "-json", "-count=1", "-run", "Sequential|Subtests|Clean$", "."}
	plain := exec.Command(args[0], args[1:]...)
	plain.Dir = root
	want, err := plain.Output()
	if err != nil {
		t.Fatalf("go test without writewatch: %v", err)
	}
	res := ww(t, root, nil, args...)
	if res.code != 86 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	norm := func(out []byte) []string {
		var lines []string
		sc := bufio.NewScanner(bytes.NewReader(out))
		timing := regexp.MustCompile(`"Time":"[^"]*"|"Elapsed":[0-9.]+|\([0-9.]+s\)|\\t[0-9.]+s`)
		for sc.Scan() {
			var ev map[string]any
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("not a test2json event: %q", sc.Text())
			}
			lines = append(lines, timing.ReplaceAllString(sc.Text(), "T"))
		}
		return lines
	}
	if got, want := norm([]byte(res.stdout)), norm(want); !slices.Equal(got, want) {
		t.Errorf("stdout differs:\n got %q\nwant %q", got, want)
	}
	// The results read from that output land in the report.
	outcomes := map[string]string{}
	for _, tr := range res.rep.Tests {
		outcomes[tr.ID] = tr.Outcome
	}
	if outcomes["TestClean"] != "passed" || outcomes["TestWithSubtests/writes"] != "passed" {
		t.Errorf("test results: %v", outcomes)
	}
}

// --junit, read by a JUnit consumer: every test with its result, each
// write a failure of the test that made it.
func TestGoTestJUnit(t *testing.T) {
	root := goProject(t)
	xmlPath := filepath.Join(t.TempDir(), "junit.xml")
	res := ww(t, root, []string{"--junit", xmlPath}, "go", "test", "-json", "./...")
	if res.code != 86 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	suites, err := junit.IngestFile(xmlPath)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]junit.Status{}
	for _, s := range suites {
		for _, c := range s.Tests {
			status[s.Name+" "+c.Name] = c.Status
		}
	}
	for name, want := range map[string]junit.Status{
		"example.com/gotests TestSequentialWrites":            junit.StatusFailed,
		"example.com/gotests TestParallelWriter":              junit.StatusFailed,
		"example.com/gotests TestWithSubtests/writes":         junit.StatusFailed,
		"example.com/gotests TestWithSubtests/clean":          junit.StatusPassed,
		"example.com/gotests TestClean":                       junit.StatusPassed,
		"example.com/gotests TestParallelClean":               junit.StatusPassed,
		"example.com/gotests (package setup: init, TestMain)": junit.StatusFailed,
		"example.com/gotests/other TestOtherWrites":           junit.StatusFailed,
	} {
		if status[name] != want {
			t.Errorf("%s: %q, want %q", name, status[name], want)
		}
	}
}

// GitHub Actions: an annotation per violation at the test's line, and a
// summary table.
func TestGitHubActionsOutput(t *testing.T) {
	root := goProject(t)
	summary := filepath.Join(t.TempDir(), "summary.md")
	res := wwEnv(t, root, []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary, "GITHUB_WORKSPACE=" + root},
		nil, "go", "test", "-run", "TestSequentialWrites", ".")
	if !strings.Contains(res.stderr, "::error file=gotests_test.go,line=") ||
		!strings.Contains(res.stderr, "TestSequentialWrites (pkg example.com/gotests) wrote "+filepath.Join(root, "sequential.txt")) {
		t.Errorf("no annotation at the test's file:\n%s", res.stderr)
	}
	if strings.Contains(res.stdout, "::error") {
		t.Errorf("annotations on COMMAND's stdout")
	}
	data, err := os.ReadFile(summary)
	if err != nil || !bytes.Contains(data, []byte("| TestSequentialWrites (pkg example.com/gotests) |")) {
		t.Errorf("step summary: %v\n%s", err, data)
	}
}

// requirePytest fails the test when Debian's pytest and pytest-xdist are
// missing (make test-deps installs them).
func requirePytest(t *testing.T, python string) {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import pytest, xdist").CombinedOutput(); err != nil {
		t.Fatalf("needs Debian's pytest and pytest-xdist (make test-deps, or apt-get install python3-pytest python3-pytest-xdist): %v\n%s", err, out)
	}
}

// pytest: each write attributed to its node id and phase, fixtures and
// subprocesses included; with pytest-xdist's -n too.
func TestPytestAttribution(t *testing.T) {
	requireRoot(t)
	python := "/usr/bin/python3"
	requirePytest(t, python)
	runs := map[string][]string{
		"python -m pytest": {python, "-m", "pytest", "-p", "no:cacheprovider"},
		"pytest":           {"/usr/bin/pytest", "-p", "no:cacheprovider"},
		"xdist":            {python, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2"},
	}
	for name, cmd := range runs {
		t.Run(name, func(t *testing.T) {
			root, outside := project(t)
			copyDir(t, "../testdata/pytests", root)
			home := filepath.Join(outside, "home")
			must(t, os.MkdirAll(home, 0o755))
			// HOME is writewatch's too: the default allowlist then
			// holds home/.config/go/telemetry (go env GOTELEMETRYDIR),
			// so making home/.config is allowed.
			res := wwEnv(t, root, []string{"HOME=" + home}, nil, cmd...)
			if res.code != 86 {
				t.Fatalf("exit %d, want 86\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			if !strings.Contains(res.stdout, "4 passed") {
				t.Errorf("the plugin changed the outcome:\n%s", res.stdout)
			}
			type pyWho struct{ test, phase, fixture string }
			got := map[string]pyWho{}
			for _, v := range res.rep.Violations {
				if v.Runner != "pytest" {
					t.Errorf("%s: runner %q", v.Path, v.Runner)
				}
				got[v.Op+" "+v.Path] = pyWho{v.Test, v.Phase, v.Fixture}
			}
			want := map[string]pyWho{
				"open " + filepath.Join(root, "fixture-db.sqlite"):       {"test_sample.py::test_fixture_writes_root", "setup", "seeded_db"},
				"mkdir " + filepath.Join(home, ".config/app"):            {"test_sample.py::test_writes_home_config", "call", ""},
				"open " + filepath.Join(home, ".config/app/config.toml"): {"test_sample.py::test_writes_home_config", "call", ""},
				"open " + filepath.Join(filepath.Dir(root), "x"):         {"test_sample.py::test_subprocess_writes_parent_dir", "call", ""},
			}
			for k, w := range want {
				if got[k] != w {
					t.Errorf("%s: got %+v, want %+v", k, got[k], w)
				}
			}
			if len(got) != len(want) {
				t.Errorf("violations: %v\n%s", got, res.stderr)
			}
			outcomes := map[string]string{}
			for _, tr := range res.rep.Tests {
				outcomes[tr.ID] = tr.Outcome
			}
			if outcomes["test_sample.py::test_clean"] != "passed" || len(outcomes) != 4 {
				t.Errorf("results: %v", outcomes)
			}
		})
	}
}

// unittest-style tests run by pytest: a write in the shared setUp of
// their base class is the test's, in phase setUp, at setUp's line, and
// How to fix points there, naming the test it ran for, with a fix that
// a unittest.TestCase can follow; setUp's failure stays the test's.
func TestPytestUnittestSetUp(t *testing.T) {
	requireRoot(t)
	python := "/usr/bin/python3"
	requirePytest(t, python)
	root, _ := project(t)
	copyDir(t, "../testdata/pyunit", root)
	res := ww(t, root, nil, python, "-m", "pytest", "-q", "-p", "no:cacheprovider")
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stdout, "1 failed, 2 passed") || !strings.Contains(res.stdout, "RuntimeError: setUp fails") {
		t.Errorf("the plugin changed the outcome:\n%s", res.stdout)
	}
	base := filepath.Join(root, "reportbase.py")
	for _, m := range []string{"test_header", "test_footer"} {
		path := filepath.Join(root, "report_"+m+".txt")
		id := "test_reports.py::TestSummary::" + m
		if v := violation(res.rep, "open", path); v == nil || v.Test != id || v.Phase != "setUp" || v.TestFile != base || v.TestLine != 10 {
			t.Errorf("open %s: %+v, want %s in setUp at reportbase.py:10", path, v, id)
		}
		if v := violation(res.rep, "unlink", path); v == nil || v.Test != id || v.Phase != "tearDown" || v.TestFile != base {
			t.Errorf("unlink %s: %+v, want %s in tearDown at reportbase.py", path, v, id)
		}
		want := "reportbase.py:10: setUp of TestSummary (for " + m + ") writes report_" + m + ".txt: os.chdir into a tempfile.mkdtemp() made in setUp, or a path under it\n"
		if !strings.Contains(res.stderr, want) {
			t.Errorf("%q missing in the summary:\n%s", want, res.stderr)
		}
	}
	for _, tr := range res.rep.Tests {
		if tr.File != filepath.Join(root, "test_reports.py") {
			t.Errorf("%s: at %s:%d, want its own file", tr.ID, tr.File, tr.Line)
		}
	}
}

// The plugin never changes an outcome: a failing test still fails, and
// pytest's exit code passes through in --audit mode.
func TestPytestFailureKept(t *testing.T) {
	requireRoot(t)
	requirePytest(t, "/usr/bin/python3")
	root, _ := project(t)
	writeFile(t, filepath.Join(root, "test_fail.py"), "def test_fails():\n    assert 1 == 2\n\ndef test_ok():\n    pass\n")
	res := ww(t, root, []string{"--audit"}, "/usr/bin/python3", "-m", "pytest", "-p", "no:cacheprovider", "-q")
	if res.code != 1 || !strings.Contains(res.stdout, "1 failed, 1 passed") {
		t.Fatalf("exit %d\n%s", res.code, res.stdout)
	}
	for _, tr := range res.rep.Tests {
		if tr.ID == "test_fail.py::test_fails" && (tr.Outcome != "failed" || !strings.Contains(tr.Message, "assert 1 == 2")) {
			t.Errorf("result: %+v", tr)
		}
	}
}

// Any runner can announce boundaries with the protocol: here a shell
// script, whose child processes inherit the test it announced.
func TestProtocolFromShell(t *testing.T) {
	root, _ := project(t)
	script := `
announce() { true 2>/dev/null >"/dev/null/.writewatch/1/$1"; }
announce 'begin?runner=sh&suite=smoke&id=step%20one&phase=call'
echo x > one.txt
sh -c 'echo y > child.txt'
announce 'end?runner=sh&suite=smoke'
echo z > after.txt
`
	res := ww(t, root, nil, "sh", "-c", script)
	got := map[string]string{}
	for _, v := range res.rep.Violations {
		got[filepath.Base(v.Path)] = v.Runner + "|" + v.Package + "|" + v.Test + "|" + v.Phase
	}
	want := map[string]string{
		"one.txt":   "sh|smoke|step one|call",
		"child.txt": "sh|smoke|step one|call",
		"after.txt": "sh|smoke||",
	}
	if len(got) != len(want) {
		t.Fatalf("violations %v\n%s", got, res.stderr)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
}

// The kernel counts repeats of a write per test: the same process writing
// the same file in two tests is two violations, each with its own count.
func TestRepeatsCountedPerTest(t *testing.T) {
	root, _ := project(t)
	script := `a() { true 2>/dev/null >"/dev/null/.writewatch/1/$1"; }
a 'begin?id=A'; echo > f; echo > f
a 'begin?id=B'; echo > f`
	res := ww(t, root, nil, "sh", "-c", script)
	got := map[string]int{}
	for _, v := range res.rep.Violations {
		got[v.Test] += v.Count
	}
	if got["A"] != 2 || got["B"] != 1 || len(got) != 2 {
		t.Errorf("counts by test: %v, want A:2 B:1\n%s", got, res.stderr)
	}
}

// goTestBinary is testdata/gotests' test binary linked like go test links
// it (no DWARF), or the one the VM harness brings (make vmtest), where
// there is no go command.
func goTestBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("WRITEWATCH_IT_GOTESTS"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "gotests.test")
	cmd := exec.Command("go", "test", "-c", "-ldflags=-w", "-o", bin, ".")
	cmd.Dir = "../testdata/gotests"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	return bin
}

// A Go test binary run directly, as COMMAND: its tests are told apart
// through the uprobes, on every kernel the harness boots too (uprobe_multi
// links where the kernel has them, perf-event uprobes before Linux 6.6).
func TestGoTestBinaryFollowed(t *testing.T) {
	requireRoot(t)
	bin := goTestBinary(t)
	root, _ := project(t)
	res := ww(t, root, nil, bin, "-test.run", "^(TestSequentialWrites|TestWithSubtests|TestGoroutineWrites|TestChildProcessWrites|TestCleanupWrites|TestClean)$")
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
	}
	if len(res.rep.Packages) != 1 || !res.rep.Packages[0].Followed {
		t.Fatalf("the test binary was not followed: %+v\n%s", res.rep.Packages, res.stderr)
	}
	const pkg = "example.com/gotests"
	for path, want := range map[string]who{
		"sequential.txt": {pkg: pkg, test: "TestSequentialWrites", phase: "test"},
		"subtest.txt":    {pkg: pkg, test: "TestWithSubtests/writes", phase: "test"},
		"goroutine.txt":  {pkg: pkg, test: "TestGoroutineWrites", phase: "test"},
		"child.txt":      {pkg: pkg, test: "TestChildProcessWrites", phase: "test"},
		"cleanup.txt":    {pkg: pkg, test: "TestCleanupWrites", phase: "cleanup"},
		"testmain.txt":   {pkg: pkg, phase: "setup"},
	} {
		if got := whoWrote(t, res.rep, filepath.Join(root, path)); got.pkg != want.pkg || got.test != want.test || got.phase != want.phase || len(got.ambiguous) != 0 {
			t.Errorf("%s: got %+v, want %+v", path, got, want)
		}
	}
}

// goEnvCC is the path of the C compiler the go command links externally
// with (go env CC), or "" when it is not installed.
func goEnvCC(t *testing.T) string {
	out, err := exec.Command("go", "env", "CC").Output()
	if err != nil {
		t.Fatalf("go env CC: %v", err)
	}
	cc := strings.Fields(string(out))
	if len(cc) == 0 {
		return ""
	}
	path, err := exec.LookPath(cc[0])
	if err != nil {
		return ""
	}
	return path
}
