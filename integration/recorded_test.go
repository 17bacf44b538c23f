package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/writewatch/writewatch/internal/golden"
)

// recordedRuns are the real runs whose recordings the session's golden
// tests replay (internal/session/testdata/runs). Each runs here, and its
// replay gives its report (checkReplay); with -update its recording
// goes there, made in a project at a fixed path so that the golden
// files name the same paths each time (`go test ./internal/session/
// -update` then rewrites those).
var recordedRuns = []struct {
	name  string
	setup func(t *testing.T, root string) []string // returns COMMAND
	flags []string
	exit  int
}{
	{name: "shell", exit: 86, setup: func(t *testing.T, root string) []string {
		writeFile(t, filepath.Join(root, "config.toml"), "theme = 'dark'\n")
		return []string{"sh", "-c", `echo ok > tests/ok.txt
echo light > config.toml
touch stray.txt
echo tmp > scratch.tmp; rm scratch.tmp
echo '{}' > x.json.tmp; mv x.json.tmp x.json
rm -f missing.txt; mkdir -p build/out; rmdir build/out
`}
	}},
	{name: "gotest", exit: 86, setup: func(t *testing.T, root string) []string {
		bin := filepath.Join(root, "gotests.test")
		cmd := exec.Command("go", "test", "-c", "-ldflags=-w", "-o", bin, ".")
		cmd.Dir = "../testdata/gotests"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go test -c: %v\n%s", err, out)
		}
		return []string{bin, "-test.run", "^(TestSequentialWrites|TestParallelWriter|TestParallelClean|TestWithSubtests|TestCleanupWrites|TestClean)$"}
	}},
	{name: "pytest", exit: 86, setup: func(t *testing.T, root string) []string {
		requirePytest(t, "/usr/bin/python3")
		copyDir(t, "../testdata/pytests", root)
		must(t, os.MkdirAll(filepath.Join(root, "home"), 0o755))
		return []string{"/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"}
	}},
}

func TestRecordedRuns(t *testing.T) {
	requireRoot(t)
	for _, r := range recordedRuns {
		t.Run(r.name, func(t *testing.T) {
			root := recordedProject(t, r.name)
			command := r.setup(t, root)
			recording := filepath.Join(t.TempDir(), r.name+".jsonl")
			res := wwEnv(t, root, []string{"WRITEWATCH_RECORD=" + recording, "HOME=" + filepath.Join(root, "home")}, r.flags, command...)
			if res.code != r.exit || !res.reported {
				t.Fatalf("exit %d, want %d\n%s\n%s", res.code, r.exit, res.stdout, res.stderr)
			}
			if !golden.Updating() {
				return
			}
			data, err := os.ReadFile(recording)
			if err != nil {
				t.Fatal(err)
			}
			must(t, os.WriteFile(filepath.Join("../internal/session/testdata/runs", r.name+".jsonl"), data, 0o644))
		})
	}
}

// recordedProject is project's tree for a recorded run: at a fixed path
// with -update, so that the recordings name the same paths each time.
func recordedProject(t *testing.T, name string) string {
	t.Helper()
	if !golden.Updating() {
		root, _ := project(t)
		return root
	}
	// The whole base goes, before and after: a suite that writes beside
	// its project (pytest's ../x) would otherwise find its file of the
	// last recording there, and the next recording another severity.
	base := "/var/tmp/writewatch-recorded"
	root := filepath.Join(base, name)
	must(t, os.RemoveAll(base))
	must(t, os.MkdirAll(filepath.Join(root, "tests"), 0o755))
	t.Cleanup(func() { os.RemoveAll(base) })
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), "allow:\n  - tests/**\n")
	return root
}
