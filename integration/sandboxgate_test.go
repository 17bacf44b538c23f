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

	"github.com/writewatch/writewatch/report"
)

// The ways around the gate's verdict (the gate suite, gate_test.go, and
// the rename of a directory, renames_test.go), run under --sandbox: none
// passes, and none changes a protected file for real. A write that
// lands where the sandbox binds the real filesystem through (a block
// device in /dev) is said to have reached the real files.

// sandboxed runs command under --sandbox in root, and fails the test
// when no report was written.
func sandboxed(t *testing.T, root string, command ...string) result {
	t.Helper()
	requireRoot(t)
	res := ww(t, root, []string{"--sandbox"}, command...)
	if !res.reported {
		t.Fatalf("no report (exit %d)\n%s", res.code, res.stderr)
	}
	return res
}

// A truncate of config.toml by a name another thread rewrites to an
// allowed file's once the kernel has read it: the overlay holds the
// truncate, whatever the record names.
func TestSandboxRewrittenPath(t *testing.T) {
	root, _ := verdictProject(t)
	cfg, ok, chain := root+"/config.toml", root+"/tests/ok.txt", root+"/tests/chain"
	if out, err := exec.Command(opBin, "slow-chain", chain).CombinedOutput(); err != nil {
		t.Fatalf("wwop slow-chain: %v\n%s", err, out)
	}
	time.Sleep(100 * time.Millisecond)
	want := readOr(cfg)
	won := 0
	for i := range 4 {
		writeFile(t, ok, "allowed\n")
		res := sandboxed(t, root, opBin, "rewrite-race", "truncate", cfg, ok, chain, "50us")
		if got := readOr(cfg); got != want {
			t.Fatalf("try %d: config.toml changed for real: %q\n%s", i, got, res.stderr)
		}
		if readOr(ok) == "allowed\n" {
			won++ // the allowed file was left alone: config.toml was truncated
			if res.code != 86 || violationAt(res.rep, cfg) == nil {
				t.Errorf("try %d: exit %d, violations %v: want 86 and config.toml\n%s", i, res.code, keys(res.rep), res.stderr)
			}
		}
	}
	if won == 0 {
		t.Skip("the name was never rewritten in time: the race was not run")
	}
}

// mv tests scratch/old would move the denied tests/golden away:
// tests and scratch are bound through, tests/golden overlaid, so the
// rename fails (EXDEV) and mv copies instead (into scratch/old, for
// real: allowed), then removes the sources: the removal of
// tests/golden's files stays in the overlay, and is reported.
func TestSandboxDirectoryRenamed(t *testing.T) {
	root, _ := project(t)
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), "allow:\n  - tests/**\n  - scratch/**\ndeny:\n  - tests/golden/**\n")
	must(t, os.MkdirAll(filepath.Join(root, "scratch"), 0o755))
	golden := filepath.Join(root, "tests", "golden", "want.txt")
	must(t, os.MkdirAll(filepath.Dir(golden), 0o755))
	writeFile(t, golden, "golden\n")
	res := sandboxed(t, root, "mv", "tests", "scratch/old")
	if got := readOr(golden); got != "golden\n" {
		t.Errorf("tests/golden/want.txt changed for real: %q\n%s", got, res.stderr)
	}
	if v := violationAt(res.rep, golden); res.code != 86 || v == nil || v.Change == nil {
		t.Errorf("exit %d, %s: %+v; want 86 and its removal, held by the overlay\n%s", res.code, golden, v, res.stderr)
	}
}

// A root COMMAND overwrites config.toml and tries to take writewatch
// over with ptrace: refused, and the overwrite stayed in the overlay.
func TestSandboxTakeoverByPtrace(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("wwop ptrace-exit rewrites a call on x86-64 only")
	}
	root, _ := verdictProject(t)
	cfg := root + "/config.toml"
	want := readOr(cfg)
	res := sandboxed(t, root, "sh", "-c", opBin+` write config.toml , ptrace-exit "$PPID"`)
	if got := readOr(cfg); got != want {
		t.Errorf("config.toml changed for real: %q", got)
	}
	if res.code != 86 || violationAt(res.rep, cfg) == nil {
		t.Errorf("exit %d, violations %v: want 86 and config.toml\n%s", res.code, keys(res.rep), res.stderr)
	}
}

// A block device's node made in tests/ (bound through, nodev) cannot
// be opened: the device is not written, and the node is reported.
// The device's own node in /dev, which the sandbox binds through as
// it is outside, is written for real: the run fails, and the summary
// says that this write reached the real files.
func TestSandboxBlockDevice(t *testing.T) {
	img, dev, major, minor := loopDevice(t, 1<<20)
	root, _ := verdictProject(t)
	node := root + "/tests/blk"
	res := sandboxed(t, root, "sh", "-c", fmt.Sprintf("mknod tests/blk b %d %d && printf x > tests/blk", major, minor))
	if firstByte(t, img) != 0 {
		t.Errorf("the device was written through a node in tests/\n%s", res.stderr)
	}
	if v := violation(res.rep, "mknod", node); res.code != 86 || v == nil || v.BlockDevice != report.BlockDeviceNode {
		t.Errorf("exit %d, mknod of %s: %+v; want 86 and a block device's node\n%s", res.code, node, v, res.stderr)
	}

	res = sandboxed(t, root, "sh", "-c", "printf x > "+dev)
	if firstByte(t, img) != 'x' {
		t.Fatalf("the device was not written through %s: the test proves nothing\n%s", dev, res.stderr)
	}
	v := violation(res.rep, "open", dev)
	if res.code != 86 || v == nil || v.BlockDevice != fmt.Sprintf("%d:%d", major, minor) {
		t.Errorf("exit %d, open of %s: %+v; want 86 and the device\n%s", res.code, dev, v, res.stderr)
	}
	if !strings.Contains(res.stderr, "reached the real files") || strings.Contains(res.stderr, "none of it reached") {
		t.Errorf("the summary does not say that the write reached the real device\n%s", res.stderr)
	}
}
