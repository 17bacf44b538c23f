package integration

import (
	"os"
	"runtime"
	"strings"
	"testing"
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
