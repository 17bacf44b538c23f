package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"

	"github.com/writewatch/writewatch/report"
)

// A Go and a pytest suite whose second test reads the file the first
// left in the project: the report names the reader with its polluter,
// in JSON and in the text summary. A test that reads back what it wrote
// itself is not named, nor a Go subtest that reads what its parent
// wrote, nor a pytest test that reads what its own fixture wrote when an
// earlier test set it up.
func TestCrossTestReads(t *testing.T) {
	python := "/usr/bin/python3"
	for _, c := range []struct {
		name, suite    string
		cmd            []string
		runner, pkg    string
		writer, reader string
		own            string
		// nested is written by nestedBy and read by its subtest, or by
		// tests that use the fixture that wrote it.
		nested, nestedBy string
	}{
		{name: "go", suite: "gosuite", cmd: []string{"go", "test", "-count=1", "."},
			runner: report.RunnerGo, pkg: "example.com/crosstest", writer: "TestA", reader: "TestB", own: "TestOwn",
			nested: "parent.txt", nestedBy: "TestParent"},
		{name: "pytest", suite: "pysuite", cmd: []string{python, "-m", "pytest", "-q", "-p", "no:cacheprovider"},
			runner: report.RunnerPytest, pkg: "test_state.py", writer: "test_state.py::test_a", reader: "test_state.py::test_b",
			own: "test_state.py::test_own", nested: "workspace.txt", nestedBy: "test_state.py::test_c"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, _ := project(t)
			if c.runner == report.RunnerPytest {
				requirePytest(t, python)
			}
			copyDir(t, "../testdata/crosstest/"+c.suite, root)
			out := t.TempDir()
			junitPath, summary := filepath.Join(out, "junit.xml"), filepath.Join(out, "summary.md")
			res := wwEnv(t, root, []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary, "GITHUB_WORKSPACE=" + root},
				[]string{"--junit", junitPath}, c.cmd...)
			if res.code != 86 {
				t.Fatalf("exit %d, want 86\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			state := filepath.Join(root, "state.json")
			if v := violation(res.rep, "open", state); v == nil || v.Test != c.writer {
				t.Fatalf("the write of state.json by %s is not reported: %+v\n%s", c.writer, v, res.stderr)
			}
			if len(res.rep.CrossTestReads) != 1 {
				t.Fatalf("%d cross-test reads, want 1 (%s reading %s's state.json): %+v\n%s",
					len(res.rep.CrossTestReads), c.reader, c.writer, res.rep.CrossTestReads, res.stderr)
			}
			x := res.rep.CrossTestReads[0]
			if x.Path != state {
				t.Errorf("path %q, want %q", x.Path, state)
			}
			r := x.ReadBy
			if r.Runner != c.runner || r.Package != c.pkg || r.Test != c.reader || r.Phase == "" || r.PID == 0 {
				t.Errorf("read by %+v, want %s of %s (%s) with its phase and process", r, c.reader, c.pkg, c.runner)
			}
			if len(x.WrittenBy) != 1 {
				t.Fatalf("written by %+v, want %s alone", x.WrittenBy, c.writer)
			}
			if w := x.WrittenBy[0]; w.Runner != c.runner || w.Package != c.pkg || w.Test != c.writer || w.Phase == "" || w.Op != "open" {
				t.Errorf("written by %+v, want %s of %s (%s) with its phase, by open", w, c.writer, c.pkg, c.runner)
			}
			if !x.WrittenBy[0].First.Before(r.First) {
				t.Errorf("written at %s, read at %s: the read comes first", x.WrittenBy[0].First, r.First)
			}
			if v := violation(res.rep, "open", filepath.Join(root, "own.txt")); v == nil || v.Test != c.own {
				t.Errorf("the write of own.txt by %s is not reported: %+v", c.own, v)
			}
			// Read by a subtest of its writer, or by a test whose own
			// fixture wrote it: reported as writes, and no cross-test read
			// (counted above).
			if v := violation(res.rep, "open", filepath.Join(root, c.nested)); v == nil || v.Test != c.nestedBy {
				t.Errorf("the write of %s by %s is not reported: %+v", c.nested, c.nestedBy, v)
			}
			want := c.reader
			if c.runner == report.RunnerGo {
				want += " (pkg " + c.pkg + ")"
			}
			want += " read " + state + ", which " + c.writer + " (open) wrote"
			if !strings.Contains(res.stderr, "Cross-test reads: 1 read of a file another test wrote") || !strings.Contains(res.stderr, want) {
				t.Errorf("the summary does not say %q:\n%s", want, res.stderr)
			}
			checkPolluterNamed(t, c.reader, c.writer, state, junitPath, summary, res.stderr)
		})
	}
}

// checkPolluterNamed checks that the reader's JUnit testcase, its
// GitHub annotation (at its source file) and the step summary name the
// test that wrote the file it read.
func checkPolluterNamed(t *testing.T, reader, writer, path, junitPath, summary, stderr string) {
	t.Helper()
	suites, err := junit.IngestFile(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	named := false
	for _, s := range suites {
		for _, c := range s.Tests {
			if c.Name == reader {
				named = strings.Contains(c.SystemOut, "read "+path+", which "+writer+" (open) wrote")
				if !named {
					t.Errorf("%s's testcase (%s) does not name %s: system-out %q", reader, c.Status, writer, c.SystemOut)
				}
			}
		}
	}
	if !named {
		t.Errorf("no testcase %s names %s in %s", reader, writer, junitPath)
	}
	annotation := regexp.MustCompile(`(?m)^::warning file=[^,]+_test\.go,line=\d+,title=writewatch%3A cross-test read::` +
		regexp.QuoteMeta(reader) + `.* read ` + regexp.QuoteMeta(path) + `, which ` + regexp.QuoteMeta(writer) + ` \(open\) wrote`)
	if strings.HasPrefix(reader, "test_") {
		annotation = regexp.MustCompile(`(?m)^::warning file=test_state\.py,line=\d+,title=writewatch%3A cross-test read::` +
			regexp.QuoteMeta(reader) + ` read ` + regexp.QuoteMeta(path) + `, which ` + regexp.QuoteMeta(writer) + ` \(open\) wrote`)
	}
	if !annotation.MatchString(stderr) {
		t.Errorf("no annotation at %s's source naming %s (%s):\n%s", reader, writer, annotation, stderr)
	}
	data, err := os.ReadFile(summary)
	if err != nil || !strings.Contains(string(data), "`"+path+"` | "+writer+" (open) |") {
		t.Errorf("the step summary does not name %s: %v\n%s", writer, err, data)
	}
}

// Read records lost to a full ring buffer cost cross-test reads, never
// the verdict: a read changes nothing. writewatch is stopped while its
// COMMAND reads 4,000 files it wrote, whose records overflow a 1 MiB
// ring (the writes' records, made before, all arrive); the run ends with
// its violations (86), complete, and a note that says what was lost.
func TestLostReadsKeepTheVerdict(t *testing.T) {
	root, _ := project(t)
	dir := filepath.Join(root, "flood")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stopDir := t.TempDir()
	stopper(t, stopDir)
	res := ww(t, root, []string{"--ringbuf-mib", "1"}, opBin, "read-flood", dir, "4000", stopDir)
	if res.code != 86 {
		t.Fatalf("exit %d, want 86 (the files written are outside the allowlist)\n%s", res.code, res.stderr)
	}
	if res.rep.LostWrites != 0 {
		t.Fatalf("%d write records lost: the flood's writes were to arrive, only its reads to overflow\n%s", res.rep.LostWrites, res.stderr)
	}
	if res.rep.Lost[report.LostRingbufFull] == 0 {
		t.Fatalf("no record was lost (lost %v): the test proves nothing\n%s", res.rep.Lost, res.stderr)
	}
	if len(res.rep.Incomplete) != 0 {
		t.Errorf("incomplete %q: only read records were lost", res.rep.Incomplete)
	}
	if !slices.ContainsFunc(res.rep.Notes, func(n string) bool { return strings.Contains(n, "reads of files the run wrote were not seen") }) {
		t.Errorf("notes %q: want the one on lost reads", res.rep.Notes)
	}
}
