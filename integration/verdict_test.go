package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// The exact-verdict suite: writes that change a file outside the
// allowlist although no hooked call names it the way the kernel resolved
// it. Each must be in the report with the path the kernel changed, and
// the run must fail (86); the filesystem witness is what sees most of
// them. A project allows tests/**; config.toml in its root is protected.

// verdictRun runs writewatch in the project with flags, then COMMAND;
// fd3, when not nil, is given to writewatch as its descriptor 3, which
// COMMAND inherits (a descriptor opened outside the tree).
func verdictRun(t *testing.T, dir string, flags []string, fd3 *os.File, command ...string) result {
	t.Helper()
	var extra []*os.File
	if fd3 != nil {
		extra = []*os.File{fd3}
	}
	res := wwFiles(t, dir, nil, extra, flags, command...)
	if !res.reported {
		t.Fatalf("no report (exit %d)\n%s", res.code, res.stderr)
	}
	if w := res.rep.Witness; w != nil && !w.Active {
		t.Skipf("the filesystem witness is off here: %s", w.Unavailable)
	}
	return res
}

// verdictProject is project() with a protected config.toml.
func verdictProject(t *testing.T) (root, outside string) {
	root, outside = project(t)
	file(t, root+"/config.toml")
	return root, outside
}

// wantViolation fails unless the report lists a write to path (op, when
// not "") and the run failed as a gate run does.
func wantViolation(t *testing.T, res result, gate bool, op, path string) *report.Violation {
	t.Helper()
	var found *report.Violation
	for i, v := range res.rep.Violations {
		if v.Path == path && (op == "" || v.Op == op) {
			found = &res.rep.Violations[i]
			break
		}
	}
	if found == nil {
		t.Errorf("no %s of %s reported; got %v\n%s", cmp(op, "write"), path, keys(res.rep), res.stderr)
	}
	want := 0
	if gate {
		want = 86
	}
	if res.code != want {
		t.Errorf("exit code %d, want %d\n%s", res.code, want, res.stderr)
	}
	return found
}

func cmp(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// seenOnDisk checks that the filesystem witness saw v.
func seenOnDisk(t *testing.T, v *report.Violation) {
	t.Helper()
	if v != nil && !slices.Contains(v.SeenBy, report.SeenByFilesystem) {
		t.Errorf("%s %s: seen by %q, want the filesystem among them", v.Op, v.Path, v.SeenBy)
	}
}

// Case 1: `ln -s . tests/x; rm tests/x/../config.toml` removes the
// project's config.toml (the kernel follows tests/x before ".."), not
// tests/config.toml. Also when the link is gone before writewatch reads
// the record, and under --audit.
func TestVerdictSymlinkThenDotDot(t *testing.T) {
	root, _ := verdictProject(t)
	for _, c := range []struct {
		name  string
		flags []string
		cmd   []string
	}{
		{"shell", nil, []string{"sh", "-c", "ln -s . tests/x; rm tests/x/../config.toml"}},
		{"audit", []string{"--audit"}, []string{"sh", "-c", "ln -s . tests/x; rm tests/x/../config.toml"}},
		{"link gone at once", nil, []string{opBin, "symlink", ".", "tests/x", ",", "unlink", "tests/x/../config.toml", ",", "unlink", "tests/x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(root + "/tests/x")
			file(t, root+"/config.toml")
			res := verdictRun(t, root, c.flags, nil, c.cmd...)
			v := wantViolation(t, res, len(c.flags) == 0, "unlink", root+"/config.toml")
			if v != nil && v.RequestedPath != "tests/x/../config.toml" {
				t.Errorf("requested as %q", v.RequestedPath)
			}
			if slices.ContainsFunc(res.rep.Violations, func(v report.Violation) bool { return v.Path == root+"/tests/config.toml" }) {
				t.Errorf("tests/config.toml reported: %v", keys(res.rep))
			}
		})
	}
}

// Case 2: a symlinked directory replaced right after the write, and a
// thread that rewrites the path buffer between the call's entry and exit
// while 300 protected files are deleted: every one is reported.
func TestVerdictPathsChangedAfterTheCall(t *testing.T) {
	root, outside := verdictProject(t)
	t.Run("symlinked directory replaced", func(t *testing.T) {
		file(t, outside+"/victim")
		res := verdictRun(t, root, nil, nil, opBin, "symlink", outside, "tests/d", ",", "unlink", "tests/d/victim",
			",", "unlink", "tests/d", ",", "mkdir", "tests/d")
		seenOnDisk(t, wantViolation(t, res, true, "unlink", outside+"/victim"))
	})
	t.Run("path buffer rewritten", func(t *testing.T) {
		const n = 300
		dir := filepath.Join(root, "many")
		must(t, os.Mkdir(dir, 0o755))
		for i := range n {
			file(t, fmt.Sprintf("%s/f%03d", dir, i))
		}
		res := verdictRun(t, root, nil, nil, opBin, "race-unlink", dir, fmt.Sprint(n))
		var missing []string
		for i := range n {
			p := fmt.Sprintf("%s/f%03d", dir, i)
			if !slices.ContainsFunc(res.rep.Violations, func(v report.Violation) bool { return v.Path == p && v.Op == "unlink" }) {
				missing = append(missing, filepath.Base(p))
			}
		}
		if len(missing) > 0 {
			t.Errorf("%d of %d deletes not reported: %s", len(missing), n, strings.Join(missing, " "))
		}
		if res.code != 86 {
			t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
		}
	})
}

// Case 3: a file created, deleted, and another created with the inode
// number the first had. The second is a distinct file, left on disk: it
// is named, with its own open, not counted as the first's repeat. Under
// --audit too, and for opens that create nothing, of files another
// process made, one of which reuses the other's number.
func TestVerdictInodeReuse(t *testing.T) {
	root, _ := project(t)
	for _, c := range []struct {
		name  string
		flags []string
		op    string
		count int // opens of the second file
	}{
		{"gate", nil, "reuse-inode", 1},
		{"audit", []string{"--audit"}, "reuse-inode", 1},
		{"opened again by another process", nil, "reuse-inode-open", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			reset(t, root, "")
			// Not verdictRun: the syscall records name these writes,
			// with or without the filesystem witness.
			res := ww(t, root, c.flags, opBin, c.op, "scratch.tmp", "left_behind.json")
			var second string
			for _, line := range strings.Split(res.stdout, "\n") {
				if strings.HasPrefix(line, "left_behind.json") {
					second = line
				}
			}
			if second == "" {
				if strings.Contains(res.stderr, "no inode number reused") {
					t.Skipf("this filesystem gave no freed inode number to a new file")
				}
				t.Fatalf("wwop failed\n%s", res.stderr)
			}
			first := strings.Replace(second, "left_behind.json", "scratch.tmp", 1)
			v := wantViolation(t, res, len(c.flags) == 0, "open", root+"/"+second)
			if v != nil && v.Count != c.count {
				t.Errorf("%s opened %d times, want %d", second, v.Count, c.count)
			}
			if v := violation(res.rep, "open", root+"/"+first); v == nil || v.Count != c.count {
				t.Errorf("open of %s: %+v, want %d", first, v, c.count)
			}
		})
	}
}

// Case 6: extended attributes set through io_uring (SETXATTR by path,
// FSETXATTR on a read-only descriptor, and a POSIX ACL that makes the
// file 0777) are setxattr violations of the file, in the default mode
// and under --audit.
func TestVerdictUringXattr(t *testing.T) {
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	for _, c := range []struct {
		name  string
		flags []string
		cmd   []string
	}{
		{"SETXATTR", nil, []string{opBin, "uring-setxattr", "config.toml"}},
		{"FSETXATTR", nil, []string{opBin, "uring-fsetxattr", "config.toml"}},
		{"a POSIX ACL making the file 0777", nil, []string{opBin, "uring-setxattr", "config.toml", "acl"}},
		{"audit", []string{"--audit"}, []string{opBin, "uring-setxattr", "config.toml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reset(t, root, "")
			file(t, cfg)
			res := ww(t, root, c.flags, c.cmd...)
			if strings.Contains(res.stderr, "io_uring_setup: ") || strings.Contains(res.stderr, "io_uring request: ") {
				t.Skipf("the kernel refused the request here: %s", res.stderr)
			}
			if v := wantViolation(t, res, len(c.flags) == 0, "setxattr", cfg); v != nil && v.Via != report.ViaIOUring {
				t.Errorf("via %q, want io_uring", v.Via)
			}
		})
	}
}

// Case 6: inode flags changed by ioctl (FS_IOC_SETFLAGS, as chattr
// does, and FS_IOC_FSSETXATTR) on a descriptor opened read-only are
// setflags violations of the file, in the default mode and under --audit.
func TestVerdictInodeFlags(t *testing.T) {
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	for _, c := range []struct {
		name  string
		flags []string
		cmd   []string
	}{
		{"FS_IOC_SETFLAGS", nil, []string{opBin, "setflags", "config.toml", "A"}},
		{"FS_IOC_FSSETXATTR", nil, []string{opBin, "fssetxattr", "config.toml"}},
		{"FS_IOC_SETVERSION", nil, []string{opBin, "setversion", "config.toml"}},
		{"audit", []string{"--audit"}, []string{opBin, "setflags", "config.toml", "A"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reset(t, root, "")
			file(t, cfg)
			res := ww(t, root, c.flags, c.cmd...)
			if strings.Contains(res.stderr, "inappropriate ioctl") || strings.Contains(res.stderr, "operation not supported") {
				t.Skipf("this filesystem keeps no such flags: %s", res.stderr)
			}
			wantViolation(t, res, len(c.flags) == 0, "setflags", cfg)
		})
	}
}

// requireFileSetattr skips the test where the kernel has no
// file_setattr (it came with Linux 6.17; make vmtest boots 6.1 and
// 6.12).
func requireFileSetattr(t *testing.T) {
	t.Helper()
	// An invalid flag: EINVAL where the kernel has the call, which then
	// changes nothing.
	_, _, errno := unix.Syscall6(unix.SYS_FILE_SETATTR, ^uintptr(0), 0, 0, 0, ^uintptr(0), 0)
	if errno == unix.ENOSYS {
		t.Skip("this kernel has no file_setattr (Linux 6.17)")
	}
}

// The no-atime flag (FS_NOATIME_FL) that wwop filesetattr sets.
const fsNoatimeFl = 0x80

// file_setattr(2), the path-based FS_IOC_FSSETXATTR, is a setflags
// violation of the file, by name and by descriptor (AT_EMPTY_PATH), in
// the default mode and under --audit; on an allowed file it is nothing to
// report. Each call did change the flags: what is checked is that its
// change was reported.
func TestVerdictFileSetattr(t *testing.T) {
	requireFileSetattr(t)
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	for _, c := range []struct {
		name  string
		flags []string
		cmd   []string
	}{
		{"by name", nil, []string{opBin, "filesetattr", "config.toml"}},
		{"by descriptor", nil, []string{opBin, "filesetattr", "config.toml", "fd"}},
		{"audit", []string{"--audit"}, []string{opBin, "filesetattr", "config.toml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reset(t, root, "")
			file(t, cfg)
			res := ww(t, root, c.flags, c.cmd...)
			if strings.Contains(res.stderr, "inappropriate ioctl") || strings.Contains(res.stderr, "operation not supported") {
				t.Skipf("this filesystem keeps no such flags: %s", res.stderr)
			}
			if inodeFlags(t, cfg)&fsNoatimeFl == 0 {
				t.Fatalf("file_setattr did not set the no-atime flag of config.toml\n%s", res.stderr)
			}
			wantViolation(t, res, len(c.flags) == 0, "setflags", cfg)
		})
	}
	t.Run("allowed", func(t *testing.T) {
		reset(t, root, "")
		mine := root + "/tests/sub/mine.txt"
		file(t, mine)
		res := ww(t, root, nil, opBin, "filesetattr", "tests/sub/mine.txt")
		if inodeFlags(t, mine)&fsNoatimeFl == 0 {
			t.Fatalf("file_setattr did not set the no-atime flag of tests/sub/mine.txt\n%s", res.stderr)
		}
		if res.code != 0 || len(res.rep.Violations) != 0 {
			t.Errorf("exit code %d, violations %v: want 0 and none\n%s", res.code, keys(res.rep), res.stderr)
		}
	})
}

// io_uring requests of the tree (OPENAT creating a file, MKDIRAT,
// RENAMEAT, UNLINKAT) are each reported as their operation, via io_uring,
// on every kernel: the tracepoint that passes them is io_uring_submit_req,
// or io_uring_submit_sqe on older ones (Linux 6.1).
func TestVerdictUringRequests(t *testing.T) {
	root, _ := verdictProject(t)
	reset(t, root, "")
	file(t, root+"/a.toml")
	file(t, root+"/b.toml")
	res := ww(t, root, []string{"--audit"}, opBin, "uring-openat", "u.txt", ",", "uring-mkdirat", "ud",
		",", "uring-rename", "a.toml", "moved.toml", ",", "uring-unlink", "b.toml")
	for _, w := range []struct{ op, path string }{
		{"open", "u.txt"}, {"mkdir", "ud"}, {"rename", "a.toml"}, {"unlink", "b.toml"},
	} {
		if v := violation(res.rep, w.op, root+"/"+w.path); v == nil || v.Via != report.ViaIOUring {
			t.Errorf("%s of %s: %+v, want one via io_uring; got %v\n%s", w.op, w.path, v, keys(res.rep), res.stderr)
		}
	}
	if len(res.rep.Incomplete) > 0 {
		t.Errorf("incomplete: %q", res.rep.Incomplete)
	}
}

// Case 5: writes that pass no hooked call.
func TestVerdictWritesNoCallNames(t *testing.T) {
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	fresh := func(t *testing.T) {
		reset(t, root, "")
		file(t, cfg)
	}
	for _, op := range []string{"link-fd", "link-empty"} {
		t.Run("hard link from a read-only descriptor, then written: "+op, func(t *testing.T) {
			fresh(t)
			res := verdictRun(t, root, nil, nil, opBin, op, "config.toml", "tests/h", ",", "append", "tests/h")
			wantViolation(t, res, true, "", cfg)
		})
	}
	for _, c := range []struct{ name, op string }{
		{"hard link through a symlink (ln -L), then written", "link-follow"},
		{"io_uring hard link through a symlink, then written", "uring-link-follow"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fresh(t)
			res := verdictRun(t, root, nil, nil, opBin, "symlink", "../config.toml", "tests/sym", ",", c.op, "tests/sym", "tests/h", ",", "append", "tests/h")
			if v := wantViolation(t, res, true, "open", cfg); v != nil && v.RequestedPath != "tests/h" {
				t.Errorf("the write through the link is requested as %q, want tests/h", v.RequestedPath)
			}
		})
	}
	t.Run("descriptor inherited from outside the tree", func(t *testing.T) {
		fresh(t)
		out := openAppend(t, cfg)
		res := verdictRun(t, root, []string{"--quiet"}, out, opBin, "writefd", "3")
		seenOnDisk(t, wantViolation(t, res, true, "", cfg))
	})
	t.Run("writewatch's own output redirected to a file", func(t *testing.T) {
		// writewatch COMMAND > ci.log: what COMMAND writes to its stdout
		// and stderr is the run's output, where the user sent it. A
		// descriptor 3 to another file in the same run is still caught.
		fresh(t)
		log := root + "/ci.log"
		file(t, log)
		out := openAppend(t, log)
		jsonPath := filepath.Join(t.TempDir(), "report.json")
		cmd := exec.Command(wwBin, "--json", jsonPath, "--", opBin, "writefd", "1", ",", "writefd", "2", ",", "writefd", "3")
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, out, out
		cmd.ExtraFiles = []*os.File{openAppend(t, cfg)}
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 86 {
			t.Fatalf("exit: %v, want 86", err)
		}
		data, err := os.ReadFile(jsonPath)
		if err != nil {
			t.Fatal(err)
		}
		var rep report.Report
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, v := range rep.Violations {
			paths = append(paths, v.Path)
		}
		if !slices.Equal(paths, []string{cfg}) {
			t.Errorf("violations on %q, want only %s", paths, cfg)
		}
		if data, _ := os.ReadFile(log); !bytes.Contains(data, []byte("written through an inherited descriptor\nwritten through")) {
			t.Errorf("ci.log has not COMMAND's two writes:\n%s", data)
		}
	})
	t.Run("io_uring write through an inherited descriptor", func(t *testing.T) {
		fresh(t)
		out := openAppend(t, cfg)
		res := verdictRun(t, root, []string{"--quiet"}, out, opBin, "uring-write-fd", "3")
		seenOnDisk(t, wantViolation(t, res, true, "", cfg))
	})
	t.Run("io_uring rename and unlink through a symlink gone at once", func(t *testing.T) {
		fresh(t)
		file(t, root+"/a.toml")
		file(t, root+"/b.toml")
		res := verdictRun(t, root, nil, nil, opBin, "symlink", ".", "tests/x", ",", "uring-rename", "tests/x/../a.toml", "tests/moved",
			",", "uring-unlink", "tests/x/../b.toml", ",", "unlink", "tests/x")
		seenOnDisk(t, wantViolation(t, res, true, "rename", root+"/a.toml"))
		seenOnDisk(t, wantViolation(t, res, true, "unlink", root+"/b.toml"))
	})
}

// Case 5, as root: ways around path names that only root has.
func TestVerdictRootWritesNoCallNames(t *testing.T) {
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	for _, c := range []struct {
		name  string
		setup func(t *testing.T)
		cmd   []string
		path  string // "": cfg
		since tracer.Why
	}{
		{name: "chroot", cmd: []string{opBin, "chroot", root, ",", "append", "/config.toml"}, since: tracer.WhyChroot},
		{name: "a bind mount in a mount namespace", setup: func(t *testing.T) { must(t, os.Mkdir(root+"/tests/mnt", 0o755)) },
			cmd: []string{opBin, "mount-ns-bind", root, "tests/mnt", "config.toml"}, since: tracer.WhyNamespace},
		{name: "open_tree", cmd: []string{opBin, "open-tree", root, "config.toml"}, since: tracer.WhyMount},
		{name: "open_by_handle_at", cmd: []string{opBin, "by-handle", cfg}, since: tracer.WhyHandle},
		{name: "acct", setup: func(t *testing.T) { file(t, root+"/acct.log") }, cmd: []string{opBin, "acct", root + "/acct.log"}, path: root + "/acct.log", since: tracer.WhyAcct},
		{name: "AF_UNIX bind", cmd: []string{opBin, "bind", root + "/sock"}, path: root + "/sock", since: tracer.WhyUnixSocket},
	} {
		t.Run(c.name, func(t *testing.T) {
			reset(t, root, "")
			file(t, cfg)
			if c.setup != nil {
				c.setup(t)
			}
			res := verdictRun(t, root, nil, nil, c.cmd...)
			if res.code != 86 && strings.Contains(res.stderr, "wwop") {
				t.Skipf("the kernel refused it here: %s", res.stderr)
			}
			seenOnDisk(t, wantViolation(t, res, true, "", cmp(c.path, cfg)))
			// What root did asked for contents (on demand as for a user).
			onDemand(t, res, c.since.String())
		})
	}
	t.Run("core dump", func(t *testing.T) {
		if pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern"); err != nil || strings.ContainsAny(strings.TrimSpace(string(pattern)), "|/") {
			t.Skipf("core_pattern %q does not dump into the working directory", pattern)
		}
		reset(t, root, "")
		res := verdictRun(t, root, nil, nil, opBin, "core", root)
		var core *report.Violation
		for i, v := range res.rep.Violations {
			if strings.HasPrefix(v.Path, root+"/core") {
				core = &res.rep.Violations[i]
			}
		}
		if core == nil {
			t.Errorf("no core file reported: %v\n%s", keys(res.rep), res.stderr)
		}
		seenOnDisk(t, core)
		if res.code != 86 {
			t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
		}
	})
}

// Case 4 on a filesystem the witness does not watch (a tmpfs no path
// asks for): a descriptor COMMAND inherits open for writing there, its
// path outside the allowlist, cannot be watched, and what COMMAND writes
// through it no record names. The run never passes: it is incomplete
// (88) and says which file, whether or not COMMAND wrote.
func TestVerdictInheritedOnUnwatchedFilesystem(t *testing.T) {
	root, outside := project(t)
	tfs := filepath.Join(outside, "tmpfs")
	must(t, os.MkdirAll(tfs, 0o755))
	if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", tfs).CombinedOutput(); err != nil {
		t.Skipf("no tmpfs mount here: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", tfs).Run() })
	cfg := filepath.Join(tfs, "config.toml")
	file(t, cfg)
	for _, command := range [][]string{{opBin, "writefd", "3"}, {"true"}} {
		res := verdictRun(t, root, nil, openAppend(t, cfg), command...)
		if res.code != 88 || !strings.Contains(strings.Join(res.rep.Incomplete, "\n"), cfg) {
			t.Errorf("%q: exit %d, incomplete %q; want 88 naming %s\n%s", command, res.code, res.rep.Incomplete, cfg, res.stderr)
		}
	}
}

// Case 5 in a container: writewatch in a PID namespace of its own, with
// /proc mounted there, as in a container. A process that writes only as
// it dies (its accounting record, its core) makes no record of its own
// that would say its pid there: its fork record says it. Pids in the
// report are the namespace's.
func TestVerdictInPIDNamespace(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	root, _ := verdictProject(t)
	// timeout: a process left paused would keep the run from ending.
	wrap := []string{"timeout", "60", "unshare", "--pid", "--fork", "--mount-proc"}
	run := func(t *testing.T, command ...string) result {
		res := wwWrapped(t, wrap, root, nil, nil, nil, command...)
		if !res.reported {
			t.Fatalf("no report (exit %d)\n%s", res.code, res.stderr)
		}
		if w := res.rep.Witness; w != nil && !w.Active {
			t.Skipf("the filesystem witness is off here: %s", w.Unavailable)
		}
		return res
	}
	inNamespace := func(t *testing.T, v *report.Violation) {
		// writewatch is 1 there, and COMMAND one of the next few.
		if v != nil && (v.PID < 2 || v.PID > 100) {
			t.Errorf("%s by pid %d: not the namespace's numbering", v.Path, v.PID)
		}
	}
	t.Run("a write", func(t *testing.T) {
		reset(t, root, "")
		file(t, root+"/config.toml")
		inNamespace(t, wantViolation(t, run(t, opBin, "append", root+"/config.toml"), true, "", root+"/config.toml"))
	})
	t.Run("acct", func(t *testing.T) {
		reset(t, root, "")
		file(t, root+"/acct.log")
		res := run(t, opBin, "acct", root+"/acct.log")
		v := wantViolation(t, res, true, "", root+"/acct.log")
		seenOnDisk(t, v)
		inNamespace(t, v)
	})
	// A namespace of the tree's own below writewatch's: its processes
	// are numbered as writewatch's namespace numbers them, and a Go test
	// binary paused at its exec is let go by that number (the kernel's
	// own pid there names another process or none: the run hung).
	t.Run("a Go test binary in a namespace below", func(t *testing.T) {
		requireRoot(t)
		bin := goTestBinary(t)
		reset(t, root, "")
		res := run(t, "unshare", "--pid", "--fork", bin, "-test.run", "^TestSequentialWrites$")
		v := wantViolation(t, res, true, "", filepath.Join(root, "sequential.txt"))
		inNamespace(t, v)
		if got := whoWrote(t, res.rep, filepath.Join(root, "sequential.txt")); got.test != "TestSequentialWrites" {
			t.Errorf("sequential.txt: got %+v, want TestSequentialWrites", got)
		}
	})
}

// Case 5, continued: writes through a descriptor that no hooked call
// and no fanotify event show the witness.
func TestVerdictWritesThroughDescriptors(t *testing.T) {
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	fresh := func(t *testing.T) {
		reset(t, root, "")
		file(t, cfg)
	}
	// A shared mapping and a Linux AIO write change the file with no
	// event the filesystem witness gets: the mmap and io_submit calls
	// are judged by the file behind the descriptor. The same calls on
	// an allowed file are not violations.
	for _, c := range []struct {
		op, name string
		flags    []string
	}{
		{"mmap", "mmap-fd", nil}, {"aio", "aio-fd", nil}, {"mmap", "mmap-fd", []string{"--audit"}},
	} {
		t.Run("descriptor inherited from outside the tree, "+c.name+" "+strings.Join(c.flags, " "), func(t *testing.T) {
			fresh(t)
			ok := root + "/tests/ok"
			file(t, ok)
			res := verdictRun(t, root, c.flags, openReadWrite(t, cfg), opBin, c.name, "3")
			wantViolation(t, res, len(c.flags) == 0, c.op, cfg)
			if data, _ := os.ReadFile(cfg); string(data) == "precious\n" {
				t.Errorf("%s did not change config.toml\n%s", c.name, res.stderr)
			}
			res = verdictRun(t, root, c.flags, openReadWrite(t, ok), opBin, c.name, "3")
			if res.code != 0 || len(res.rep.Violations) != 0 {
				t.Errorf("%s of an allowed file: exit %d, %v\n%s", c.name, res.code, keys(res.rep), res.stderr)
			}
		})
	}
	// A fanotify group whose event descriptors are open for writing hands
	// the tree a writable descriptor of the protected file with no open
	// call, and the kernel makes no fanotify event for writes through
	// it: the run cannot pass. Event descriptors open for reading only
	// are no such thing.
	t.Run("fanotify event descriptor written", func(t *testing.T) {
		fresh(t)
		res := verdictRun(t, root, nil, nil, opBin, "fanotify-write", "config.toml")
		if res.code != 88 || !slices.ContainsFunc(res.rep.Incomplete, func(s string) bool { return strings.Contains(s, "fanotify") }) {
			t.Errorf("exit %d, incomplete %q: want 88, for the fanotify group\n%s", res.code, res.rep.Incomplete, res.stderr)
		}
		if data, _ := os.ReadFile(cfg); string(data) == "precious\n" {
			t.Errorf("config.toml not changed\n%s", res.stderr)
		}
		fresh(t)
		res = verdictRun(t, root, nil, nil, opBin, "fanotify-write", "config.toml", "ro")
		if res.code != 0 || len(res.rep.Incomplete) != 0 {
			t.Errorf("read-only event descriptors: exit %d, incomplete %q, want 0\n%s", res.code, res.rep.Incomplete, res.stderr)
		}
	})
}

// openReadWrite opens path for reading and writing, for a descriptor
// from outside the tree; closed when the test ends.
func openReadWrite(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func openAppend(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// truncate(2), and an open that fails, follow a symlink in the last
// component of their path: tests/l -> ../config.toml names the project's
// config.toml, also as the plain name l inside tests/ (which the kernel
// would otherwise settle as allowed). Under --enforce, Landlock refuses
// it: that is an attempt it blocked, and the run fails.
func TestVerdictLastSymlinkFollowed(t *testing.T) {
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	for _, c := range []struct {
		name  string
		flags []string
		cmd   []string
	}{
		{"truncate", nil, []string{"truncate", "tests/l"}},
		{"truncate of a plain name", nil, []string{"chdir", "tests", ",", "truncate", "l"}},
		{"truncate, audit", []string{"--audit"}, []string{"truncate", "tests/l"}},
		{"truncate, enforce", []string{"--enforce", "--enforce-with", enforceTier()}, []string{"truncate", "tests/l"}},
		{"open, enforce", []string{"--enforce", "--enforce-with", enforceTier()}, []string{"chdir", "tests", ",", "trunc", "l"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reset(t, root, "")
			file(t, cfg)
			must(t, os.Symlink("../config.toml", root+"/tests/l"))
			before := hashFile(t, cfg)
			res := verdictRun(t, root, c.flags, nil, append([]string{opBin}, c.cmd...)...)
			op := "truncate"
			if strings.HasPrefix(c.name, "open") {
				op = "open"
			}
			v := wantViolation(t, res, len(c.flags) != 1, op, cfg)
			if v == nil {
				return
			}
			if !slices.Contains(v.SeenBy, report.SeenBySyscall) {
				t.Errorf("seen by %q, want the syscall among them", v.SeenBy)
			}
			if len(c.flags) > 1 {
				if v.Action != report.ActionBlocked && v.Action != report.ActionBlockedKilled {
					t.Errorf("action %q, want it blocked", v.Action)
				}
				if hashFile(t, cfg) != before {
					t.Error("config.toml changed under --enforce")
				}
			}
		})
	}
}

// Without CAP_SYS_ADMIN (CAP_BPF and CAP_PERFMON only, as ambient
// capabilities give them) the witness is off: the report says so, in its
// notes and its witness account, and that alone does not make the run
// one that could not see everything.
func TestVerdictWitnessOffWithoutCapSysAdmin(t *testing.T) {
	u := makeUser(t)
	root, bin := userProject(t, u)
	ww := filepath.Join(bin, "writewatch")
	copyFile(t, wwBin, ww)
	jsonPath := filepath.Join(root, "tests", "report.json")
	code, stderr := runAs(t, u, root, u.env(),
		[]string{"--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon"},
		ww, "--json", jsonPath, "--", "true")
	if code != 0 {
		t.Fatalf("exit code %d, want 0\n%s", code, stderr)
	}
	rep := readReport(t, jsonPath)
	if w := rep.Witness; w == nil || w.Active || !strings.Contains(w.Unavailable, "CAP_SYS_ADMIN") {
		t.Errorf("witness account %+v, want it off for want of CAP_SYS_ADMIN", w)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "filesystem witness") }) {
		t.Errorf("notes %q say nothing of the witness", rep.Notes)
	}
	if len(rep.Incomplete) > 0 {
		t.Errorf("incomplete: %q", rep.Incomplete)
	}
}

// secondsFS mounts a new ext4 filesystem with 128-byte inodes, which
// keeps whole seconds in its times, under /var/tmp, and returns a
// project made on it. It skips where no such filesystem can be made.
func secondsFS(t *testing.T) string {
	t.Helper()
	requireRoot(t)
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("no mkfs.ext4")
	}
	img := filepath.Join(t.TempDir(), "seconds.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 32<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-I", "128", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4 -I 128: %v\n%s", err, out)
	}
	mnt, err := os.MkdirTemp("/var/tmp", "writewatch-it-seconds-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(mnt) })
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("mount a loop device: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	root := filepath.Join(mnt, "proj")
	if err := os.MkdirAll(root+"/tests", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), "allow:\n  - tests/**\n")
	file(t, root+"/config.toml")
	return root
}

// A file from before the run appended to in the run's first second, on a
// filesystem that keeps whole seconds: its change time, rounded down, is
// before the run started. That is no sign that nothing was written: the
// run fails (86) with a data-loss, in the default mode and under --audit
// (where it is reported as such).
func TestVerdictWholeSecondTimes(t *testing.T) {
	root := secondsFS(t)
	cfg := root + "/config.toml"
	for _, flags := range [][]string{nil, {"--audit"}} {
		t.Run(fmt.Sprint("flags", flags), func(t *testing.T) {
			file(t, cfg)
			// The file's last change before the run is more than two
			// seconds older than the run, and the run starts early in
			// a second.
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(3 * time.Second)))
			res := ww(t, root, flags, opBin, "append", "config.toml")
			if v := wantViolation(t, res, len(flags) == 0, "open", cfg); v != nil && v.Severity != report.SeverityDataLoss {
				t.Errorf("severity %q, want %q\n%s", v.Severity, report.SeverityDataLoss, res.stderr)
			}
		})
	}
}

// A process of the tree that outlives the run holding config.toml open
// for writing (appending, not yet written) can write to it once
// writewatch is gone: the file's change time at the end does not make
// the open an attempt. The run fails (86), with a data-loss; with
// --kill-survivors too.
func TestVerdictSurvivorHoldsFileOpen(t *testing.T) {
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	// The file's last change is more than two seconds older than the
	// runs: the change time alone would say nothing was written.
	time.Sleep(2100 * time.Millisecond)
	script := `setsid sh -c 'exec 3>>config.toml; sleep 3; echo late >&3' </dev/null >/dev/null 2>&1 & exit 0`
	for _, flags := range [][]string{{"--grace", "200ms"}, {"--grace", "200ms", "--kill-survivors"}} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			res := ww(t, root, flags, "sh", "-c", script)
			for _, s := range res.rep.Survivors {
				syscall.Kill(s.PID, syscall.SIGKILL)
			}
			if len(res.rep.Survivors) == 0 {
				t.Fatalf("no survivors\n%s", res.stderr)
			}
			if v := wantViolation(t, res, true, "open", cfg); v != nil && v.Severity != report.SeverityDataLoss {
				t.Errorf("severity %q, want %q\n%s", v.Severity, report.SeverityDataLoss, res.stderr)
			}
		})
	}
}

// A file written through a shared mapping, in a mount namespace of the
// tree's own where a directory outside the allowlist is bound onto an
// allowed one, and whose last descriptor is left in a cycle of Unix
// sockets for the kernel to collect: the mapping's record names the
// allowed path, and the filesystem witness hears of no write (a shared
// mapping makes no event, and the file is not closed by the tree, if at
// all during the run). writewatch cannot tell where the path led: the
// run does not pass, it is incomplete.
func TestVerdictSharedMappingInAMountNamespace(t *testing.T) {
	root, outside := project(t)
	victim := filepath.Join(outside, "victim")
	writeFile(t, victim, "before\n")
	mnt := filepath.Join(root, "tests", "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("mount --bind %s %s && %s mmap-gc %s/victim", outside, mnt, opBin, mnt)
	// In a mount namespace of the tree's own, and in COMMAND's (the
	// bind mount then undone).
	for _, c := range []struct {
		name string
		cmd  []string
	}{
		{"own namespace", []string{"unshare", "-m", "sh", "-c", script}},
		{"COMMAND's namespace", []string{"sh", "-c", script + "; umount " + mnt}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
			writeFile(t, victim, "before\n")
			res := ww(t, root, nil, c.cmd...)
			if data, _ := os.ReadFile(victim); !strings.HasPrefix(string(data), "MMAP") {
				t.Fatalf("the file was not written (%q): the test proves nothing\n%s", data, res.stderr)
			}
			if res.code != 86 && res.code != 88 {
				t.Fatalf("exit %d, want 88 (or 86): a file outside the allowlist was written\n%s", res.code, res.stderr)
			}
			if res.code == 88 && !slices.ContainsFunc(res.rep.Incomplete, func(r string) bool {
				return strings.Contains(r, "shared mapping") || strings.Contains(r, "mapped for writing")
			}) {
				t.Errorf("incomplete %q: want the shared mapping's reason", res.rep.Incomplete)
			}
		})
	}
}

// A file outside the project and the home directory, opened read-only
// and hard-linked into an allowed directory through its descriptor (""
// with AT_EMPTY_PATH, or /proc/self/fd/N with AT_SYMLINK_FOLLOW), then
// written through the new name, which is removed at once, as the
// descriptor is: the write through the new name is a violation of the
// file linked, named by the path the kernel walked during the link, with
// neither left to look at.
func TestVerdictLinkOfAHeldFile(t *testing.T) {
	root, outside := project(t)
	victim := filepath.Join(outside, "victim")
	for _, how := range []string{"fd", "proc"} {
		t.Run(how, func(t *testing.T) {
			writeFile(t, victim, "before\n")
			res := ww(t, root, nil, opBin, "held-link", victim, filepath.Join(root, "tests", "sub", "h"), how)
			if data, _ := os.ReadFile(victim); string(data) != "x\n" {
				t.Fatalf("the file was not written through its link (%q): the test proves nothing\n%s", data, res.stderr)
			}
			if res.code != 86 {
				t.Errorf("exit %d, want 86\n%s", res.code, res.stderr)
			}
			h := filepath.Join(root, "tests", "sub", "h")
			if v := violation(res.rep, "open", victim); v == nil || v.RequestedPath != h {
				t.Errorf("open of %s: %+v, want a violation requested as %s; got %v\n%s", victim, v, h, keys(res.rep), res.stderr)
			}
			if v := violation(res.rep, "link", victim); v != nil {
				t.Errorf("the link itself reported: %+v", v)
			}
		})
	}
}

// A call that follows a symlink in an allowed directory to a file
// outside the allowlist, and whose change the filesystem witness does
// not see while contents are not watched (truncate, a modification time
// alone, a hard link with AT_SYMLINK_FOLLOW then written through), with
// the symlink replaced right after the call by one to an allowed file:
// the judge, which follows the link after the call, cannot tell which
// file was changed. The run never passes: it is a violation (86) or
// incomplete (88).
func TestVerdictSymlinkReplacedAfterTheCall(t *testing.T) {
	root, outside := project(t)
	victim := filepath.Join(outside, "victim")
	dir := filepath.Join(root, "tests", "sub")
	for _, call := range []string{"truncate", "mtime", "link"} {
		t.Run(call, func(t *testing.T) {
			for _, name := range []string{"t", "l", "h"} {
				os.Remove(filepath.Join(dir, name))
			}
			writeFile(t, victim, "before\n")
			var before unix.Stat_t
			if err := unix.Stat(victim, &before); err != nil {
				t.Fatal(err)
			}
			res := ww(t, root, nil, opBin, "swap-after", call, dir, victim)
			var after unix.Stat_t
			if err := unix.Stat(victim, &after); err != nil {
				t.Fatal(err)
			}
			if after.Size == before.Size && after.Mtim == before.Mtim {
				t.Fatalf("%s did not change the file: the test proves nothing\n%s", call, res.stderr)
			}
			if res.code != 86 && res.code != 88 {
				t.Errorf("exit %d, want 86 or 88: a file outside the allowlist changed\n%s", res.code, res.stderr)
			}
		})
	}
}

// A truncate, a change of a file's times or a hard link through a
// symlink (then written through) whose directory is removed right after
// the call, as a test's temporary directory is at its end: the kernel
// pauses the process until the path is followed (truncate, one time,
// link), or the filesystem witness hears of the change (both times), so
// a file outside the allowlist is found by its path; one inside passes
// (the link made just before the call, the file changed through it
// after).
func TestVerdictSymlinkGoneAfterTheCall(t *testing.T) {
	root, outside := project(t)
	victim := filepath.Join(outside, "victim")
	dir := filepath.Join(root, "tests", "sub")
	inside := filepath.Join(dir, "t")
	for _, call := range []string{"truncate", "mtime", "times", "link"} {
		t.Run(call, func(t *testing.T) {
			writeFile(t, victim, "before\n")
			var before unix.Stat_t
			if err := unix.Stat(victim, &before); err != nil {
				t.Fatal(err)
			}
			res := ww(t, root, nil, opBin, "gone-after", call, dir, victim)
			var after unix.Stat_t
			if err := unix.Stat(victim, &after); err != nil {
				t.Fatal(err)
			}
			if after.Ctim == before.Ctim {
				t.Fatalf("%s did not change the file: the test proves nothing\n%s", call, res.stderr)
			}
			if res.code != 86 || !strings.Contains(res.stderr, victim) {
				t.Errorf("exit %d, want 86 naming %s: a file outside the allowlist changed\n%s", res.code, victim, res.stderr)
			}
			writeFile(t, inside, "inside\n")
			if res := ww(t, root, nil, opBin, "gone-after", call, dir, inside); res.code != 0 {
				t.Errorf("through a link to %s: exit %d, want 0\n%s", inside, res.code, res.stderr)
			}
		})
	}
}
