package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cleanProject makes a project without a config file (the default config
// applies) under base, with the given files, and returns its path with
// symlinks resolved.
func cleanProject(t *testing.T, base string, files map[string]string) string {
	t.Helper()
	requireRoot(t)
	dir, err := os.MkdirTemp(base, "writewatch-clean-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	dir, err = filepath.EvalSymlinks(dir)
	must(t, err)
	for name, content := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		writeFile(t, filepath.Join(dir, name), content)
	}
	return dir
}

// Files of a clean pytest project: its tests write only under tmp_path;
// test_b fails when FAIL_B is set.
var cleanPytestFiles = map[string]string{
	"pkg/__init__.py": "def double(x):\n    return 2 * x\n",
	"test_clean.py": `import os
from pkg import double

def test_a(tmp_path):
    (tmp_path / "out.txt").write_text("ok")
    assert double(2) == 4

def test_b(tmp_path):
    (tmp_path / "b.txt").write_text("ok")
    assert not os.environ.get("FAIL_B")
`,
}

// A clean pytest project passes under --enforce with the default config,
// wherever it lives, and Python's and pytest's caches stay useful:
// bytecode is kept, and a second run's --lf reruns what failed in the
// first. Nothing is written into the project.
func TestCleanPytestProjectUnderEnforce(t *testing.T) {
	python := "/usr/bin/python3"
	requirePytest(t, python)
	for _, place := range tempPlaces(t) {
		t.Run(place.name, func(t *testing.T) {
			root := cleanProject(t, place.base, cleanPytestFiles)
			cache := t.TempDir()
			env := []string{"TMPDIR=" + place.tmpdir, "XDG_CACHE_HOME=" + cache, "PYTHONDONTWRITEBYTECODE=", "PYTEST_ADDOPTS="}
			flags := []string{"--enforce", "--enforce-with", enforceTier()}

			res := wwEnv(t, root, append(env, "FAIL_B=1"), flags, python, "-m", "pytest", "-q")
			if res.code != 1 || len(res.rep.Violations) != 0 || !strings.Contains(res.stdout, "1 failed, 1 passed") {
				t.Fatalf("first run: exit code %d (want pytest's 1), %d violations\nstdout:\n%s\nstderr:\n%s",
					res.code, len(res.rep.Violations), res.stdout, res.stderr)
			}
			res = wwEnv(t, root, env, flags, python, "-m", "pytest", "-q", "--lf")
			if res.code != 0 || len(res.rep.Violations) != 0 {
				t.Fatalf("second run: exit code %d, %d violations\nstdout:\n%s\nstderr:\n%s",
					res.code, len(res.rep.Violations), res.stdout, res.stderr)
			}
			if !strings.Contains(res.stdout, "1 passed") || strings.Contains(res.stdout, "2 passed") {
				t.Errorf("--lf did not rerun only the failed test: pytest's cache was not kept\n%s", res.stdout)
			}
			pyc, _ := filepath.Glob(filepath.Join(cache, "writewatch/__pycache__", root, "test_clean.*.pyc"))
			if len(pyc) == 0 {
				t.Errorf("no bytecode of test_clean.py under %s", filepath.Join(cache, "writewatch/__pycache__"))
			}
			for _, name := range []string{"__pycache__", ".pytest_cache", "pkg/__pycache__"} {
				if exists(filepath.Join(root, name)) {
					t.Errorf("%s was written into the project", name)
				}
			}
		})
	}
}

// A clean go test project passes under --enforce with the default config:
// go's build directory, the build cache and the test's t.TempDir() and
// os.CreateTemp writes all go through.
func TestCleanGoProjectUnderEnforce(t *testing.T) {
	for _, place := range tempPlaces(t) {
		t.Run(place.name, func(t *testing.T) {
			root := cleanProject(t, place.base, map[string]string{
				"go.mod": "module example.com/clean\n\ngo 1.22\n",
				"clean_test.go": `package clean

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTempOnly(t *testing.T) {
	if err := os.WriteFile(filepath.Join(t.TempDir(), "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp("", "clean-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.Remove(f.Name())
}
`,
			})
			res := wwEnv(t, root, []string{"TMPDIR=" + place.tmpdir}, []string{"--enforce", "--enforce-with", enforceTier()},
				"go", "test", "-count=1", "./...")
			if res.code != 0 || len(res.rep.Violations) != 0 {
				t.Fatalf("exit code %d, %d violations\nstdout:\n%s\nstderr:\n%s", res.code, len(res.rep.Violations), res.stdout, res.stderr)
			}
		})
	}
}

// A go cache that does not exist yet is made before the run and granted,
// as the user COMMAND runs as would find it: go's first write there goes
// through.
func TestMissingGoCacheMadeUnderEnforce(t *testing.T) {
	root := cleanProject(t, "/var/tmp", map[string]string{"README": "x\n"})
	// Outside the temp dir, which the tmp default allows anyway.
	gocache := filepath.Join(filepath.Dir(root), filepath.Base(root)+"-gocache", "go-build")
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(gocache)) })
	res := wwEnv(t, root, []string{"GOCACHE=" + gocache}, []string{"--enforce", "--enforce-with", enforceTier()},
		"sh", "-c", `mkdir "$(go env GOCACHE)/00" && echo made`)
	if res.code != 0 || !strings.Contains(res.stdout, "made") {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if !exists(filepath.Join(gocache, "00")) {
		t.Errorf("%s/00 was not made", gocache)
	}
}
