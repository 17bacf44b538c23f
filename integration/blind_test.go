package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/report"
)

// blindScript stops writewatch (COMMAND's parent), floods the ring buffer
// with allowed writes, writes config.toml in the project's root by a name
// longer than any record of the flood (so that its record cannot fit in
// what the flood left), and lets writewatch go on.
func blindScript(tmp string) string {
	longConfig := strings.Repeat("./", 1990) + "config.toml"
	return fmt.Sprintf(`
kill -STOP $PPID
%[1]s spin-churn %[2]s 1 & %[1]s spin-churn %[2]s 1 &
wait
%[1]s write %[3]s
kill -CONT $PPID`, opBin, tmp, longConfig)
}

// A run that could not see everything does not pass: COMMAND stops
// writewatch, floods the ring buffer, writes outside the allowlist and
// lets writewatch go on. The write's record is lost; the run exits with
// 88 (or 86, had the write been seen), says why in the report, the
// JUnit report and the metrics, and passes only with --accept-incomplete.
func TestBlindRunDoesNotPass(t *testing.T) {
	root, _ := project(t)
	tmp := t.TempDir()
	out := t.TempDir()
	junit, prom := filepath.Join(out, "ww.xml"), filepath.Join(out, "ww.prom")
	res := ww(t, root, []string{"--ringbuf-mib", "1", "--junit", junit, "--metrics-textfile", prom}, "sh", "-c", blindScript(tmp))
	if !exists(filepath.Join(root, "config.toml")) {
		t.Fatal("the script did not write config.toml")
	}
	if res.rep.LostWrites == 0 {
		t.Fatalf("no write record was lost (lost %v): the test proves nothing\n%s", res.rep.Lost, res.stderr)
	}
	seen := violationAt(res.rep, filepath.Join(root, "config.toml")) != nil
	switch {
	case seen && res.code != 86:
		t.Errorf("config.toml's write was seen: exit code %d, want 86\n%s", res.code, res.stderr)
	case !seen && res.code != 88:
		t.Errorf("exit code %d, want 88: the run lost %d write records and cannot pass\n%s", res.code, res.rep.LostWrites, res.stderr)
	}
	if len(res.rep.Incomplete) == 0 || !strings.Contains(res.rep.Incomplete[0], "write record") {
		t.Errorf("the report's incomplete %q does not say write records were lost", res.rep.Incomplete)
	}
	if res.rep.ExitCode != res.code {
		t.Errorf("the report's exit_code %d, writewatch exited with %d", res.rep.ExitCode, res.code)
	}
	// Each reason is a "not seen" line, whether a violation was seen or not.
	if !strings.Contains(res.stderr, "writewatch: not seen: ") || !strings.Contains(res.stderr, "may have gone unseen") {
		t.Errorf("the summary does not say writewatch could not see everything:\n%s", res.stderr)
	}
	if data, err := os.ReadFile(junit); err != nil || !strings.Contains(string(data), `<testcase name="writewatch: incomplete"`) {
		t.Errorf("the JUnit report has no failing testcase for the blind run (%v):\n%s", err, data)
	}
	if data, err := os.ReadFile(prom); err != nil || !strings.Contains(string(data), "\nwritewatch_incomplete 1\n") {
		t.Errorf("the metrics textfile has no writewatch_incomplete 1 (%v)", err)
	}

	// --accept-incomplete gives COMMAND's own code back, unless a
	// violation was seen.
	os.Remove(filepath.Join(root, "config.toml"))
	res = ww(t, root, []string{"--ringbuf-mib", "1", "--accept-incomplete"}, "sh", "-c", blindScript(tmp)+"\nexit 3")
	if res.rep.LostWrites == 0 {
		t.Fatalf("no write record was lost: the test proves nothing\n%s", res.stderr)
	}
	want := 3
	if violationAt(res.rep, filepath.Join(root, "config.toml")) != nil {
		want = 86
	}
	if res.code != want {
		t.Errorf("--accept-incomplete: exit code %d, want %d\n%s", res.code, want, res.stderr)
	}
	if len(res.rep.Incomplete) == 0 {
		t.Error("--accept-incomplete: the report no longer says the run was incomplete")
	}
}

// Under --audit, a blind run keeps COMMAND's code, and the report says
// it was blind.
func TestBlindRunAudit(t *testing.T) {
	root, _ := project(t)
	res := ww(t, root, []string{"--ringbuf-mib", "1", "--audit"}, "sh", "-c", blindScript(t.TempDir()))
	if res.rep.LostWrites == 0 {
		t.Fatalf("no write record was lost: the test proves nothing\n%s", res.stderr)
	}
	if res.code != 0 {
		t.Errorf("--audit: exit code %d, want COMMAND's 0\n%s", res.code, res.stderr)
	}
	if len(res.rep.Incomplete) == 0 || res.rep.Mode != report.ModeAudit {
		t.Errorf("--audit: incomplete %q in mode %q, want a reason", res.rep.Incomplete, res.rep.Mode)
	}
}

// A process of the tree that attaches with ptrace to a process outside
// the tree can make that process write, and its writes make no records:
// the run does not pass (88), under --audit it says so. Attaching to a
// process of the tree is no such case.
func TestTracerOfAProcessOutsideTheTree(t *testing.T) {
	root, _ := project(t)
	incompleteOnOutsideProcess(t, root, outsideProcess(t), "ptrace-attach", "ptrace")

	res := ww(t, root, nil, "sh", "-c", `sleep 60 & `+opBin+` ptrace-attach $!; s=$?; kill $!; exit $s`)
	if res.code != 0 || len(res.rep.Incomplete) != 0 {
		t.Errorf("attaching to a process of the tree: exit code %d, incomplete %q; want 0 and none\n%s", res.code, res.rep.Incomplete, res.stderr)
	}
}

// outsideProcess starts a process outside the tree, stopped at the
// test's end, and returns its pid. It runs without CAP_SYS_PTRACE, as
// COMMAND does: a root process that holds more capabilities than
// COMMAND is out of its reach (the kernel refuses it ptrace and
// process_vm_writev, and /proc/PID/mem).
func outsideProcess(t *testing.T) string {
	t.Helper()
	outside := exec.Command("sleep", "60")
	if err := startWithoutPtrace(outside); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		outside.Process.Kill()
		outside.Wait()
	})
	return strconv.Itoa(outside.Process.Pid)
}

// incompleteOnOutsideProcess runs the wwop op on the process pid, outside
// the tree, as writewatch's default mode and under --audit: the run must
// not pass (88; 0 under --audit), and its one incomplete reason must name
// what the op did (name).
func incompleteOnOutsideProcess(t *testing.T, root, pid, op, name string) {
	t.Helper()
	for _, mode := range []struct {
		flags []string
		code  int
	}{{nil, 88}, {[]string{"--audit"}, 0}} {
		res := ww(t, root, mode.flags, opBin, op, pid)
		if res.code != mode.code {
			t.Errorf("%v: exit code %d, want %d: %s on a process outside the tree\n%s", mode.flags, res.code, mode.code, op, res.stderr)
		}
		if len(res.rep.Incomplete) != 1 || !strings.Contains(res.rep.Incomplete[0], name) {
			t.Errorf("%v: the report's incomplete %q does not name %s", mode.flags, res.rep.Incomplete, name)
		}
	}
}

// A process of the tree that writes into the memory of a process outside
// the tree (process_vm_writev) can make that process write anything, as
// a ptrace tracer can: the run does not pass (88), under --audit it says
// so. Writing into a process of the tree is no such case, also when the
// tree names it in a PID namespace of its own, and an open of
// /proc/PID/mem for writing is a write to that file, reported.
func TestMemoryWriterOfAProcessOutsideTheTree(t *testing.T) {
	root, _ := project(t)
	pid := outsideProcess(t)
	incompleteOnOutsideProcess(t, root, pid, "vm-writev", "process_vm_writev")

	for name, script := range map[string]string{
		"a child":                    `sleep 60 & ` + opBin + ` vm-writev $!; s=$?; kill $!; exit $s`,
		"its parent":                 opBin + ` vm-writev $$`,
		"a child in a PID namespace": `unshare --pid --fork --mount-proc sh -c 'sleep 60 & ` + opBin + ` vm-writev $!; s=$?; kill $!; exit $s'`,
	} {
		res := ww(t, root, nil, "sh", "-c", script)
		if res.code != 0 || len(res.rep.Incomplete) != 0 {
			t.Errorf("writing into %s of the tree: exit code %d, incomplete %q; want 0 and none\n%s", name, res.code, res.rep.Incomplete, res.stderr)
		}
	}

	mem := "/proc/" + pid + "/mem"
	res := ww(t, root, nil, "sh", "-c", "exec 3<>"+mem)
	if res.code != 86 || violationAt(res.rep, mem) == nil {
		t.Errorf("opening %s for writing: exit code %d, violations %v; want 86 and it reported\n%s", mem, res.code, keys(res.rep), res.stderr)
	}
}
