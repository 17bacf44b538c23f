package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/report"
)

// The gate suite: a tree that goes around the gate itself rather than
// around one of its rules. A project allows tests/**; config.toml in its
// root is protected. Each run must fail (86), or say it could not see
// everything (88); none may pass.

// COMMAND, as root like writewatch (no sudo: a container's CI),
// overwrites config.toml, then takes writewatch over with ptrace and
// makes it call exit_group(0) before it can report. writewatch is not
// dumpable and COMMAND runs without CAP_SYS_PTRACE, so the kernel
// refuses the takeover: the run reports config.toml and fails.
func TestGateTakeoverByPtrace(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("wwop ptrace-exit rewrites a call on x86-64 only")
	}
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	res := wwFiles(t, root, nil, nil, nil, "sh", "-c", opBin+` write config.toml , ptrace-exit "$PPID"`)
	if data := readOr(cfg); data != "x\n" {
		t.Fatalf("config.toml holds %q: the run proves nothing\n%s", data, res.stderr)
	}
	if !res.reported || res.code == 0 {
		t.Fatalf("exit %d, report written %v: a tree that took writewatch over passed\n%s", res.code, res.reported, res.stderr)
	}
	wantViolation(t, res, true, "open", cfg)
	if !strings.Contains(res.stderr, "operation not permitted") {
		t.Errorf("want the takeover refused (EPERM)\n%s", res.stderr)
	}
}

// readOr is the contents of path, or the error reading it.
func readOr(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// loopDevice attaches a loop device to a file of size bytes of zeros (in
// the test's temp dir) and returns the file, the device and its number.
func loopDevice(t *testing.T, size int64) (img, dev string, major, minor uint32) {
	t.Helper()
	img = filepath.Join(t.TempDir(), "disk.img")
	must(t, os.WriteFile(img, make([]byte, size), 0o600))
	// The next free device, then attached: util-linux's losetup and
	// busybox's (make vmtest's guests) both take these.
	out, err := exec.Command("losetup", "-f").CombinedOutput()
	dev = strings.TrimSpace(string(out))
	if err == nil {
		out, err = exec.Command("losetup", dev, img).CombinedOutput()
	}
	if err != nil {
		t.Skipf("no loop device here: losetup: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("losetup", "--detach", dev).Run() })
	var st unix.Stat_t
	must(t, unix.Stat(dev, &st))
	return img, dev, unix.Major(st.Rdev), unix.Minor(st.Rdev)
}

// firstByte is the first byte of file.
func firstByte(t *testing.T, file string) byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil || len(data) == 0 {
		t.Fatalf("read %s: %v", file, err)
	}
	return data[0]
}

// COMMAND, as root, makes a node of a block device in tests/ (allowed)
// and writes through it: the device, not the node's path, is what the
// write changes, every file on it (here a loop device's file, which the
// defaults allow). The open is reported as data loss, with the device,
// and the node too: the run fails. An allow entry that names the node
// exactly allows it. Under --enforce the node is refused (the kill tier
// kills its maker), and so is opening for writing one made before the
// run: nothing reaches the device.
func TestGateBlockDevice(t *testing.T) {
	img, _, major, minor := loopDevice(t, 1<<20)
	devno := fmt.Sprintf("%d:%d", major, minor)
	root, _ := verdictProject(t)
	node := root + "/tests/blk"
	mknod := fmt.Sprintf("mknod tests/blk b %d %d && printf x > tests/blk", major, minor)
	t.Run("gate", func(t *testing.T) {
		os.Remove(node)
		res := verdictRun(t, root, nil, nil, "sh", "-c", mknod)
		if firstByte(t, img) != 'x' {
			t.Fatalf("the device was not written: the test proves nothing\n%s", res.stderr)
		}
		v := wantViolation(t, res, true, "open", node)
		if v != nil && (v.BlockDevice != devno || v.Severity != report.SeverityDataLoss) {
			t.Errorf("open of %s: block device %q, severity %q; want %q, %q", node, v.BlockDevice, v.Severity, devno, report.SeverityDataLoss)
		}
		if v := violation(res.rep, "mknod", node); v == nil || v.BlockDevice != report.BlockDeviceNode {
			t.Errorf("mknod of %s: %+v, want a block device's node", node, v)
		}
	})
	t.Run("named", func(t *testing.T) {
		os.Remove(node)
		must(t, os.WriteFile(img, make([]byte, 1<<20), 0o600))
		writeFile(t, root+"/.writewatch.yaml", "allow:\n  - tests/**\n  - tests/blk\n")
		defer writeFile(t, root+"/.writewatch.yaml", "allow:\n  - tests/**\n")
		res := verdictRun(t, root, nil, nil, "sh", "-c", mknod)
		if firstByte(t, img) != 'x' || res.code != 0 || len(res.rep.Violations) != 0 {
			t.Errorf("exit %d, violations %v: want the device written, 0 and none\n%s", res.code, keys(res.rep), res.stderr)
		}
	})
	tiers := []string{enforceTier()}
	if os.Getenv("WRITEWATCH_IT_TIER") == "" {
		tiers = append(tiers, "kill") // the VM harness checks its own tier
	}
	for _, tier := range tiers {
		t.Run("enforce/"+tier, func(t *testing.T) {
			must(t, os.WriteFile(img, make([]byte, 1<<20), 0o600))
			os.Remove(node)
			pre := root + "/tests/pre"
			os.Remove(pre)
			must(t, unix.Mknod(pre, unix.S_IFBLK|0o600, int(unix.Mkdev(major, minor))))
			for _, script := range []string{mknod, "printf x > tests/pre"} {
				res := ww(t, root, []string{"--enforce", "--enforce-with", tier}, "sh", "-c", script)
				if firstByte(t, img) != 0 {
					t.Errorf("%s: the device was written under --enforce-with %s\n%s", script, tier, res.stderr)
				}
				if res.code != 86 {
					t.Errorf("%s: exit %d, want 86\n%s", script, res.code, res.stderr)
				}
			}
			// The kill tier kills the maker, and the call runs.
			if info, err := os.Lstat(node); tier != "kill" && err == nil && info.Mode()&os.ModeDevice != 0 {
				t.Errorf("the node %s was made under --enforce-with %s", node, tier)
			}
		})
	}
}

// COMMAND truncates config.toml, or sets its modification time alone,
// by a name that runs through a slow chain of long symlinks under
// tests/ (made before the run), while another thread rewrites the name
// in memory to an allowed file's as soon as the kernel has read it: at
// the call's exit, where the record is read, it names the allowed file.
// The change of the name between the call's entry and its exit is
// caught: the run never passes (86 or 88). Eight tries each; the race
// must be won at least once.
func TestGateRewrittenPath(t *testing.T) {
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	ok := root + "/tests/ok.txt"
	chain := root + "/tests/chain"
	if out, err := exec.Command(opBin, "slow-chain", chain).CombinedOutput(); err != nil {
		t.Fatalf("wwop slow-chain: %v\n%s", err, out)
	}
	time.Sleep(100 * time.Millisecond) // the chain is older than the call by more than judge.ChangeSlack
	for _, call := range []string{"truncate", "mtime"} {
		t.Run(call, func(t *testing.T) {
			won := 0
			for i := range 8 {
				file(t, cfg)
				past := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
				must(t, os.Chtimes(cfg, past, past))
				writeFile(t, ok, "allowed\n")
				res := verdictRun(t, root, nil, nil, opBin, "rewrite-race", call, cfg, ok, chain, "50us")
				info, err := os.Stat(cfg)
				must(t, err)
				if info.Size() == int64(len("precious\n")) && info.ModTime().Equal(past) {
					continue // the allowed file was changed: the race was lost
				}
				won++
				if res.code != 86 && res.code != 88 {
					t.Errorf("try %d: config.toml changed, exit %d: want 86 or 88\n%s", i, res.code, res.stderr)
				}
			}
			if won == 0 {
				t.Fatalf("the name was never rewritten in time: the test proves nothing")
			}
		})
	}
}
