package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/writewatch/writewatch/report"
)

// The scenario of the core issue: a stray file from the shell, one from a
// detached grandchild, and an allowed write to /tmp.
func TestStrayFilesFromTreeAreCaught(t *testing.T) {
	root, _ := project(t)
	script := `echo x > stray.txt; (sh -c "echo y > $PWD/deep.txt" &); wait; echo z > /tmp/ok.txt`

	res := ww(t, root, nil, "sh", "-c", script)
	if res.code != 86 {
		t.Fatalf("exit code %d, want 86 (violations)\n%s", res.code, res.stderr)
	}
	want := []key{
		{"open", filepath.Join(root, "deep.txt"), ""},
		{"open", filepath.Join(root, "stray.txt"), ""},
	}
	if got := keys(res.rep); !slices.Equal(got, want) {
		t.Fatalf("violations:\n got %v\nwant %v\n%s", got, want, res.stderr)
	}
	if v := violation(res.rep, "open", filepath.Join(root, "stray.txt")); v.RequestedPath != "stray.txt" || v.Flags != "O_WRONLY|O_CREAT|O_TRUNC" {
		t.Errorf("stray.txt: requested %q flags %q", v.RequestedPath, v.Flags)
	}
	deep := violation(res.rep, "open", filepath.Join(root, "deep.txt"))
	if len(deep.Chain) < 2 || deep.Chain[len(deep.Chain)-1].Cmdline[2] != script {
		t.Errorf("deep.txt chain should end at COMMAND: %+v", deep.Chain)
	}

	audit := ww(t, root, []string{"--audit"}, "sh", "-c", script)
	if audit.code != 0 {
		t.Fatalf("--audit exit code %d, want 0\n%s", audit.code, audit.stderr)
	}
	if len(audit.rep.Violations) != 2 || audit.rep.Mode != "audit" {
		t.Errorf("--audit report: mode %q, %d violations", audit.rep.Mode, len(audit.rep.Violations))
	}
}

// Every kind of write, once outside the allowlist and once inside it: the
// outside ones are caught with their operation, the inside ones are not.
func TestEveryOperationAndItsAllowedTwin(t *testing.T) {
	root, outside := project(t)
	tests := filepath.Join(root, "tests")
	for _, f := range []string{"tests/a", "c", "tests/c2", "u.txt", "tests/u.txt", "t.txt", "tests/t.txt", "tests/real.txt", "old.txt", "tests/old.txt"} {
		writeFile(t, filepath.Join(root, f), "data\n")
	}
	writeFile(t, filepath.Join(outside, "target"), "precious\n")
	for _, d := range []string{"gone", "tests/gone"} {
		os.Mkdir(filepath.Join(root, d), 0o755)
	}
	must(t, os.Symlink(filepath.Join(outside, "target"), filepath.Join(tests, "out-link")))
	must(t, os.Symlink(filepath.Join(tests, "real.txt"), filepath.Join(tests, "in-link")))

	creat, creatReported := creatOp(t)
	ops := [][]string{
		{"openat", root, "dirfd.txt"}, {"openat", tests, "dirfd.txt"},
		{"write", "tests/../dotdot.txt"}, {"write", "tests/sub/../dotdot.txt"},
		{"append", "tests/out-link"}, {"append", "tests/in-link"},
		{"rename", "tests/a", "b"}, {"rename", "c", "tests/c"}, {"rename", "tests/c2", "tests/c3"},
		{"unlink", "u.txt"}, {"unlink", "tests/u.txt"},
		{"mkdir", "newdir"}, {"mkdir", "tests/newdir"},
		{"rmdir", "gone"}, {"rmdir", "tests/gone"},
		{"truncate", "t.txt"}, {"truncate", "tests/t.txt"},
		{creat, "created.txt"}, {creat, "tests/created.txt"},
		{"symlink", "/etc/hostname", "sym"}, {"symlink", "/etc/hostname", "tests/sym"},
		{"link", "old.txt", "hard"}, {"link", "tests/old.txt", "tests/hard"},
		{"mknod", "fifo"}, {"mknod", "tests/fifo"},
		{"read", "old.txt"},
	}
	var argv []string
	for i, op := range ops {
		if i > 0 {
			argv = append(argv, ",")
		}
		argv = append(argv, op...)
	}
	res := ww(t, root, nil, append([]string{opBin}, argv...)...)
	if res.code != 86 {
		t.Fatalf("exit code %d, want 86\n%s", res.code, res.stderr)
	}
	p := func(s string) string { return filepath.Join(root, s) }
	want := []key{
		{creatReported, p("created.txt"), ""},
		{"link", p("hard"), "new"},
		{"mkdir", p("newdir"), ""},
		{"mknod", p("fifo"), ""},
		{"open", filepath.Join(outside, "target"), ""},
		{"open", p("dirfd.txt"), ""},
		{"open", p("dotdot.txt"), ""},
		{"rename", p("b"), "new"},
		{"rename", p("c"), "old"},
		{"rmdir", p("gone"), ""},
		{"symlink", p("sym"), "new"},
		{"truncate", p("t.txt"), ""},
		{"unlink", p("u.txt"), ""},
	}
	slices.SortFunc(want, func(a, b key) int { return strings.Compare(a.String(), b.String()) })
	if got := keys(res.rep); !slices.Equal(got, want) {
		t.Fatalf("violations:\n got %v\nwant %v\n%s", got, want, res.stderr)
	}
	if v := violation(res.rep, "open", filepath.Join(outside, "target")); v.RequestedPath != "tests/out-link" {
		t.Errorf("symlink write: requested path %q, want tests/out-link", v.RequestedPath)
	}
	if v := violation(res.rep, "open", p("dirfd.txt")); v.RequestedPath != "dirfd.txt" {
		t.Errorf("dirfd write: requested path %q", v.RequestedPath)
	}
}

// Writes from a thread other than the main one, and after chdir.
func TestThreadAndChdirWrites(t *testing.T) {
	root, _ := project(t)
	res := ww(t, root, nil, opBin, "thread-write", "thread.txt", ",", "chdir", "tests/sub", ",", "write", "../../cd.txt")
	want := []key{{"open", filepath.Join(root, "cd.txt"), ""}, {"open", filepath.Join(root, "thread.txt"), ""}}
	if got := keys(res.rep); !slices.Equal(got, want) {
		t.Fatalf("violations:\n got %v\nwant %v\n%s", got, want, res.stderr)
	}
}

// A daemon that double-forks and calls setsid is still followed, and its
// late write is caught within the grace period.
func TestDaemonIsFollowed(t *testing.T) {
	root, _ := project(t)
	script := `(setsid sh -c "sleep 0.5; echo late > $PWD/daemon.txt" &) ; exit 0`
	res := ww(t, root, nil, "sh", "-c", script)
	want := []key{{"open", filepath.Join(root, "daemon.txt"), ""}}
	if got := keys(res.rep); !slices.Equal(got, want) {
		t.Fatalf("violations:\n got %v\nwant %v\n%s", got, want, res.stderr)
	}
	if len(res.rep.Survivors) != 0 {
		t.Errorf("survivors: %+v", res.rep.Survivors)
	}

	// One that outlives the grace period is reported as a survivor and
	// killed with --kill-survivors.
	res = ww(t, root, []string{"--grace", "200ms", "--kill-survivors"}, "sh", "-c", `(setsid sleep 30 &); exit 0`)
	if len(res.rep.Survivors) != 1 || res.rep.Survivors[0].Comm != "sleep" || !res.rep.SurvivorsKilled {
		t.Fatalf("survivors: %+v\n%s", res.rep.Survivors, res.stderr)
	}
	pid := res.rep.Survivors[0].PID
	time.Sleep(100 * time.Millisecond)
	if running(pid) {
		t.Errorf("survivor %d still running after --kill-survivors", pid)
	}
}

// A process outside the tree writing at the same time produces nothing.
func TestProcessOutsideTreeIsIgnored(t *testing.T) {
	root, outside := project(t)
	busy := exec.Command(opBin, "spin-write", outside, "3")
	must(t, busy.Start())
	defer busy.Wait()
	time.Sleep(100 * time.Millisecond)

	res := ww(t, root, nil, opBin, "write", "tests/ok.txt")
	if res.code != 0 || len(res.rep.Violations) != 0 {
		t.Fatalf("exit %d, violations %v\n%s", res.code, keys(res.rep), res.stderr)
	}
	if res.rep.Events != 1 {
		t.Errorf("write events %d, want exactly the tree's 1", res.rep.Events)
	}
	if busy.ProcessState != nil {
		t.Fatal("the busy writer ended before writewatch ran")
	}
	if !exists(filepath.Join(outside, "busy.txt")) {
		t.Fatal("the busy writer wrote nothing")
	}
}

// A broken config stops writewatch before COMMAND runs.
func TestMalformedConfigStopsBeforeCommand(t *testing.T) {
	root, _ := project(t)
	for name, cfg := range map[string]string{
		"yaml":     "allow:\n  - tests/**\n  bad: [\n",
		"key":      "allow:\n  - tests/**\nalow:\n  - x\n",
		"glob":     "allow:\n  - 'tests/[ab'\n",
		"variable": "allow:\n  - $WRITEWATCH_UNDEFINED_VAR/x\n",
	} {
		t.Run(name, func(t *testing.T) {
			writeFile(t, filepath.Join(root, ".writewatch.yaml"), cfg)
			mark := filepath.Join(root, "tests", "mark-"+name)
			res := ww(t, root, nil, "touch", mark)
			if res.code != 2 {
				t.Errorf("exit code %d, want 2\n%s", res.code, res.stderr)
			}
			if exists(mark) {
				t.Error("COMMAND ran despite the broken config")
			}
			if !strings.Contains(res.stderr, ".writewatch.yaml:") || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 {
				t.Errorf("want one line naming the file and line, got %q", res.stderr)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	root, _ := project(t)
	checkExitCodes(t, root, nil)
}

// checkExitCodes runs COMMANDs that exit in each documented way under
// writewatch with flags, and checks writewatch's exit code.
func checkExitCodes(t *testing.T, root string, flags []string) {
	t.Helper()
	for _, tc := range []struct {
		name string
		cmd  []string
		want int
	}{
		{"passthrough", []string{"sh", "-c", "exit 3"}, 3},
		{"signal", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{"not found", []string{"writewatch-no-such-command"}, 127},
		{"not executable", []string{"./.writewatch.yaml"}, 126},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := ww(t, root, flags, tc.cmd...); res.code != tc.want {
				t.Errorf("exit code %d, want %d\n%s", res.code, tc.want, res.stderr)
			}
		})
	}
}

// SIGTERM to writewatch reaches COMMAND, and the report is still written.
func TestSignalReachesCommand(t *testing.T) {
	root, _ := project(t)
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	cmd := exec.Command(wwBin, "--json", jsonPath, "--", "sh", "-c",
		`trap 'echo got > stray-signal.txt; exit 5' TERM; touch tests/ready; while :; do sleep 0.05; done`)
	cmd.Dir = root
	must(t, cmd.Start())
	for i := 0; i < 100 && !exists(filepath.Join(root, "tests/ready")); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 86 {
		t.Fatalf("exit: %v, want 86 (the trap wrote a stray file)", err)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil || !strings.Contains(string(data), "stray-signal.txt") || !strings.Contains(string(data), `"command_exit_code": 5`) {
		t.Fatalf("report after SIGTERM: %v\n%s", err, data)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// running reports whether pid exists and is not a zombie waiting for its
// parent.
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// Under sudo, COMMAND runs as the invoking user with that user's HOME.
func TestSudoRunsCommandAsInvokingUser(t *testing.T) {
	root, _ := project(t)
	must(t, os.Chmod(filepath.Dir(root), 0o755))
	cmd := exec.Command(wwBin, "--", "sh", "-c", `echo "$(id -u) $HOME"`)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("writewatch: %v", err)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "65534 ") || strings.HasSuffix(got, "/root") {
		t.Errorf("COMMAND saw %q, want uid 65534 and nobody's home", got)
	}

	cmd = exec.Command(wwBin, "--as-root", "--", "id", "-u")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SUDO_UID=65534", "SUDO_GID=65534")
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Errorf("--as-root: %q, %v", out, err)
	}
}

// A directory deeper than the kernel buffers hold is reported as a
// truncated path, never silently cut or let through; the filesystem
// witness, where it watches, reports the whole path besides. (Under an
// allowed directory the kernel still tells by inode that it is allowed.)
func TestLongPathIsMarkedTruncated(t *testing.T) {
	root, _ := project(t)
	name := strings.Repeat("d", 250)
	// 20 levels of 251 bytes: about 5000 bytes, more than the 4096 kept.
	res := ww(t, root, nil, opBin, "deep", "20", name, ",", "write", "f.txt")
	if res.code != 86 {
		t.Fatalf("exit code %d, want 86\n%s", res.code, res.stderr)
	}
	var found bool
	for _, v := range res.rep.Violations {
		if v.Op == "open" && v.RequestedPath == "f.txt" {
			found = true
			if slices.Equal(v.SeenBy, []string{report.SeenByFilesystem}) {
				if whole := root + strings.Repeat("/"+name, 20) + "/f.txt"; v.Truncated || v.Path != whole {
					t.Errorf("deep write seen on disk: truncated=%v path=%q, want %q", v.Truncated, v.Path, whole)
				}
				continue
			}
			if !v.Truncated || !strings.HasSuffix(v.Path, name+"/f.txt") {
				t.Errorf("deep write: truncated=%v path=%q", v.Truncated, v.Path)
			}
		}
	}
	if !found || res.rep.TruncatedPaths == 0 {
		t.Errorf("deep write not reported (truncated_paths=%d): %v", res.rep.TruncatedPaths, keys(res.rep))
	}
}

// Allowed writes are decided in the kernel, and a deny rule inside an
// allowed directory still wins, whether the file exists or not.
func TestDenyInsideAllowedDirectoryWins(t *testing.T) {
	root, _ := project(t)
	must(t, os.MkdirAll(filepath.Join(root, "tests/golden"), 0o755))
	writeFile(t, filepath.Join(root, "tests/keep.txt"), "keep\n")
	writeFile(t, filepath.Join(root, ".writewatch.yaml"),
		"allow:\n  - tests/**\ndeny:\n  - tests/golden\n  - tests/keep.txt\n  - tests/later/**\n  - tests/*.lock\n")
	res := ww(t, root, nil, opBin,
		"openat", filepath.Join(root, "tests"), "keep.txt", ",",
		"write", "tests/golden/a.txt", ",",
		"mkdir", "tests/later", ",",
		"write", "tests/later/b.txt", ",",
		"write", "tests/x.lock", ",",
		"write", "tests/fine.txt", ",",
		"openat", filepath.Join(root, "tests"), "fine2.txt")
	p := func(s string) string { return filepath.Join(root, s) }
	want := []key{
		{"mkdir", p("tests/later"), ""},
		{"open", p("tests/golden/a.txt"), ""},
		{"open", p("tests/keep.txt"), ""},
		{"open", p("tests/later/b.txt"), ""},
		{"open", p("tests/x.lock"), ""},
	}
	if got := keys(res.rep); !slices.Equal(got, want) {
		t.Fatalf("violations:\n got %v\nwant %v\n%s", got, want, res.stderr)
	}
	for _, v := range res.rep.Violations {
		if v.DeniedBy == "" {
			t.Errorf("%s: denied_by is empty", v.Path)
		}
	}
}

// With no deny rule in the way, allowed writes never leave the kernel.
func TestAllowedWritesStayInKernel(t *testing.T) {
	root, _ := project(t)
	res := ww(t, root, nil, opBin, "write", "tests/a.txt", ",", "openat", filepath.Join(root, "tests"), "b.txt",
		",", "unlink", "tests/a.txt", ",", "write", "/tmp/writewatch-it-kernel.txt", ",", "unlink", "/tmp/writewatch-it-kernel.txt")
	if res.code != 0 || len(res.rep.Violations) != 0 {
		t.Fatalf("exit %d, violations %v\n%s", res.code, keys(res.rep), res.stderr)
	}
	// The writes by absolute path to files that exist are judged in the
	// kernel: the opens (by the file opened). The unlink of an absolute
	// path is judged in user space.
	if res.rep.Events != 5 || res.rep.AllowedInKernel < 3 {
		t.Errorf("events %d, allowed in kernel %d: want 5 and at least 3", res.rep.Events, res.rep.AllowedInKernel)
	}
}

// Inside a container's PID namespace, processes are still followed by
// the kernel's own ids, and reported with the pids the namespace shows.
func TestInsidePIDNamespace(t *testing.T) {
	root, _ := project(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("unshare (util-linux) is needed for this test")
	}
	res := wwWrapped(t, []string{"unshare", "--pid", "--fork", "--mount-proc"}, root, nil, nil, nil,
		"sh", "-c", `echo x > stray.txt; (echo y > child.txt); echo $$`)
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
	}
	shPID := strings.TrimSpace(res.stdout)
	var seen int
	for _, v := range res.rep.Violations {
		switch filepath.Base(v.Path) {
		case "stray.txt":
			seen++
			if fmt.Sprint(v.PID) != shPID || v.PPID != 1 {
				t.Errorf("stray.txt by pid %d (parent %d); the shell is %s in its namespace, writewatch 1", v.PID, v.PPID, shPID)
			}
		case "child.txt":
			seen++
			if fmt.Sprint(v.PPID) != shPID {
				t.Errorf("child.txt by pid %d, parent %d; want parent %s", v.PID, v.PPID, shPID)
			}
		}
	}
	if seen != 2 {
		t.Errorf("violations %+v, want stray.txt and child.txt", res.rep.Violations)
	}
}

// Past --max-violations, writes to further paths are counted, not listed,
// and still fail the run.
func TestMaxViolations(t *testing.T) {
	root, _ := project(t)
	res := ww(t, root, []string{"--max-violations", "3"}, opBin, "write", "a", ",", "write", "b", ",", "write", "c", ",", "write", "d", ",", "write", "e", ",", "write", "a")
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
	}
	if len(res.rep.Violations) != 3 || res.rep.UnlistedViolations != 2 {
		t.Errorf("listed %d, unlisted %d: want 3 and 2", len(res.rep.Violations), res.rep.UnlistedViolations)
	}
	if !strings.Contains(res.stderr, "2 more writes") {
		t.Errorf("summary does not mention the unlisted writes:\n%s", res.stderr)
	}
}

// The Go distribution's own tests pass under writewatch: the hooks in a
// test binary must never change what it does (a uprobe on the wrong spot
// once made the os package's tests fault).
func TestStandardLibraryTestsStillPass(t *testing.T) {
	root, _ := project(t)
	res := ww(t, root, []string{"--audit"}, "go", "test", "-count=1", "-run", "TestRemove|TestMkdir|TestOpen|TestReadDir", "os", "io/fs", "path/filepath")
	if res.code != 0 {
		t.Fatalf("go test under writewatch: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
}

// chmod, utimes and setxattr follow a symlink in their last component:
// through a link inside the allowlist to a file outside it, they are
// violations on that file, by relative path and by plain name in the
// allowed directory, and so are chmods of /proc/self/fd/N and /dev/stdin
// open on it. lchown acts on the link itself, which is allowed; a pipe
// (/dev/stdin) is no file. touch -h of a link to a directory outside,
// with a slash after it, acts on that directory: the kernel follows a
// link for the slash after it.
func TestMetadataThroughSymlink(t *testing.T) {
	root, outside := project(t)
	target := filepath.Join(outside, "precious.txt")
	writeFile(t, target, "x\n")
	must(t, os.Symlink(target, filepath.Join(root, "tests/link")))
	must(t, os.Symlink(outside, filepath.Join(root, "tests/dirlink")))
	script := fmt.Sprintf(`%[1]s chmod tests/link
(exec 3<%[2]s; chmod 600 /proc/self/fd/3)
chmod 600 /dev/stdin < %[2]s
echo | chmod 600 /dev/stdin
touch -h tests/dirlink/
cd tests && %[1]s utimes link , setxattr link , chown link`, opBin, target)
	res := ww(t, root, []string{"--audit"}, "sh", "-c", script)
	if res.code != 0 {
		t.Fatalf("exit code %d\n%s", res.code, res.stderr)
	}
	// The chmods through /proc/self/fd/3 and /dev/stdin join the group of
	// the first.
	for _, want := range []struct {
		op, requested string
		count         int
	}{
		{"chmod", "tests/link", 3}, {"utimes", "link", 1}, {"setxattr", "link", 1},
	} {
		v := violation(res.rep, want.op, target)
		if v == nil || v.RequestedPath != want.requested || v.Count != want.count {
			t.Errorf("%s through the link: %+v, want %d on %s, first requested as %s\n%s",
				want.op, v, want.count, target, want.requested, res.stderr)
		}
	}
	if v := violation(res.rep, "utimes", outside); v == nil || v.RequestedPath != "tests/dirlink/" {
		t.Errorf("touch -h of a link to a directory, with a slash after it: %+v, want utimes on %s\n%s", v, outside, res.stderr)
	}
	for _, v := range res.rep.Violations {
		if v.Op == "chown" || v.Path != target && v.Path != outside {
			t.Errorf("reported, but only the link itself or a pipe was changed: %+v", v)
		}
	}
}
