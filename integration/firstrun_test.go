package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/report"
)

// The first run of a normal user, each way the README offers: a copy of
// writewatch given CAP_BPF and CAP_PERFMON with setcap, the same
// capabilities as ambient ones, and sudo. A real user account is made
// for it (and removed after).

// wwVersion is the version the writewatch under test reports, as in its
// metrics' version label.
func wwVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(wwBin, "--version").Output()
	if err != nil {
		t.Fatalf("writewatch --version: %v", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	f := strings.Fields(first)
	if len(f) != 2 || f[0] != "writewatch" {
		t.Fatalf("writewatch --version printed %q", out)
	}
	return f[1]
}

const firstRunUser = "wwfirstrun"

// normalUser is a user account for the test: it exists already, or is
// made with useradd (and a home) and removed when the test ends.
type normalUser struct {
	name       string
	uid, gid   int
	home       string
	uidS, gidS string
}

func makeUser(t *testing.T) normalUser {
	t.Helper()
	requireRoot(t)
	if _, err := user.Lookup(firstRunUser); err != nil {
		useradd, lerr := exec.LookPath("useradd")
		if lerr != nil {
			t.Skip("useradd is not installed")
		}
		if out, err := exec.Command(useradd, "--create-home", "--shell", "/bin/bash", firstRunUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd: %v\n%s", err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("userdel", "--remove", firstRunUser).CombinedOutput(); err != nil {
				t.Errorf("userdel: %v\n%s", err, out)
			}
		})
	}
	u, err := user.Lookup(firstRunUser)
	if err != nil {
		t.Fatal(err)
	}
	nu := normalUser{name: u.Username, home: u.HomeDir, uidS: u.Uid, gidS: u.Gid}
	nu.uid, _ = strconv.Atoi(u.Uid)
	nu.gid, _ = strconv.Atoi(u.Gid)
	if nu.uid == 0 {
		t.Fatalf("%s is root", firstRunUser)
	}
	return nu
}

// chownAll gives dir and everything in it to u.
func (u normalUser) chownAll(t *testing.T, dir string) {
	t.Helper()
	must(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.uid, u.gid)
	}))
}

// env is a plain environment of u's, as a login would give.
func (u normalUser) env(extra ...string) []string {
	return append([]string{"HOME=" + u.home, "USER=" + u.name, "LOGNAME=" + u.name,
		"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "GOTOOLCHAIN=local"}, extra...)
}

// userProject is a project owned by u, outside the temp dir, that allows
// tests/**, and a directory for the binaries u runs. Both are readable
// and searchable by u.
func userProject(t *testing.T, u normalUser) (root, bin string) {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "writewatch-it-firstrun-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	base, err = filepath.EvalSymlinks(base)
	must(t, err)
	root, bin = filepath.Join(base, "proj"), filepath.Join(base, "bin")
	must(t, os.MkdirAll(filepath.Join(root, "tests"), 0o755))
	must(t, os.MkdirAll(bin, 0o755))
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), "allow:\n  - tests/**\n")
	u.chownAll(t, root)
	return root, bin
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	must(t, err)
	must(t, os.WriteFile(to, data, 0o755))
}

// runAs runs argv as u in dir, and returns its exit code and stderr.
// setpriv takes u's uids, gids and groups, then a shell execs argv, the
// way a login would: setpriv keeps capabilities across its change of
// user, which a program exec'd right from it could gain none from, and
// the kernel then leaves it dumpable.
func runAs(t *testing.T, u normalUser, dir string, env, setprivFlags []string, argv ...string) (int, string) {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv is not installed (package util-linux)")
	}
	args := append([]string{"--reuid=" + u.uidS, "--regid=" + u.gidS, "--init-groups"}, setprivFlags...)
	args = append(args, "--", "/bin/sh", "-c", `exec "$@"`, "sh")
	cmd := exec.Command(setpriv, append(args, argv...)...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	} else if err != nil {
		t.Fatalf("run %v as %s: %v", argv, u.name, err)
	}
	return 0, stderr.String()
}

// readReport reads a JSON report.
func readReport(t *testing.T, path string) report.Report {
	t.Helper()
	var rep report.Report
	data, err := os.ReadFile(path)
	must(t, err)
	must(t, json.Unmarshal(data, &rep))
	return rep
}

// noCapabilities fails unless a /proc/PID/status shows every capability
// set but the bounding one empty.
func noCapabilities(t *testing.T, status string) {
	t.Helper()
	found := 0
	for line := range strings.SplitSeq(status, "\n") {
		key, val, _ := strings.Cut(line, ":")
		switch key {
		case "CapInh", "CapPrm", "CapEff", "CapAmb":
			found++
			if v := strings.TrimSpace(val); v != "0000000000000000" {
				t.Errorf("COMMAND's %s = %s, want none", key, v)
			}
		}
	}
	if found != 4 {
		t.Errorf("COMMAND's status lacks capability lines:\n%s", status)
	}
}

// The shell command each way runs: it keeps its own status and writes a
// stray file.
const capsCommand = `cat /proc/self/status > tests/status; echo x > stray.txt`

// A normal user runs a copy of writewatch that setcap gave CAP_BPF and
// CAP_PERFMON: it traces, and COMMAND runs without any capability.
func TestSetcapCopyTracesAsNormalUser(t *testing.T) {
	u := makeUser(t)
	setcap, err := exec.LookPath("setcap")
	if err != nil {
		t.Skip("setcap is not installed (package libcap2-bin)")
	}
	root, bin := userProject(t, u)
	ww := filepath.Join(bin, "writewatch")
	copyFile(t, wwBin, ww)
	if out, err := exec.Command(setcap, "cap_bpf,cap_perfmon+ep", ww).CombinedOutput(); err != nil {
		t.Fatalf("setcap: %v\n%s", err, out)
	}
	jsonPath := filepath.Join(root, "tests", "report.json")
	code, stderr := runAs(t, u, root, u.env(), nil, ww, "--json", jsonPath, "--", "sh", "-c", capsCommand)
	if code != 86 {
		t.Fatalf("exit code %d, want 86\n%s", code, stderr)
	}
	rep := readReport(t, jsonPath)
	if got := keys(rep); len(got) != 1 || got[0] != (key{"open", filepath.Join(root, "stray.txt"), ""}) {
		t.Errorf("violations %v, want the one stray file", got)
	}
	status, err := os.ReadFile(filepath.Join(root, "tests", "status"))
	must(t, err)
	noCapabilities(t, string(status))
	if !strings.Contains(string(status), "Uid:\t"+u.uidS+"\t") {
		t.Errorf("COMMAND did not run as %s:\n%s", u.name, status)
	}

	// A Go test binary: its uprobes attach as the user too, and tell
	// which test wrote. (Built here as root, with a warm build cache: a
	// new user's first `go test` compiles for minutes.)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	mod := filepath.Join(root, "tests", "mod")
	must(t, os.MkdirAll(mod, 0o755))
	writeFile(t, filepath.Join(mod, "go.mod"), "module example.com/firstrun\n\ngo 1.22\n")
	writeFile(t, filepath.Join(mod, "stray_test.go"), `package firstrun

import (
	"os"
	"testing"
)

func TestLeavesStrayFile(t *testing.T) {
	if err := os.WriteFile("../../stray-from-test.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
`)
	testBin := filepath.Join(bin, "firstrun.test")
	build := exec.Command(goBin, "test", "-c", "-o", testBin, ".")
	build.Dir = mod
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	u.chownAll(t, root)
	code, stderr = runAs(t, u, mod, u.env(), nil, ww, "--json", jsonPath, "--", testBin, "-test.v")
	if code != 86 {
		t.Fatalf("the test binary: exit code %d, want 86\n%s", code, stderr)
	}
	rep = readReport(t, jsonPath)
	v := violation(rep, "open", filepath.Join(root, "stray-from-test.txt"))
	if v == nil || v.Test != "TestLeavesStrayFile" {
		t.Errorf("the test binary: the stray write %+v, want it made by TestLeavesStrayFile\n%s", v, stderr)
	}
}

// The same capabilities as ambient ones (as systemd's
// AmbientCapabilities= or setpriv give them) are not passed on to
// COMMAND either.
func TestAmbientCapabilitiesStayWithWritewatch(t *testing.T) {
	u := makeUser(t)
	root, bin := userProject(t, u)
	ww := filepath.Join(bin, "writewatch")
	copyFile(t, wwBin, ww) // no file capabilities
	jsonPath := filepath.Join(root, "tests", "report.json")
	code, stderr := runAs(t, u, root, u.env(),
		[]string{"--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon"},
		ww, "--json", jsonPath, "--", "sh", "-c", capsCommand)
	if code != 86 {
		t.Fatalf("exit code %d, want 86\n%s", code, stderr)
	}
	status, err := os.ReadFile(filepath.Join(root, "tests", "status"))
	must(t, err)
	noCapabilities(t, string(status))

	// --enforce starts COMMAND through writewatch's trampoline: the same.
	must(t, os.Remove(filepath.Join(root, "tests", "status")))
	code, stderr = runAs(t, u, root, u.env(),
		[]string{"--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon"},
		ww, "--enforce", "--enforce-with", "landlock", "--", "sh", "-c", capsCommand)
	if code != 86 && code != 87 {
		t.Fatalf("--enforce: exit code %d, want 86 (or 87 where Landlock is missing)\n%s", code, stderr)
	}
	if code == 86 {
		status, err := os.ReadFile(filepath.Join(root, "tests", "status"))
		must(t, err)
		noCapabilities(t, string(status))
	}
}

// Under sudo, PATH is sudo's secure_path. COMMAND is looked up, and runs,
// with the invoking user's PATH: here their login shell's, which has a
// directory (~/bin, from ~/.profile) that root's PATH lacks.
func TestSudoFindsCommandInUsersLoginPath(t *testing.T) {
	u := makeUser(t)
	root, _ := userProject(t, u)
	userBin := filepath.Join(u.home, "bin-firstrun")
	must(t, os.MkdirAll(userBin, 0o755))
	tool := filepath.Join(userBin, "firstrun-tool")
	writeFile(t, tool, "#!/bin/sh\necho \"$(id -u) $PATH\"\n")
	must(t, os.Chmod(tool, 0o755))
	profile := filepath.Join(u.home, ".profile")
	old, _ := os.ReadFile(profile)
	t.Cleanup(func() { os.WriteFile(profile, old, 0o644) })
	writeFile(t, profile, string(old)+"\nPATH=\"$PATH:$HOME/bin-firstrun\"\n")
	u.chownAll(t, u.home)

	sudoEnv := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"SUDO_UID=" + u.uidS, "SUDO_GID=" + u.gidS, "SUDO_USER=" + u.name, "HOME=/root"}
	cmd := exec.Command(wwBin, "--quiet", "--", "firstrun-tool")
	cmd.Dir, cmd.Env = root, sudoEnv
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("writewatch firstrun-tool: %v\n%s", err, stderr.String())
	}
	got := strings.Fields(string(out))
	if len(got) != 2 || got[0] != u.uidS || !strings.Contains(got[1], userBin) {
		t.Errorf("COMMAND printed %q, want uid %s and a PATH with %s", out, u.uidS, userBin)
	}

	// A command in no PATH of the user's: 127, saying where it looked.
	cmd = exec.Command(wwBin, "--quiet", "--", "firstrun-no-such-tool")
	cmd.Dir, cmd.Env = root, sudoEnv
	stderr.Reset()
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 127 {
		t.Errorf("a missing command: %v, want exit code 127", err)
	}
	if want := fmt.Sprintf("command not found in %s's PATH, from %s's login shell", u.name, u.name); !strings.Contains(stderr.String(), want) {
		t.Errorf("a missing command: stderr %q, want %q", stderr.String(), want)
	}

	// The report's file name forgotten (writewatch --json firstrun-tool
	// touch ...): the value is a command in the user's PATH, though not
	// in sudo's; refused, and nothing runs.
	cmd = exec.Command(wwBin, "--json", "firstrun-tool", "touch", "tests/ran")
	cmd.Dir, cmd.Env = root, sudoEnv
	stderr.Reset()
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("--json firstrun-tool touch tests/ran: %v, want exit code 2\n%s", err, stderr.String())
	}
	if want := `--json takes a file name; got "firstrun-tool", which is a command: write --json report.json firstrun-tool touch tests/ran, or put -- before COMMAND`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if exists(filepath.Join(root, "tests", "ran")) || exists(filepath.Join(root, "firstrun-tool")) {
		t.Error("COMMAND ran, or a report was written")
	}
}

// Under sudo, the go-cache default is the invoking user's caches, also
// when go is in neither sudo's secure_path nor the user's PATH: go's
// writes to its own caches are judged like any other, so a default that
// named root's caches would fail every sudo run of go test.
func TestSudoGoCacheIsTheUsers(t *testing.T) {
	u := makeUser(t)
	root, _ := project(t)
	cmd := exec.Command(wwBin, "--print-config")
	cmd.Dir = root
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
		"SUDO_UID=" + u.uidS, "SUDO_GID=" + u.gidS, "SUDO_USER=" + u.name}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("writewatch --print-config: %v\n%s", err, out)
	}
	var caches []string
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "allow" && f[2] == "default:go-cache" {
			caches = append(caches, f[1])
		}
	}
	want := filepath.Join(u.home, ".cache", "go-build")
	if !slices.Contains(caches, want) {
		t.Errorf("the go-cache default is %q, want it to hold %s\n%s", caches, want, out)
	}
	for _, c := range caches {
		if strings.HasPrefix(c, "/root") {
			t.Errorf("the go-cache default names root's %s", c)
		}
	}
}
