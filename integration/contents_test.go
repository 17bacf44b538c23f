package integration

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/report"
	"github.com/writewatch/writewatch/tracer"
)

// The contents suite: COMMAND runs as a normal user (writewatch as root,
// as sudo starts it), and gets to a protected file's contents by a way
// its own opens do not name: a descriptor from outside the tree (given at
// the start, over a Unix socket, taken with pidfd_getfd), another path to
// the file (a bind mount in new user and mount namespaces), or after a
// program that gained privileges at exec. Each write is reported, and the
// run fails. The project, u's, allows tests/**; config.toml in its root,
// u's too, is protected.

// contentsProject is a project of u's with a protected config.toml.
func contentsProject(t *testing.T, u normalUser) (root, cfg string) {
	t.Helper()
	root, _ = userProject(t, u)
	cfg = filepath.Join(root, "config.toml")
	freshConfig(t, u, cfg)
	return root, cfg
}

// freshConfig writes cfg as it was before any run, u's.
func freshConfig(t *testing.T, u normalUser, cfg string) {
	t.Helper()
	file(t, cfg)
	must(t, os.Chown(cfg, u.uid, u.gid))
}

// contentsRun runs writewatch as root in dir with a --json report, as
// sudo would start it for u, then COMMAND as u; extra are writewatch's
// descriptors from 3 on, which COMMAND inherits.
func contentsRun(t *testing.T, u normalUser, dir string, extra []*os.File, command ...string) result {
	t.Helper()
	env := []string{"SUDO_UID=" + u.uidS, "SUDO_GID=" + u.gidS, "SUDO_USER=" + u.name}
	res := wwFiles(t, dir, env, extra, nil, command...)
	if !res.reported {
		t.Fatalf("no report (exit %d)\n%s", res.code, res.stderr)
	}
	// A witness that can watch nothing here (it says why) skips the test.
	if w := res.rep.Witness; w != nil && !w.Active && w.Unavailable != "" {
		t.Skipf("the filesystem witness is off here: %s", w.Unavailable)
	}
	return res
}

// changed fails unless COMMAND changed cfg: a run that reports nothing
// would otherwise pass for a run that wrote nothing.
func changed(t *testing.T, cfg string, res result) {
	t.Helper()
	if data, err := os.ReadFile(cfg); err != nil || string(data) == "precious\n" {
		t.Errorf("config.toml not changed (%v): the run proves nothing\n%s", err, res.stderr)
	}
}

// neverPassed fails unless the run failed with cfg reported (86), or
// said it could not see everything (88); run names the try, or is "".
func neverPassed(t *testing.T, res result, cfg, run string) {
	t.Helper()
	switch {
	case res.code == 86 && violationAt(res.rep, cfg) != nil:
	case res.code == 88:
	default:
		t.Errorf("%sexit code %d, violations %v: want 86 with config.toml reported, or 88\n%s", run, res.code, keys(res.rep), res.stderr)
	}
}

// onDemand fails unless the witness watched contents on demand, from
// the moment since says (tracer.Why's words), or never when since is "".
func onDemand(t *testing.T, res result, since ...string) {
	t.Helper()
	if w := res.rep.Witness; w == nil || w.Contents != report.ContentsOnDemand || !slices.Contains(since, w.ContentsSince) {
		t.Errorf("witness %+v: want contents %q since one of %q", w, report.ContentsOnDemand, since)
	}
}

// userDir makes dir, u's.
func userDir(t *testing.T, u normalUser, dir string) {
	t.Helper()
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.Chown(dir, u.uid, u.gid))
}

// requireUserNS skips the test unless u may make a user namespace.
func requireUserNS(t *testing.T, u normalUser, dir string) {
	t.Helper()
	if code, stderr := runAs(t, u, dir, u.env(), nil, "unshare", "-Ur", "true"); code != 0 {
		t.Skipf("%s may not make a user namespace here: unshare -Ur true: exit %d: %s", u.name, code, strings.TrimSpace(stderr))
	}
}

// A descriptor of config.toml opened for appending outside the tree and
// inherited by COMMAND (writewatch's descriptor 3) is written: the
// filesystem sees it, and the run fails.
func TestContentsInheritedDescriptor(t *testing.T) {
	u := makeUser(t)
	root, cfg := contentsProject(t, u)
	res := contentsRun(t, u, root, []*os.File{openAppend(t, cfg)}, opBin, "writefd", "3")
	changed(t, cfg, res)
	seenOnDisk(t, wantViolation(t, res, true, "", cfg))
	onDemand(t, res, "")
}

// A descriptor of config.toml open for reading and writing, sent by a
// process outside the tree (this one) over a Unix socket with
// SCM_RIGHTS, is written by COMMAND: the run fails.
func TestContentsDescriptorOverUnixSocket(t *testing.T) {
	u := makeUser(t)
	root, cfg := contentsProject(t, u)
	sock := filepath.Join(filepath.Dir(root), "ww.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	must(t, os.Chown(sock, u.uid, u.gid))
	f := openReadWrite(t, cfg)
	sent := make(chan error, 1)
	go func() {
		c, err := ln.AcceptUnix()
		if err != nil {
			sent <- err
			return
		}
		defer c.Close()
		_, _, err = c.WriteMsgUnix([]byte{0}, unix.UnixRights(int(f.Fd())), nil)
		sent <- err
	}()
	res := contentsRun(t, u, root, nil, opBin, "recvfd-write", sock)
	ln.Close()
	if err := <-sent; err != nil {
		t.Fatalf("sending the descriptor: %v\n%s", err, res.stderr)
	}
	changed(t, cfg, res)
	wantViolation(t, res, true, "", cfg)
	onDemand(t, res, tracer.WhyUnixSocket.String())
}

// A process outside the tree, u's, holds config.toml open for reading
// and writing as its descriptor 3; COMMAND takes a copy of it
// (pidfd_getfd) and writes: the run fails. The file taken is judged as
// an open for writing, from the kernel's record of the call: another
// thread could write through it before the process stops.
func TestContentsDescriptorTakenWithPidfdGetfd(t *testing.T) {
	u := makeUser(t)
	root, cfg := contentsProject(t, u)
	holder := exec.Command("/bin/sh", "-c", "exec 3<>config.toml; echo ready; exec sleep 60")
	holder.Dir = root
	holder.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	out, err := holder.StdoutPipe()
	must(t, err)
	must(t, holder.Start())
	t.Cleanup(func() {
		holder.Process.Kill()
		holder.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the outside process did not open config.toml: %q, %v", line, err)
	}
	res := contentsRun(t, u, root, nil, opBin, "getfd-write", strconv.Itoa(holder.Process.Pid), "3")
	if res.code != 86 && strings.Contains(res.stderr, "pidfd_getfd: operation not permitted") {
		t.Skipf("the kernel refused pidfd_getfd on a process of the same user (ptrace rules): %s", res.stderr)
	}
	changed(t, cfg, res)
	if v := wantViolation(t, res, true, "open", cfg); v != nil && !slices.Contains(v.SeenBy, report.SeenBySyscall) {
		t.Errorf("open of config.toml seen by %q, want the syscall record among them", v.SeenBy)
	}
	onDemand(t, res, tracer.WhyPidfdGetfd.String())
}

// In new user and mount namespaces (unshare -Urm), the project bound on
// tests/mnt and config.toml appended to through it: the report names the
// file that changed, the project's config.toml, and the run fails.
func TestContentsBindMountInUserNamespace(t *testing.T) {
	u := makeUser(t)
	root, cfg := contentsProject(t, u)
	requireUserNS(t, u, root)
	userDir(t, u, filepath.Join(root, "tests", "mnt"))
	res := contentsRun(t, u, root, nil, "unshare", "-Urm", "sh", "-c", "mount --bind . tests/mnt && echo x >> tests/mnt/config.toml")
	changed(t, cfg, res)
	wantViolation(t, res, true, "", cfg)
	onDemand(t, res, tracer.WhyNamespace.String())
}

// A child cloned straight into new user and mount namespaces whose first
// system calls bind the project on tests/mnt and append to config.toml
// through it, with no pause after the clone: the run never passes. It
// fails with the write reported (86), or says it could not see
// everything (88). Five times, for the timing.
func TestContentsCloneIntoNamespacesThenWrite(t *testing.T) {
	u := makeUser(t)
	root, cfg := contentsProject(t, u)
	requireUserNS(t, u, root)
	userDir(t, u, filepath.Join(root, "tests", "mnt"))
	for i := range 5 {
		freshConfig(t, u, cfg)
		res := contentsRun(t, u, root, nil, opBin, "clone-ns-bind", ".", "tests/mnt", "config.toml")
		changed(t, cfg, res)
		// The clone's exit asks for contents; the child, which runs at
		// once, may ask first, at the entry of its mount.
		onDemand(t, res, tracer.WhyNamespace.String(), tracer.WhyMount.String())
		neverPassed(t, res, cfg, fmt.Sprintf("run %d: ", i))
	}
}

// setuidPrograms are setuid-root programs found on Debian, each with
// arguments that make it do nothing.
var setuidPrograms = [][]string{
	{"/usr/bin/mount", "--version"},
	{"/usr/bin/umount", "--version"},
	{"/bin/su", "--version"},
}

// COMMAND runs a program that gains privileges at exec (setuid root),
// harmlessly, then appends to config.toml: the run fails.
func TestContentsAfterSetuidProgram(t *testing.T) {
	u := makeUser(t)
	var prog []string
	for _, p := range setuidPrograms {
		var st syscall.Stat_t
		if syscall.Stat(p[0], &st) == nil && st.Mode&syscall.S_ISUID != 0 && st.Uid == 0 {
			prog = p
			break
		}
	}
	if prog == nil {
		t.Skip("no setuid-root program here")
	}
	root, cfg := contentsProject(t, u)
	res := contentsRun(t, u, root, nil, "sh", "-c", strings.Join(prog, " ")+" >/dev/null && exec "+opBin+" append config.toml")
	changed(t, cfg, res)
	wantViolation(t, res, true, "open", cfg)
	onDemand(t, res, tracer.WhyPrivileged.String())
}

// A plain run as u: config.toml removed is an unlink the filesystem sees
// too, and the run fails; writes under tests/ only are no violations,
// and the run passes. COMMAND runs as u, not as root.
func TestContentsPlainRun(t *testing.T) {
	u := makeUser(t)
	root, cfg := contentsProject(t, u)
	t.Run("unlink", func(t *testing.T) {
		freshConfig(t, u, cfg)
		res := contentsRun(t, u, root, nil, "sh", "-c", "rm config.toml")
		if exists(cfg) {
			t.Errorf("config.toml not removed: the run proves nothing\n%s", res.stderr)
		}
		seenOnDisk(t, wantViolation(t, res, true, "unlink", cfg))
	})
	t.Run("writes under tests only", func(t *testing.T) {
		out := filepath.Join(root, "tests", "out.txt")
		res := contentsRun(t, u, root, nil, "sh", "-c", "id -u > tests/out.txt && "+opBin+" append tests/out.txt")
		if data, _ := os.ReadFile(out); string(data) != u.uidS+"\nx\n" {
			t.Errorf("tests/out.txt holds %q, want COMMAND's uid (%s's, %s) and wwop's line\n%s", data, u.name, u.uidS, res.stderr)
		}
		if res.code != 0 || len(res.rep.Violations) != 0 || len(res.rep.Incomplete) != 0 {
			t.Errorf("exit code %d, violations %v, incomplete %q: want 0 and none\n%s", res.code, keys(res.rep), res.rep.Incomplete, res.stderr)
		}
		onDemand(t, res, "")
	})
	// As root too, contents wait until a call asks for them.
	t.Run("as root", func(t *testing.T) {
		res := verdictRun(t, root, nil, nil, "true")
		onDemand(t, res, "")
	})
}

// rootMountProject is a project of root's with a protected config.toml
// and an empty tests/mnt to mount on, unmounted at the end of the test.
func rootMountProject(t *testing.T) (root, cfg, mnt string) {
	t.Helper()
	root, _ = verdictProject(t)
	cfg, mnt = root+"/config.toml", root+"/tests/mnt"
	must(t, os.Mkdir(mnt, 0o755))
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return root, cfg, mnt
}

// COMMAND as root bind-mounts the project on tests/mnt in its own mount
// namespace, writewatch's, which every process of the tree shares, and
// appends to config.toml through it: the mount asks for contents, and
// the write is reported with the path the kernel changed.
func TestContentsRootBindMount(t *testing.T) {
	root, cfg, mnt := rootMountProject(t)
	res := verdictRun(t, root, nil, nil, opBin, "bind-write", root, mnt, "config.toml")
	changed(t, cfg, res)
	seenOnDisk(t, wantViolation(t, res, true, "", cfg))
	onDemand(t, res, tracer.WhyMount.String())
}

// While COMMAND as root bind-mounts the project on tests/mnt, another
// process of the tree, which is not paused, opens tests/mnt/config.toml
// for appending as soon as the mount is there, before the witness can
// watch contents: the run never passes. It fails with the write
// reported (86), or says it could not see everything (88). Five times,
// for the timing.
func TestContentsRootMountRace(t *testing.T) {
	root, cfg, mnt := rootMountProject(t)
	for i := range 5 {
		file(t, cfg)
		res := verdictRun(t, root, nil, nil, opBin, "bind-race", root, mnt, "config.toml")
		changed(t, cfg, res)
		onDemand(t, res, tracer.WhyMount.String())
		neverPassed(t, res, cfg, fmt.Sprintf("run %d: ", i))
	}
}

// A bind mount of the project on a directory under the temp dir (which
// the defaults allow) made before the run, in writewatch's own mount
// namespace: COMMAND as root appends to config.toml through it. The
// mount is there at the start, so contents are watched from then on, and
// the write is reported with the path the kernel changed.
func TestContentsRootBindMountBeforeTheRun(t *testing.T) {
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	alias := t.TempDir()
	must(t, unix.Mount(root, alias, "", unix.MS_BIND, ""))
	t.Cleanup(func() { unix.Unmount(alias, unix.MNT_DETACH) })
	res := verdictRun(t, root, nil, nil, opBin, "append", alias+"/config.toml")
	changed(t, cfg, res)
	seenOnDisk(t, wantViolation(t, res, true, "", cfg))
	onDemand(t, res, "a bind mount at "+alias)
}

// A process outside the tree, in a mount namespace of its own, has the
// project bound on a directory under the temp dir; COMMAND as root
// appends to config.toml through /proc/PID/root of that process. The
// path it opened, walked in that namespace, seems allowed: the run never
// passes. It fails with the write reported (86), or says it could not
// see everything (88). The process runs without CAP_SYS_PTRACE, as
// COMMAND does: one with more capabilities than COMMAND's is out of its
// reach (/proc/PID/root is refused).
func TestContentsRootFileOfAnotherNamespace(t *testing.T) {
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	alias := t.TempDir()
	other := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", `mount --bind "$1" "$2" && echo ready && exec sleep 60`, "sh", root, alias)
	out, err := other.StdoutPipe()
	must(t, err)
	if err := startWithoutPtrace(other); err != nil {
		t.Skipf("unshare: %v", err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Skipf("no bind mount in a new mount namespace here: %q %v", line, err)
	}
	path := "/proc/" + strconv.Itoa(other.Process.Pid) + "/root" + alias + "/config.toml"
	res := verdictRun(t, root, nil, nil, opBin, "append", path)
	changed(t, cfg, res)
	neverPassed(t, res, cfg, "")
}

// startWithoutPtrace starts cmd without CAP_SYS_PTRACE in its bounding
// set, as writewatch starts COMMAND: from a thread of its own that drops
// it, and ends with its goroutine.
func startWithoutPtrace(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil {
			errc <- err
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
