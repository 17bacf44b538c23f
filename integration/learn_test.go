package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/report"
)

// learnProject is a project holding testdata/learn, with a home
// directory of its own beside it (HOME in env), where a config of the
// suite's is there before the run. go keeps its real caches.
func learnProject(t *testing.T) (root, home string, env []string) {
	t.Helper()
	root, outside := project(t)
	copyDir(t, "../testdata/learn", root)
	home = filepath.Join(outside, "home")
	if err := os.MkdirAll(filepath.Join(home, ".config", "learn"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, ".config", "learn", "config.toml"), "from before the run\n")
	env = []string{"HOME=" + home, "GOTOOLCHAIN=local"}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	return root, home, env
}

// --suggest-config from one run proposes a handful of entries, commented
// with their tests and severity, which make the next run pass.
func TestSuggestConfig(t *testing.T) {
	root, _, env := learnProject(t)
	proposal := filepath.Join(root, ".writewatch.proposed.yaml")
	res := wwEnv(t, root, env, []string{"--suggest-config", proposal}, "go", "test", "-run", "Test", "./...")
	if res.code != 86 {
		t.Fatalf("first run: exit %d, want 86\n%s", res.code, res.stderr)
	}
	data, err := os.ReadFile(proposal)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{
		"\n  - tests/**\n", // the config in use, kept
		"\n  - outline_demo_*.pdf\n",
		"\n  - out/\n",
		"\n  - scratch-*.tmp\n",
		"\n  - ~/.config/learn/config.toml\n",
		"# DATA LOSS: these writes changed or removed files that were there before the run, by TestHomeConfig;",
		"# left-behind, by TestNumberedNames\n",
		"# transient, by TestScratch\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("%q missing in the proposal:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "\n  - "); n != 5 {
		t.Errorf("%d entries, want 5 (the config's own and four):\n%s", n, text)
	}
	for _, not := range []string{"hopefully", `""`, "- .\n"} {
		if strings.Contains(text, not) {
			t.Errorf("the proposal has %q, from a failed write:\n%s", not, text)
		}
	}

	// The next run, with the proposal as its config, passes, although
	// the numbered names and the scratch file's name are new.
	res = wwEnv(t, root, env, []string{"--config", proposal}, "go", "test", "-run", "Test", "./...")
	if res.code != 0 {
		t.Errorf("second run: exit %d, want 0\n%s", res.code, res.stderr)
	}
}

// --baseline with the report of an earlier run: the writes it lists pass
// (the numbered names, the pages named after the time and the scratch
// file's are new at each run, but of the same shape; the files the first
// run left behind and the next ones overwrite are its leftovers, not
// data loss), a new write fails the run, and the writes no longer made
// are listed as fixed once what they left is gone, not while it is
// still there.
func TestBaseline(t *testing.T) {
	root, home, env := learnProject(t)
	writeFile(t, filepath.Join(root, "pages_test.go"), `package learn

import (
	"os"
	"testing"
)

// A page per subtest, named after the time it was made.
func TestPages(t *testing.T) {
	for _, name := range []string{"cover", "intro", "index"} {
		t.Run(name, func(t *testing.T) {
			if err := Save("page_"+name+"-"+os.Getenv("LEARN_STAMP")+".pdf", "pdf"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
`)
	at := func(stamp string) []string { return append(slices.Clone(env), "LEARN_STAMP="+stamp) }
	res := wwEnv(t, root, at("05-14-10-22-31"), nil, "go", "test", "-run", "Test", "./...")
	if res.code != 86 {
		t.Fatalf("first run: exit %d, want 86\n%s", res.code, res.stderr)
	}
	data, err := json.Marshal(res.rep)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "base.json")
	writeFile(t, base, string(data))
	outputs := []string{"TestOutputs open a.json", "TestOutputs open b.yaml", "TestOutputs open c.txt", "TestOutputs mkdir out"}

	// Tomorrow: TestOutputs is gone, and a new test writes a stray file.
	writeFile(t, filepath.Join(root, "new_test.go"), `package learn

import "testing"

func TestNewStray(t *testing.T) {
	if err := Save("new-stray.txt", "x"); err != nil {
		t.Fatal(err)
	}
}
`)
	res = wwEnv(t, root, at("05-15-09-01-02"), []string{"--baseline", base}, "go", "test", "-run", "Test", "-skip", "TestOutputs", "./...")
	if res.code != 86 {
		t.Fatalf("second run: exit %d, want 86 for the new write\n%s", res.code, res.stderr)
	}
	for _, v := range res.rep.Violations {
		isNew := v.Test == "TestNewStray"
		if v.Baselined == isNew {
			t.Errorf("%s %s by %s: baselined %v", v.Op, v.Path, v.Test, v.Baselined)
		}
	}
	if v := violation(res.rep, "open", filepath.Join(root, "new-stray.txt")); v == nil {
		t.Errorf("the new write is not reported\n%s", res.stderr)
	}
	// TestOutputs's files are still there: not fixed, as far as a run can tell.
	if fixed, left := baselineEntries(res.rep.Fixed), baselineEntries(res.rep.Leftovers); len(fixed) != 0 || !sameSet(left, outputs) {
		t.Errorf("fixed %q, still there %q; want TestOutputs's four writes still there", fixed, left)
	}
	if strings.Contains(res.stderr, "Fixed since the baseline") || !strings.Contains(res.stderr, "Not made again, but still there") {
		t.Errorf("the summary calls files still there fixed:\n%s", res.stderr)
	}

	// Without the new write, the run passes: TestOutputs overwrites what
	// the first run left in out, which it finds there.
	os.Remove(filepath.Join(root, "new_test.go"))
	os.Remove(filepath.Join(root, "new-stray.txt"))
	res = wwEnv(t, root, at("05-16-11-12-13"), []string{"--baseline", base}, "go", "test", "-run", "Test", "./...")
	if res.code != 0 {
		t.Errorf("third run: exit %d, want 0\n%s", res.code, res.stderr)
	}
	for _, name := range []string{"a.json", "b.yaml", "c.txt"} {
		v := violation(res.rep, "open", filepath.Join(root, "out", name))
		if v == nil || v.Severity != report.SeverityLeftBehind || !v.BaselineLeftover || !v.Baselined {
			t.Errorf("out/%s: %+v, want left-behind, the baseline run's leftover, in the baseline", name, v)
		}
	}
	if v := violation(res.rep, "open", filepath.Join(home, ".config", "learn", "config.toml")); v == nil || v.Severity != report.SeverityDataLoss || !v.Baselined {
		t.Errorf("the user's config.toml: %+v, want data-loss, in the baseline", v)
	}
	if !strings.Contains(res.stderr, "the baseline run's leftover") {
		t.Errorf("the summary does not say whose file out/a.json was:\n%s", res.stderr)
	}

	// TestOutputs gone and its files removed: fixed.
	if err := os.RemoveAll(filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	res = wwEnv(t, root, at("05-17-08-09-10"), []string{"--baseline", base}, "go", "test", "-run", "Test", "-skip", "TestOutputs", "./...")
	if fixed, left := baselineEntries(res.rep.Fixed), baselineEntries(res.rep.Leftovers); res.code != 0 || !sameSet(fixed, outputs) || len(left) != 0 {
		t.Errorf("fourth run: exit %d, fixed %q, still there %q; want 0 and TestOutputs's four writes fixed\n%s", res.code, fixed, left, res.stderr)
	}
	if !strings.Contains(res.stderr, "Fixed since the baseline") {
		t.Errorf("the summary lists nothing as fixed:\n%s", res.stderr)
	}
}

// baselineEntries names entries of a baseline: test, op and file name.
func baselineEntries(vs []report.Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Test+" "+v.Op+" "+filepath.Base(v.Path))
	}
	return out
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// Examples, benchmarks and fuzz targets are named like tests, at their
// source lines; in a package without TestMain, no phase speaks of one.
func TestGoExamplesBenchmarksFuzz(t *testing.T) {
	root, _, env := learnProject(t)
	res := wwEnv(t, root, env, nil, "go", "test", "-run", "Example|Fuzz", "-bench", ".", "-benchtime", "3x", "./...")
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
	}
	p := func(s string) string { return filepath.Join(root, s) }
	const pkg = "example.com/learn"
	for path, want := range map[string]who{
		"example-out.txt": {pkg: pkg, test: "ExampleSave", phase: "test"},
		"bench-out.txt":   {pkg: pkg, test: "BenchmarkSave", phase: "test"},
		"fuzz-setup.txt":  {pkg: pkg, test: "FuzzSave", phase: "test"},
		"fuzz-input.txt":  {pkg: pkg, test: "FuzzSave/seed#0", phase: "test"},
	} {
		got := whoWrote(t, res.rep, p(path))
		if got.pkg != want.pkg || got.test != want.test || got.phase != want.phase || len(got.ambiguous) != 0 {
			t.Errorf("%s: got %+v, want %+v", path, got, want)
		}
		for _, v := range res.rep.Violations {
			if v.Path == p(path) && (filepath.Base(v.TestFile) != "kinds_test.go" || v.TestLine == 0) {
				t.Errorf("%s: test source %s:%d, want kinds_test.go", path, v.TestFile, v.TestLine)
			}
		}
	}
	if strings.Contains(res.stderr, "TestMain") {
		t.Errorf("the summary speaks of a TestMain the package does not have:\n%s", res.stderr)
	}
	var names []string
	for _, tr := range res.rep.Tests {
		names = append(names, tr.ID)
	}
	for _, want := range []string{"ExampleSave", "BenchmarkSave", "FuzzSave"} {
		if n := countOf(names, want); n != 1 {
			t.Errorf("%s listed %d times among the tests: %q", want, n, names)
		}
	}
}

func countOf(s []string, x string) int {
	n := 0
	for _, e := range s {
		if e == x {
			n++
		}
	}
	return n
}
