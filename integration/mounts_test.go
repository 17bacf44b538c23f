package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The mounts suite: benign suites that make namespaces and mounts of
// their own, whose writes are judged by the mount they land on. Each run
// must pass: exit 0, nothing reported, nothing it could not see. A
// project allows tests/**; config.toml in its root is protected, and
// writes that reach it are still reported.

// passedClean fails unless the run exited 0 with no violation and no
// reason it could not see everything; run names the try, or is "".
func passedClean(t *testing.T, res result, run string) {
	t.Helper()
	if res.code != 0 || len(res.rep.Violations) != 0 || len(res.rep.Incomplete) != 0 {
		t.Errorf("%sexit code %d, violations %v, incomplete %q: want 0 and none\n%s", run, res.code, keys(res.rep), res.rep.Incomplete, res.stderr)
	}
}

// A child cloned straight into new user and mount namespaces writes an
// allowed file as its first call, and mounts nothing: a namespace with
// no mount in it changes no path, and the run passes, every time. As a
// user (writewatch as root, as sudo starts it) and as root; ten times
// each, for the timing (the child runs while its parent is paused).
func TestMountsNewNamespaceWithoutMounts(t *testing.T) {
	t.Run("user", func(t *testing.T) {
		u := makeUser(t)
		root, _ := contentsProject(t, u)
		requireUserNS(t, u, root)
		out := filepath.Join(root, "tests", "out.txt")
		for i := range 10 {
			os.Remove(out)
			res := contentsRun(t, u, root, nil, opBin, "clone-ns-write", "tests/out.txt")
			if !exists(out) {
				t.Fatalf("tests/out.txt not written: the run proves nothing\n%s", res.stderr)
			}
			passedClean(t, res, fmt.Sprintf("run %d: ", i))
		}
	})
	t.Run("root", func(t *testing.T) {
		root, _ := verdictProject(t)
		out := filepath.Join(root, "tests", "out.txt")
		for i := range 10 {
			os.Remove(out)
			res := verdictRun(t, root, nil, nil, opBin, "clone-ns-write", "tests/out.txt")
			if !exists(out) {
				t.Fatalf("tests/out.txt not written: the run proves nothing\n%s", res.stderr)
			}
			passedClean(t, res, fmt.Sprintf("run %d: ", i))
		}
	})
}

// COMMAND as root mounts a tmpfs on a directory of its own under the
// temp dir, in its own mount namespace (writewatch's), as os/exec's
// TestFindExecutableVsNoexec does; then allowed files are written
// through shared mappings (as the Go linker writes its output), one in
// tests/ and one in the tmpfs, and opened. The mount changes only the
// paths beneath it: the run passes. The bind mount of the project on
// tests/mnt in the same namespace, written through a shared mapping, is
// never passed (TestVerdictSharedMappingInAMountNamespace).
func TestMountsTmpfsOnOwnDirectory(t *testing.T) {
	root, _ := verdictProject(t)
	own := t.TempDir()
	t.Cleanup(func() { unix.Unmount(own, unix.MNT_DETACH) })
	writeFile(t, filepath.Join(root, "tests", "out.txt"), "before\n")
	res := verdictRun(t, root, nil, nil, strings.Fields(fmt.Sprintf(
		"%[1]s mount-tmpfs %[2]s , write %[2]s/f , mmap-gc %[2]s/f , mmap-gc tests/out.txt , append tests/out.txt , write %[2]s/g , umount %[2]s", opBin, own))...)
	if data, _ := os.ReadFile(filepath.Join(root, "tests", "out.txt")); !strings.HasPrefix(string(data), "MMAP") {
		t.Fatalf("tests/out.txt not written through its mapping (%q): the run proves nothing\n%s", data, res.stderr)
	}
	passedClean(t, res, "")
}

// A fake home: in a mount namespace of its own, a test mounts a tmpfs
// on a directory outside the allowlist (here the project's sibling, as
// a home directory would be) and writes there every way it can: files
// created, written, renamed, linked, changed and removed, directories
// made and removed, a call that fails. Nothing outside the namespace
// changes: the filesystem the writes land on is the test's own, and the
// run passes. As root and as a user (unshare -Urm). A write that lands
// on the user's filesystem through a bind mount in that namespace is
// still reported.
func TestMountsFakeHome(t *testing.T) {
	ops := func(home string) []string {
		return strings.Fields(fmt.Sprintf(`mount-tmpfs %[1]s , write %[1]s/f , mkdir %[1]s/.cfg , mkdir %[1]s/.cfg/app ,
			write %[1]s/.cfg/app/c , rename %[1]s/.cfg/app/c %[1]s/.cfg/app/d , link %[1]s/.cfg/app/d %[1]s/.cfg/app/e ,
			symlink d %[1]s/.cfg/app/s , chmod %[1]s/.cfg/app/d , truncate %[1]s/.cfg/app/e , mmap-gc %[1]s/f ,
			unlink %[1]s/.cfg/app/d , unlink %[1]s/.cfg/app/e , unlink %[1]s/.cfg/app/s , rmdir %[1]s/.cfg/app , mkdir %[1]s/.cfg`, home))
	}
	// The last mkdir fails (EEXIST): wwop exits 1 there.
	check := func(t *testing.T, res result, home string) {
		t.Helper()
		if res.code != 1 || !strings.Contains(res.stderr, "mkdir "+home+"/.cfg: file exists") {
			t.Fatalf("exit %d: want wwop's 1 from its last mkdir, which fails\n%s", res.code, res.stderr)
		}
		if len(res.rep.Violations) != 0 || len(res.rep.Incomplete) != 0 {
			t.Errorf("violations %v, incomplete %q: want none\n%s", keys(res.rep), res.rep.Incomplete, res.stderr)
		}
		if entries, _ := os.ReadDir(home); len(entries) != 0 {
			t.Errorf("%s holds %v after the run: the writes were not the namespace's alone", home, entries)
		}
	}
	t.Run("root", func(t *testing.T) {
		root, home := verdictProject(t)
		res := verdictRun(t, root, nil, nil, append([]string{"unshare", "-m", "--propagation", "private", opBin}, ops(home)...)...)
		check(t, res, home)
	})
	t.Run("user", func(t *testing.T) {
		u := makeUser(t)
		root, _ := contentsProject(t, u)
		requireUserNS(t, u, root)
		home := filepath.Join(filepath.Dir(root), "home")
		userDir(t, u, home)
		// unshare -Ur writes its own uid_map, gid_map and setgroups.
		writeFile(t, filepath.Join(root, ".writewatch.yaml"), "allow:\n  - tests/**\n  - /proc/**\n")
		res := contentsRun(t, u, root, nil, append([]string{"unshare", "-Urm", opBin}, ops(home)...)...)
		check(t, res, home)
	})
	t.Run("bind mount of the project", func(t *testing.T) {
		root, home := verdictProject(t)
		cfg := root + "/config.toml"
		res := verdictRun(t, root, nil, nil, "unshare", "-m", "--propagation", "private", opBin,
			"mount-tmpfs", home, ",", "mkdir", home+"/p", ",", "bind-mount", root, home+"/p", ",", "unlink", home+"/p/config.toml")
		if exists(cfg) {
			t.Fatalf("config.toml not removed: the run proves nothing\n%s", res.stderr)
		}
		seenOnDisk(t, wantViolation(t, res, true, "", cfg))
	})
}
