package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tmpProjectSource is the project's Go test (package tmpproj): it writes
// under t.TempDir() and into tests/, logs where its temp dir was, and then
// writes a stray file into the project root.
const tmpProjectSource = "testdata/tmpproj/tmpproj_test.go"

// tmpProject makes a Go module that allows tests/** in a new directory
// under base, and returns its path with symlinks resolved. In the VM
// harness, which has no go command, it holds only the config: the test
// runs from a binary built beforehand (tmpProjectCommand).
func tmpProject(t *testing.T, base string) string {
	t.Helper()
	requireRoot(t)
	dir, err := os.MkdirTemp(base, "writewatch-tmpproj-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".writewatch.yaml"), "allow:\n  - tests/**\n")
	if os.Getenv("WRITEWATCH_IT_TMPPROJ") == "" {
		src, err := os.ReadFile(tmpProjectSource)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/tmpproj\n\ngo 1.22\n")
		writeFile(t, filepath.Join(dir, "tmpproj_test.go"), string(src))
	}
	return dir
}

// tmpProjectCommand runs the project's test verbosely: a real go test,
// or, in the VM harness, the test binary built beforehand, in the
// project's directory as go test runs it.
func tmpProjectCommand() []string {
	if bin := os.Getenv("WRITEWATCH_IT_TMPPROJ"); bin != "" {
		return []string{bin, "-test.v", "-test.count=1"}
	}
	return []string{"go", "test", "-count=1", "-v", "."}
}

// tempPlace is where a project is made, and the TMPDIR of its run.
type tempPlace struct {
	name   string
	base   string // where the project is made
	tmpdir string // $TMPDIR for the run
}

// tempPlaces are /tmp, and another temp dir given as $TMPDIR.
func tempPlaces(t *testing.T) []tempPlace {
	t.Helper()
	requireRoot(t)
	otherTmp, err := os.MkdirTemp("/var/tmp", "writewatch-tmpdir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(otherTmp) })
	if otherTmp, err = filepath.EvalSymlinks(otherTmp); err != nil {
		t.Fatal(err)
	}
	return []tempPlace{{"under /tmp", "/tmp", "/tmp"}, {"under TMPDIR", otherTmp, otherTmp}}
}

// tempDirOf is the t.TempDir() the project's test logged.
func tempDirOf(t *testing.T, res result) string {
	t.Helper()
	m := tempdirLine.FindStringSubmatch(res.stdout)
	if m == nil {
		t.Fatalf("the test did not say where its temp dir was:\nstdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	}
	return m[1]
}

var tempdirLine = regexp.MustCompile(`tempdir: (\S+)`)

// A project checked out under /tmp, or under $TMPDIR, is watched like any
// other: the tmp default does not allow the project itself. A stray write
// in its root is reported, in the default mode and with --audit, while the
// test's t.TempDir() write, go's own build directory in the temp dir and
// the Go build cache stay allowed in the same run.
func TestProjectInTempDir(t *testing.T) {
	for _, place := range tempPlaces(t) {
		for _, mode := range []struct {
			name  string
			flags []string
			code  int
		}{
			{"default", nil, 86},
			{"audit", []string{"--audit"}, 0},
		} {
			t.Run(place.name+"/"+mode.name, func(t *testing.T) {
				root := tmpProject(t, place.base)
				res := wwEnv(t, root, []string{"TMPDIR=" + place.tmpdir}, mode.flags, tmpProjectCommand()...)
				if res.code != mode.code {
					t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", res.code, mode.code, res.stdout, res.stderr)
				}
				stray := filepath.Join(root, "stray.txt")
				if !exists(stray) {
					t.Fatal("the test did not write its stray file")
				}
				if !strings.Contains(res.stderr, stray) {
					t.Errorf("stderr does not name %s:\n%s", stray, res.stderr)
				}
				tempDir := tempDirOf(t, res)
				if !strings.HasPrefix(tempDir, place.tmpdir+"/") || strings.HasPrefix(tempDir, root+"/") {
					t.Fatalf("t.TempDir() is %s: want it in %s, outside the project %s", tempDir, place.tmpdir, root)
				}
				for _, v := range res.rep.Violations {
					if v.Path != stray {
						t.Errorf("violation %s %s: only %s should be reported", v.Op, v.Path, stray)
					}
				}
				if len(res.rep.Violations) == 0 {
					t.Errorf("no violation in the JSON report; stderr:\n%s", res.stderr)
				}
			})
		}
	}
}

// --print-config shows the carve-out as a deny entry from default:project.
func TestPrintConfigShowsProjectCarveOut(t *testing.T) {
	root := tmpProject(t, "/tmp")
	// Not through ww, whose --json means nothing with --print-config.
	cmd := exec.Command(wwBin, "--print-config")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TMPDIR=/tmp")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	want := regexp.MustCompile(`(?m)^deny +` + regexp.QuoteMeta(root) + ` +default:project$`)
	if !want.MatchString(string(out)) {
		t.Errorf("--print-config has no deny entry for %s from default:project:\n%s", root, out)
	}
}
