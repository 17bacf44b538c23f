package integration

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/writewatch/writewatch/report"
	"golang.org/x/sys/unix"
)

// enforceTier is the tier the enforcement tests force: landlock on this
// kind of machine, lsm in the VM harness (make vmtest).
func enforceTier() string {
	if tier := os.Getenv("WRITEWATCH_IT_TIER"); tier != "" {
		return tier
	}
	return "landlock"
}

func hashFile(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("protected file: %v", err)
	}
	return sha256.Sum256(data)
}

// statuses reads the "NAME CODE" lines a script appended to file.
func statuses(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("status file: %v", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, code, _ := strings.Cut(line, " ")
		m[name] = code
	}
	return m
}

// protectedProject is a project with a precious file in its root.
func protectedProject(t *testing.T) (root, keep string, before [32]byte) {
	root, _ = project(t)
	keep = filepath.Join(root, "keep.txt")
	writeFile(t, keep, "precious: every byte of this must survive\n")
	return root, keep, hashFile(t, keep)
}

// The four checks of enforcement, each by its own process, in one run:
// an O_TRUNC open, rm and mv of a protected file, and a file created in
// the project root. None lands, each writer is killed, the report says
// blocked+killed, and a write to the test's temp dir in the same run works.
func TestEnforceStopsWritesBeforeTheyLand(t *testing.T) {
	tier := enforceTier()
	root, keep, before := protectedProject(t)
	tmp := t.TempDir()
	status := filepath.Join(tmp, "status")
	creat, creatReported := creatOp(t)
	script := fmt.Sprintf(`
%[1]s write %[2]s/ok.txt; echo "tmp $?" >> %[3]s
%[1]s trunc keep.txt; echo "trunc $?" >> %[3]s
rm keep.txt; echo "rm $?" >> %[3]s
mv keep.txt tests/moved.txt; echo "mv $?" >> %[3]s
%[1]s %[4]s new.txt; echo "creat $?" >> %[3]s
exit 0`, opBin, tmp, status, creat)
	res := ww(t, root, []string{"--enforce", "--enforce-with", tier}, "sh", "-c", script)

	if res.code != 86 {
		t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
	}
	if got := hashFile(t, keep); got != before {
		t.Errorf("keep.txt changed under --enforce-with %s", tier)
	}
	if exists(filepath.Join(root, "new.txt")) {
		t.Error("new.txt was created in the project root")
	}
	if !exists(filepath.Join(tmp, "ok.txt")) {
		t.Error("the allowed write to the temp dir failed")
	}
	st := statuses(t, status)
	for _, name := range []string{"trunc", "rm", "mv", "creat"} {
		if st[name] != "137" {
			t.Errorf("%s: exit status %q, want 137 (killed)", name, st[name])
		}
	}
	if st["tmp"] != "0" {
		t.Errorf("allowed write: exit status %q, want 0", st["tmp"])
	}
	if res.rep.Mode != report.ModeEnforce || res.rep.Enforcement != tier {
		t.Errorf("report: mode %q, enforcement %q; want enforce, %s", res.rep.Mode, res.rep.Enforcement, tier)
	}
	for _, want := range []key{{creatReported, filepath.Join(root, "new.txt"), ""}, {"open", keep, ""}, {"unlink", keep, ""}, {"rename", keep, "old"}} {
		v := violation(res.rep, want.op, want.path)
		switch {
		case v == nil:
			t.Errorf("no violation %s; got %v\n%s", want, keys(res.rep), res.stderr)
		case v.Action != report.ActionBlockedKilled:
			t.Errorf("%s: action %q, want blocked+killed", want, v.Action)
		case v.Errno != "EACCES" && v.Errno != "EPERM":
			t.Errorf("%s: errno %q, want EACCES or EPERM", want, v.Errno)
		}
	}
	if !strings.Contains(res.stderr, "enforcing with "+tier) {
		t.Errorf("start-up message does not name the tier:\n%s", res.stderr)
	}
}

// --enforce=block refuses the write but lets the writer live.
func TestEnforceBlockOnly(t *testing.T) {
	tier := enforceTier()
	root, keep, before := protectedProject(t)
	tmp := t.TempDir()
	status := filepath.Join(tmp, "status")
	script := fmt.Sprintf(`%[1]s trunc keep.txt; echo "trunc $?" >> %[2]s; %[1]s write tests/after.txt; echo "after $?" >> %[2]s`, opBin, status)
	res := ww(t, root, []string{"--enforce=block", "--enforce-with", tier}, "sh", "-c", script)
	if res.code != 86 {
		t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
	}
	if hashFile(t, keep) != before {
		t.Error("keep.txt changed")
	}
	st := statuses(t, status)
	if st["trunc"] != "1" || st["after"] != "0" {
		t.Errorf("statuses %v: want the refused write to fail (1), not be killed, and the next to work", st)
	}
	if v := violation(res.rep, "open", keep); v == nil || v.Action != report.ActionBlocked {
		t.Errorf("violation %+v, want action blocked", v)
	}
}

// Under sudo, COMMAND runs as the invoking user and is still enforced on.
func TestEnforceAsInvokingUser(t *testing.T) {
	tier := enforceTier()
	root, keep, before := protectedProject(t)
	must(t, os.Chmod(filepath.Dir(root), 0o755))
	must(t, os.Chmod(root, 0o777))
	must(t, os.Chmod(filepath.Join(root, "tests"), 0o777))
	must(t, os.Chmod(keep, 0o666)) // only enforcement stands in the way
	cmd := exec.Command(wwBin, "--enforce", "--enforce-with", tier, "--", "sh", "-c",
		fmt.Sprintf(`id -u; %[1]s trunc keep.txt; %[1]s write tests/mine.txt`, opBin))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 86 {
		t.Errorf("exit %v, want 86\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "65534" {
		t.Errorf("COMMAND ran as %q, want 65534", got)
	}
	if hashFile(t, keep) != before {
		t.Error("keep.txt changed")
	}
	st, err := os.Stat(filepath.Join(root, "tests/mine.txt"))
	if err != nil {
		t.Fatalf("the allowed write as the user failed: %v\n%s", err, stderr.String())
	}
	if uid := st.Sys().(*syscallStat).Uid; uid != 65534 {
		t.Errorf("tests/mine.txt belongs to %d, want 65534", uid)
	}
}

func TestEnforceExitCodes(t *testing.T) {
	root, _ := project(t)
	checkExitCodes(t, root, []string{"--enforce", "--enforce-with", enforceTier()})
}

// stopper stops and continues writewatch for COMMAND, from outside the
// tree: under --enforce the tree cannot signal writewatch itself. The
// script asks by making files in dir: stop (after which writewatch is
// stopped) and cont.
func stopper(t *testing.T, dir string) (stop, cont string) {
	t.Helper()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	wait := func(name string) bool {
		for {
			select {
			case <-done:
				return false
			case <-time.After(5 * time.Millisecond):
			}
			if exists(filepath.Join(dir, name)) {
				return true
			}
		}
	}
	// The pid, once the shell has written its whole line: the file exists,
	// empty, before echo writes to it, and kill(0) would stop this test's
	// own process group.
	pidIn := func(name string) int {
		for {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil && pid > 0 && strings.HasSuffix(string(data), "\n") {
				return pid
			}
			select {
			case <-done:
				return 0
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	go func() {
		pid := pidIn("stop")
		if pid == 0 {
			return
		}
		syscall.Kill(pid, syscall.SIGSTOP)
		os.WriteFile(filepath.Join(dir, "stopped"), nil, 0o644)
		if wait("cont") {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	stop = fmt.Sprintf(`echo $PPID > %[1]s/stop; while [ ! -e %[1]s/stopped ]; do sleep 0.01; done`, dir)
	return stop, fmt.Sprintf(`: > %s/cont`, dir)
}

// A flood of allowed writes that overflows the ring buffer does not let
// a disallowed write through: the decision never waits for user space.
// writewatch (COMMAND's parent) is stopped for the flood and the refused
// write, so nothing reads the ring meanwhile: it must overflow, and only
// the kernel stands between the writer and the file. The refused write's
// record is lost too, and still fails the run: the kernel counted it.
func TestEnforceRingBufferFlood(t *testing.T) {
	tier := enforceTier()
	root, keep, before := protectedProject(t)
	tmp := t.TempDir()
	status := filepath.Join(tmp, "status")
	stop, cont := stopper(t, t.TempDir())
	// keep.txt by a name longer than any record of the flood, so that its
	// record cannot fit in what the flood left of the ring: only the
	// kernel's count of refusals can tell.
	longKeep := strings.Repeat("./", 1990) + "keep.txt"
	script := fmt.Sprintf(`
%[5]s
%[1]s spin-churn %[2]s 1 & %[1]s spin-churn %[2]s 1 &
wait
%[1]s trunc %[4]s; echo "trunc $?" >> %[3]s
%[6]s`, opBin, tmp, status, longKeep, stop, cont)
	res := ww(t, root, []string{"--enforce", "--enforce-with", tier, "--ringbuf-mib", "1"}, "sh", "-c", script)
	if hashFile(t, keep) != before {
		t.Fatal("keep.txt changed while the ring buffer was full")
	}
	if st := statuses(t, status); st["trunc"] != "137" {
		t.Errorf("the writer's exit status %q, want 137 (killed)", st["trunc"])
	}
	// The refused write fails the run even when its record was lost:
	// the kernel counted it.
	if res.code != 86 {
		t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
	}
	if res.rep.LostRefusals != 1 {
		t.Errorf("lost refusals %d, want 1: the refused write's record cannot fit\n%s", res.rep.LostRefusals, res.stderr)
	}
	if res.rep.Lost[report.LostRingbufFull] == 0 {
		t.Errorf("the ring buffer did not overflow (lost %v, %d events): the test proves nothing\n%s",
			res.rep.Lost, res.rep.Events, res.stderr)
	}
	// And the run says it could not see everything: 86 wins over 88.
	if len(res.rep.Incomplete) == 0 {
		t.Errorf("%d write records were lost, but the report's incomplete is empty", res.rep.LostWrites)
	}
}

// The kill tier says plainly, at start and in the report, that the first
// offending call may still take effect; it kills the writer; allowed
// writes by absolute path and by plain name keep working.
func TestEnforceKillTier(t *testing.T) {
	root, keep, _ := protectedProject(t)
	tmp := t.TempDir()
	status := filepath.Join(tmp, "status")
	script := fmt.Sprintf(`
%[1]s write %[2]s/ok.txt; echo "tmp $?" >> %[3]s
(cd tests && %[1]s write ok.txt); echo "tests $?" >> %[3]s
%[1]s write tests/sub/rel.txt; echo "rel $?" >> %[3]s
%[1]s openat2-root tests /inroot.txt; echo "inroot $?" >> %[3]s
%[1]s write-unfaulted tests/unfaulted.txt; echo "unfaulted $?" >> %[3]s
%[1]s mkdir-unfaulted tests/unfaulted.d; echo "unfaulted-mkdir $?" >> %[3]s
%[1]s write-unfaulted unfaulted.txt; echo "unfaulted-out $?" >> %[3]s
%[1]s mkdir-unfaulted unfaulted.d; echo "unfaulted-mkdir-out $?" >> %[3]s
%[1]s write-unfaulted missing/unfaulted.txt; echo "unfaulted-failed $?" >> %[3]s
%[1]s trunc keep.txt; echo "trunc $?" >> %[3]s`, opBin, tmp, status)
	res := ww(t, root, []string{"--enforce", "--enforce-with", "kill"}, "sh", "-c", script)
	if res.code != 86 {
		t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "may take effect") || !strings.Contains(res.rep.EnforcementNote, "may take effect") {
		t.Errorf("the kill tier must say what it cannot prevent; note %q\n%s", res.rep.EnforcementNote, res.stderr)
	}
	st := statuses(t, status)
	if st["tmp"] != "0" || st["tests"] != "0" || st["rel"] != "0" || st["inroot"] != "0" || st["trunc"] != "137" {
		t.Errorf("statuses %v: want the allowed writes to work and the writer of keep.txt killed", st)
	}
	if v := violation(res.rep, "open", keep); v == nil || v.Action != report.ActionKilled {
		t.Errorf("violation %+v, want action killed", v)
	}
	// A name the kernel could not read at the call's entry (its page not
	// yet faulted in, as bash's /dev/tty at its start) is judged at the
	// exit: allowed, the writer lives; outside the allowlist, it is
	// killed and reported; a call that failed changed nothing and is
	// not judged (wwop exits 1).
	if st["unfaulted"] != "0" || st["unfaulted-mkdir"] != "0" || st["unfaulted-out"] != "137" ||
		st["unfaulted-mkdir-out"] != "137" || st["unfaulted-failed"] != "1" {
		t.Errorf("statuses %v: want the allowed unfaulted writes to work, the others killed, the failed one not", st)
	}
	for _, p := range []string{"unfaulted.txt", "unfaulted.d"} {
		if v := violationAt(res.rep, filepath.Join(root, p)); v == nil || v.Action != report.ActionKilled {
			t.Errorf("violation at %s %+v, want action killed", p, v)
		}
	}
}

// metaState is what a metadata change could alter.
type metaState struct {
	mode         uint32
	uid, gid     uint32
	mtime, atime int64
	// Whether wwop's attributes are there: user.writewatch (setxattr),
	// trusted.writewatch (its io_uring requests).
	xattrErr, trustedErr error
}

func metaOf(t *testing.T, path string) metaState {
	t.Helper()
	var st syscallStat
	must(t, syscall.Stat(path, &st))
	_, err := unix.Getxattr(path, "user.writewatch", make([]byte, 16))
	_, terr := unix.Getxattr(path, "trusted.writewatch", make([]byte, 16))
	return metaState{st.Mode, st.Uid, st.Gid, st.Mtim.Nano(), st.Atim.Nano(), err, terr}
}

// Neither Landlock nor the LSM programs refuse metadata changes; the
// metadata guard does, under every tier: chmod, fchmod, chown, utimes
// and setxattr of a protected file (also through a symlink in an allowed
// directory) fail and change nothing, their writers are killed (or, with
// --enforce=block, see EPERM), and allowed changes keep working.
func TestEnforceMetadataRefused(t *testing.T) {
	type run struct{ tier, mode string }
	runs := []run{{enforceTier(), "kill"}, {enforceTier(), "block"}}
	if os.Getenv("WRITEWATCH_IT_TIER") == "" {
		runs = append(runs, run{"kill", "kill"}) // the VM harness checks its own tier
	}
	for _, r := range runs {
		tier, mode := r.tier, r.mode
		t.Run(tier+"/"+mode, func(t *testing.T) {
			root, keep, _ := protectedProject(t)
			writeFile(t, filepath.Join(root, "tests/sub/mine.txt"), "x\n")
			must(t, os.Symlink("../keep.txt", filepath.Join(root, "tests/link")))
			tmp := t.TempDir()
			status := filepath.Join(tmp, "status")
			writeFile(t, filepath.Join(tmp, "t.txt"), "x\n")
			before := metaOf(t, keep)
			script := fmt.Sprintf(`
chmod 600 %[1]s/t.txt; echo "tmp $?" >> %[2]s
chmod 600 tests/sub/mine.txt; echo "rel $?" >> %[2]s
for op in chmod fchmod chown chown-fd utimes setxattr; do %[3]s $op keep.txt; echo "$op $?" >> %[2]s; done
%[3]s chmod tests/link; echo "link $?" >> %[2]s`, tmp, status, opBin)
			flag := "--enforce"
			if mode == "block" {
				flag = "--enforce=block"
			}
			res := ww(t, root, []string{flag, "--enforce-with", tier}, "sh", "-c", script)
			if res.code != 86 {
				t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
			}
			refused, action := "137", report.ActionBlockedKilled
			if mode == "block" {
				refused, action = "1", report.ActionBlocked
			}
			st := statuses(t, status)
			if st["tmp"] != "0" || st["rel"] != "0" {
				t.Errorf("statuses %v: want the allowed changes to work\n%s", st, res.stderr)
			}
			for _, op := range []string{"chmod", "fchmod", "chown", "chown-fd", "utimes", "setxattr", "link"} {
				if st[op] != refused {
					t.Errorf("%s of keep.txt: status %q, want %s\n%s", op, st[op], refused, res.stderr)
				}
			}
			if after := metaOf(t, keep); after != before {
				t.Errorf("keep.txt's metadata changed: %+v, was %+v", after, before)
			}
			for _, op := range []string{"chmod", "chown", "utimes", "setxattr"} {
				if v := violation(res.rep, op, keep); v == nil || v.Action != action {
					t.Errorf("%s violation %+v, want %s of keep.txt, action %s", op, v, op, action)
				}
			}
			// Through the link, the file judged and reported is keep.txt.
			if v := violation(res.rep, "chmod", keep); v == nil || v.Count < 3 {
				t.Errorf("chmod violation %+v, want keep.txt's by chmod, fchmod and through tests/link", v)
			}
			// By its descriptor and an empty name (AT_EMPTY_PATH) too.
			if v := violation(res.rep, "chown", keep); v == nil || v.Count < 2 {
				t.Errorf("chown violation %+v, want keep.txt's by chown and by fchownat on its descriptor", v)
			}
			if res.rep.LostRefusals != 0 {
				t.Errorf("lost refusals %d, but every record arrived\n%s", res.rep.LostRefusals, res.stderr)
			}
		})
	}
}

// io_uring SETXATTR and FSETXATTR requests, and a POSIX ACL that would
// make the file 0777, under --enforce: the lsm tier refuses them when the
// kernel makes the change, and the file keeps its mode and attributes;
// the other tiers have no hook that could, and kill the submitter (the
// change may land). An allowed file's attribute is set either way.
func TestEnforceUringXattr(t *testing.T) {
	tier := enforceTier()
	for _, c := range []struct{ name, op, arg string }{
		{"SETXATTR", "uring-setxattr", ""},
		{"FSETXATTR", "uring-fsetxattr", ""},
		{"POSIX ACL", "uring-setxattr", "acl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, keep, _ := protectedProject(t)
			writeFile(t, keep, "precious: every byte of this must survive\n")
			mine := filepath.Join(root, "tests/sub/mine.txt")
			writeFile(t, mine, "x\n")
			before := metaOf(t, keep)
			status := filepath.Join(t.TempDir(), "status")
			script := fmt.Sprintf(`%[1]s %[2]s tests/sub/mine.txt %[3]s; echo "mine $?" >> %[4]s; %[1]s %[2]s keep.txt %[3]s`,
				opBin, c.op, c.arg, status)
			res := ww(t, root, []string{"--enforce", "--enforce-with", tier}, "sh", "-c", script)
			if tier == "landlock" {
				// Landlock cannot refuse io_uring's extended-attribute
				// requests: COMMAND gets no io_uring at all.
				if st := statuses(t, status); st["mine"] == "0" {
					t.Errorf("io_uring worked under the landlock tier: %v\n%s", st, res.stderr)
				}
				if after := metaOf(t, keep); after != before {
					t.Errorf("keep.txt's metadata changed: %+v, was %+v", after, before)
				}
				return
			}
			if res.code != 86 {
				t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
			}
			if st := statuses(t, status); st["mine"] != "0" {
				t.Errorf("the allowed change failed: %v\n%s", st, res.stderr)
			}
			v := violation(res.rep, "setxattr", keep)
			if v == nil {
				t.Errorf("no setxattr of keep.txt reported: %v\n%s", keys(res.rep), res.stderr)
			}
			if violation(res.rep, "setxattr", mine) != nil {
				t.Errorf("the allowed change was reported: %v", keys(res.rep))
			}
			if tier != "lsm" {
				if v != nil && v.Action != report.ActionKilled {
					t.Errorf("action %q, want killed", v.Action)
				}
				return
			}
			if after := metaOf(t, keep); after != before {
				t.Errorf("keep.txt's metadata changed: %+v, was %+v", after, before)
			}
		})
	}
}

// inodeFlags are a file's inode flags (FS_IOC_GETFLAGS).
func inodeFlags(t *testing.T, path string) int {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Skipf("inode flags: %v", err)
	}
	return flags
}

// chattr +i (FS_IOC_SETFLAGS), FS_IOC_FSSETXATTR and file_setattr (by
// name, and by descriptor with AT_EMPTY_PATH) of a protected file under
// --enforce: the metadata guard refuses them, under every tier, and
// the file keeps its flags; its writer is killed; an allowed file's flags
// change.
func TestEnforceInodeFlags(t *testing.T) {
	tier := enforceTier()
	for _, c := range []struct{ name, op, arg string }{
		{"chattr +i", "setflags", "i"},
		{"FS_IOC_FSSETXATTR", "fssetxattr", ""},
		{"file_setattr", "filesetattr", ""},
		{"file_setattr by descriptor", "filesetattr", "fd"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.op == "filesetattr" {
				requireFileSetattrEnforced(t, tier)
			}
			root, keep, _ := protectedProject(t)
			mine := filepath.Join(root, "tests/sub/mine.txt")
			writeFile(t, mine, "x\n")
			// Whatever happens, the files can be removed afterwards.
			t.Cleanup(func() { exec.Command(opBin, "setflags", keep, "-", ",", "setflags", mine, "-").Run() })
			before := inodeFlags(t, keep)
			status := filepath.Join(t.TempDir(), "status")
			script := fmt.Sprintf(`%[1]s %[2]s tests/sub/mine.txt %[3]s; echo "mine $?" >> %[4]s; %[1]s %[2]s keep.txt %[3]s; echo "keep $?" >> %[4]s`,
				opBin, c.op, c.arg, status)
			res := ww(t, root, []string{"--enforce", "--enforce-with", tier}, "sh", "-c", script)
			if res.code != 86 {
				t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
			}
			st := statuses(t, status)
			if st["mine"] != "0" || st["keep"] != "137" {
				t.Errorf("statuses %v: want the allowed change to work (0) and the other's writer killed (137)\n%s", st, res.stderr)
			}
			if after := inodeFlags(t, keep); after != before {
				t.Errorf("keep.txt's flags changed: %#x, were %#x", after, before)
			}
			if inodeFlags(t, mine) == before {
				t.Errorf("tests/sub/mine.txt's flags did not change")
			}
			if v := violation(res.rep, "setflags", keep); v == nil || v.Action != report.ActionBlockedKilled {
				t.Errorf("setflags violation %+v, want keep.txt's, blocked+killed\n%s", v, res.stderr)
			}
			if violation(res.rep, "setflags", mine) != nil {
				t.Errorf("the allowed change was reported: %v", keys(res.rep))
			}
		})
	}
}

// requireFileSetattrEnforced skips the test where the kernel has no
// file_setattr (before Linux 6.17), once it has checked that --enforce
// leaves the call's ENOSYS alone there: the metadata guard answers no
// call the kernel would not run (with EPERM).
func requireFileSetattrEnforced(t *testing.T, tier string) {
	t.Helper()
	// An invalid flag: EINVAL where the kernel has the call, which then
	// changes nothing.
	if _, _, errno := unix.Syscall6(unix.SYS_FILE_SETATTR, ^uintptr(0), 0, 0, 0, ^uintptr(0), 0); errno != unix.ENOSYS {
		return
	}
	root, _, _ := protectedProject(t)
	res := ww(t, root, []string{"--enforce", "--enforce-with", tier}, opBin, "filesetattr", "keep.txt")
	if want := "file_setattr: " + unix.ENOSYS.Error(); !strings.Contains(res.stderr, want) {
		t.Errorf("under --enforce, want the caller to get %q\n%s", want, res.stderr)
	}
	t.Skip("this kernel has no file_setattr (Linux 6.17); under --enforce its callers still get ENOSYS")
}

// The metadata guard resolves a path as the kernel does for the caller:
// /dev/stdin and /dev/fd/N are the caller's descriptors (not
// writewatch's, whose stdin is /dev/null, which is allowed), and a
// symlink is followed before the ".." after it. chmod 777 of the
// protected file each way is refused and changes nothing.
func TestEnforceMetadataResolvedForTheCaller(t *testing.T) {
	tier := enforceTier()
	for _, c := range []struct{ name, needs, script string }{
		{"/dev/stdin", "/dev/stdin", "chmod 777 /dev/stdin < keep.txt"},
		{"/dev/fd/N", "/dev/fd", "exec 3<keep.txt; chmod 777 /dev/fd/3"},
		{"/proc/self/fd/N", "", "exec 3<keep.txt; chmod 777 /proc/self/fd/3"},
		{"symlink then ..", "", "ln -s . tests/x && chmod 777 tests/x/../keep.txt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.needs != "" && !exists(c.needs) {
				t.Skipf("no %s here", c.needs)
			}
			root, keep, _ := protectedProject(t)
			before := metaOf(t, keep)
			res := ww(t, root, []string{"--enforce", "--enforce-with", tier}, "sh", "-c", c.script)
			if res.code != 86 {
				t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
			}
			if after := metaOf(t, keep); after != before {
				t.Errorf("keep.txt's metadata changed: %+v, was %+v", after, before)
			}
			if v := violation(res.rep, "chmod", keep); v == nil || v.Action != report.ActionBlockedKilled {
				t.Errorf("chmod violation %+v, want keep.txt's, blocked+killed: %v\n%s", v, keys(res.rep), res.stderr)
			}
		})
	}
}

// A caller in a chroot names its files from its own root: chroot /var,
// then chmod /tmp/…/proj/keep.txt changes /var/tmp/…/proj/keep.txt,
// although /tmp/…/keep.txt, read from writewatch's root, is allowed.
// The metadata guard resolves the path from the caller's root and
// refuses it; by absolute and by relative path.
func TestEnforceMetadataInChroot(t *testing.T) {
	tier := enforceTier()
	root, keep, _ := protectedProject(t)
	inRoot, ok := strings.CutPrefix(keep, "/var/")
	if !ok {
		t.Skipf("the project %s is not under /var", root)
	}
	for _, name := range []string{"/" + inRoot, inRoot} {
		t.Run(name, func(t *testing.T) {
			before := metaOf(t, keep)
			res := ww(t, root, []string{"--enforce", "--enforce-with", tier}, opBin, "chroot", "/var", ",", "chmod", name)
			if res.code != 86 {
				t.Errorf("exit code %d, want 86\n%s", res.code, res.stderr)
			}
			if after := metaOf(t, keep); after != before {
				t.Errorf("keep.txt's metadata changed: %+v, was %+v", after, before)
			}
			if !slices.ContainsFunc(res.rep.Violations, func(v report.Violation) bool {
				return v.Op == "chmod" && v.Action == report.ActionBlockedKilled
			}) {
				t.Errorf("no chmod blocked+killed: %v\n%s", keys(res.rep), res.stderr)
			}
		})
	}
}
