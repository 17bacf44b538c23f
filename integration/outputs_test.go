package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sudoRun runs writewatch as root with args in dir, as sudo would start it
// for u (COMMAND then runs as u), and returns its exit code and stderr.
func sudoRun(t *testing.T, u normalUser, dir string, extraEnv []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(wwBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "SUDO_UID="+u.uidS, "SUDO_GID="+u.gidS, "SUDO_USER="+u.name), extraEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	} else if err != nil {
		t.Fatalf("run writewatch: %v", err)
	}
	return 0, stderr.String()
}

func owner(t *testing.T, path string) uint32 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid
}

// A test running as the sudo user plants tests/ww.json -> ../config.toml;
// the next run with --json tests/ww.json refuses the link (exit 2, one
// line) and config.toml stays as it was. A link planted during the run
// itself is replaced by the report, never followed; the report belongs
// to the user, not to root.
func TestOutputLinkPlantedByATest(t *testing.T) {
	u := makeUser(t)
	root, _ := userProject(t, u)
	config := filepath.Join(root, "config.toml")
	writeFile(t, config, "precious = true\n")
	must(t, os.Chown(config, u.uid, u.gid))

	code, stderr := sudoRun(t, u, root, nil, "--", "sh", "-c", "ln -s ../config.toml tests/ww.json")
	if code != 0 {
		t.Fatalf("planting the link: exit code %d\n%s", code, stderr)
	}
	code, stderr = sudoRun(t, u, root, nil, "--json", "tests/ww.json", "--", "true")
	if code != 2 && code != 70 {
		t.Errorf("--json through a planted link: exit code %d, want 2 or 70\n%s", code, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "tests/ww.json") {
		t.Errorf("want one line naming tests/ww.json, got:\n%s", stderr)
	}
	if data, _ := os.ReadFile(config); string(data) != "precious = true\n" {
		t.Errorf("config.toml now holds %q", data)
	}

	// Planted while the run lasts: the report replaces the link.
	code, stderr = sudoRun(t, u, root, nil, "--json", "tests/ww2.json", "--", "sh", "-c", "ln -s ../config.toml tests/ww2.json")
	if code != 0 {
		t.Errorf("a link planted during the run: exit code %d, want 0\n%s", code, stderr)
	}
	if data, _ := os.ReadFile(config); string(data) != "precious = true\n" {
		t.Errorf("config.toml now holds %q", data)
	}
	report := filepath.Join(root, "tests", "ww2.json")
	if st, err := os.Lstat(report); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("tests/ww2.json: %v %v, want the report as a regular file", st, err)
	}
	if got := owner(t, report); got != uint32(u.uid) {
		t.Errorf("the report belongs to uid %d, want %d (the sudo user)", got, u.uid)
	}
	if rep := readReport(t, report); rep.ExitCode != 0 {
		t.Errorf("the report says exit code %d", rep.ExitCode)
	}
}

// Under sudo, the outputs are opened with the sudo user's rights: a
// directory only root may write is refused before COMMAND runs, and a
// step summary that a test turned into a link to a root-only file is not
// appended to.
func TestOutputsOpenedAsTheSudoUser(t *testing.T) {
	u := makeUser(t)
	root, _ := userProject(t, u)
	rootOnly := t.TempDir() // root's, 0700
	code, stderr := sudoRun(t, u, root, nil, "--json", filepath.Join(rootOnly, "ww.json"), "--", "touch", "tests/ran")
	if code != 2 || !strings.Contains(stderr, "permission denied") {
		t.Errorf("--json in root's directory: exit code %d, want 2 and permission denied\n%s", code, stderr)
	}
	if exists(filepath.Join(root, "tests", "ran")) {
		t.Error("COMMAND ran")
	}

	secret := filepath.Join(rootOnly, "secret")
	writeFile(t, secret, "root only\n")
	must(t, os.Chmod(secret, 0o600))
	summary := filepath.Join(root, "tests", "summary.md")
	env := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary}
	code, stderr = sudoRun(t, u, root, env, "--", "sh", "-c", "ln -s "+secret+" tests/summary.md")
	if data, _ := os.ReadFile(secret); string(data) != "root only\n" {
		t.Errorf("the root-only file now holds %q", data)
	}
	if code != 0 || !strings.Contains(stderr, "GITHUB_STEP_SUMMARY") {
		t.Errorf("exit code %d, want 0 and a warning about GITHUB_STEP_SUMMARY\n%s", code, stderr)
	}

	// The summary as it should be: appended to, as the user.
	must(t, os.Remove(summary))
	code, stderr = sudoRun(t, u, root, env, "--", "true")
	if data, err := os.ReadFile(summary); code != 0 || err != nil || !strings.Contains(string(data), "### writewatch") {
		t.Errorf("exit code %d, summary %q (%v)\n%s", code, data, err, stderr)
	}
	if got := owner(t, summary); got != uint32(u.uid) {
		t.Errorf("the summary belongs to uid %d, want %d", got, u.uid)
	}
}

// A directory that COMMAND's user can write but that is not theirs (a
// sticky, world-writable one like /tmp) is refused for an output.
func TestOutputInSharedDirectoryRefused(t *testing.T) {
	u := makeUser(t)
	root, _ := userProject(t, u)
	shared := filepath.Join(filepath.Dir(root), "shared")
	must(t, os.Mkdir(shared, 0o755))
	must(t, os.Chmod(shared, 0o1777))
	code, stderr := sudoRun(t, u, root, nil, "--junit", filepath.Join(shared, "ww.xml"), "--", "true")
	want := "--junit " + filepath.Join(shared, "ww.xml") + ": " + shared + " is not yours, yet you can write it, as others can: a test could plant a file or link in its place; write it in a directory you own"
	if code != 2 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--junit in a shared directory: exit code %d, want 2 and one line saying\n%s\ngot\n%s", code, want, stderr)
	}
	// A directory in it is said to be one, not blamed on the shared one.
	sub := filepath.Join(shared, "sub")
	must(t, os.Mkdir(sub, 0o755))
	must(t, os.Chown(sub, u.uid, u.gid))
	code, stderr = sudoRun(t, u, root, nil, "--json", sub, "--", "true")
	if want := "--json " + sub + ": is a directory; name a file, such as " + filepath.Join(sub, "report.json"); code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("--json DIR: exit code %d, want 2 and %q\n%s", code, want, stderr)
	}
}

// The suite removes and makes again the directory --json and --junit
// point into (rm -rf build; mkdir -p build/reports, as make clean test
// does): the reports are written at the paths given, in the directory
// made again. A link made in the directory's place is never followed:
// with the directory opened at the start gone, the report is not
// written (70), and nothing lands where the link leads.
func TestOutputDirectoryMadeAgain(t *testing.T) {
	root, outside := project(t)
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), "allow:\n  - tests/**\n  - build/**\n")
	must(t, os.MkdirAll(filepath.Join(root, "build", "reports"), 0o755))
	jsonPath, junitPath := filepath.Join(root, "build", "reports", "ww.json"), filepath.Join(root, "build", "reports", "junit.xml")
	run := func(script string) (int, string) {
		cmd := exec.Command(wwBin, "--json", "build/reports/ww.json", "--junit", "build/reports/junit.xml", "--", "sh", "-c", script)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stderr.String()
		} else if err != nil {
			t.Fatalf("run writewatch: %v", err)
		}
		return 0, stderr.String()
	}
	code, stderr := run("rm -rf build; mkdir -p build/reports")
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, stderr)
	}
	if rep := readReport(t, jsonPath); rep.ExitCode != 0 {
		t.Errorf("the report says exit code %d", rep.ExitCode)
	}
	if data, err := os.ReadFile(junitPath); err != nil || !bytes.Contains(data, []byte("<testsuites")) {
		t.Errorf("junit.xml: %v\n%s", err, data)
	}

	must(t, os.MkdirAll(filepath.Join(outside, "reports"), 0o755))
	code, stderr = run("rm -rf build; ln -s " + outside + " build")
	if code != 70 {
		t.Errorf("a link in place of the directory: exit %d, want 70\n%s", code, stderr)
	}
	for _, name := range []string{"ww.json", "junit.xml"} {
		if exists(filepath.Join(outside, "reports", name)) {
			t.Errorf("%s followed the link made in the directory's place", name)
		}
	}
}
