package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/policy"
)

// setcapCopy is a copy of writewatch, given CAP_BPF and CAP_PERFMON with
// setcap, in a project of u's: u runs it, and COMMAND runs as u, the
// user writewatch runs as.
func setcapCopy(t *testing.T, u normalUser) (root, ww string) {
	t.Helper()
	setcap, err := exec.LookPath("setcap")
	if err != nil {
		t.Skip("setcap is not installed (package libcap2-bin)")
	}
	root, bin := userProject(t, u)
	ww = filepath.Join(bin, "writewatch")
	copyFile(t, wwBin, ww)
	if out, err := exec.Command(setcap, "cap_bpf,cap_perfmon+ep", ww).CombinedOutput(); err != nil {
		t.Fatalf("setcap: %v\n%s", err, out)
	}
	return root, ww
}

// Under --enforce, COMMAND running as the user writewatch runs as (the
// setcap route) cannot kill or stop writewatch, then write: Landlock
// keeps the tree from signalling processes outside it, under every tier.
// Without that, killing writewatch took the kill tier's BPF programs
// with it, and the write after that changed config.toml (exit 137).
func TestEnforceTreeCannotSignalWritewatch(t *testing.T) {
	u := makeUser(t)
	if abi, _ := launch.LandlockABI(); abi < policy.LandlockSignalABI {
		t.Skipf("Landlock ABI %d does not scope signals (ABI %d, Linux 6.12)", abi, policy.LandlockSignalABI)
	}
	root, ww := setcapCopy(t, u)
	cfg := filepath.Join(root, "config.toml")
	for _, c := range []struct {
		name  string
		flags []string
		sig   string
	}{
		{"kill tier, SIGKILL", []string{"--enforce", "--enforce-with", "kill"}, "KILL"},
		{"kill tier, SIGSTOP", []string{"--enforce", "--enforce-with", "kill"}, "STOP"},
		{"default tier, SIGKILL", []string{"--enforce"}, "KILL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file(t, cfg)
			must(t, os.Chown(cfg, u.uid, u.gid))
			script := "kill -" + c.sig + ` $PPID; sleep 0.2; echo changed >> config.toml; kill -CONT $PPID`
			// A writewatch stopped for good is killed after a while.
			args := append(append([]string{"timeout", "-s", "KILL", "20", ww, "--json", filepath.Join(root, "tests", "report.json")}, c.flags...), "--", "sh", "-c", script)
			code, stderr := runAs(t, u, root, u.env(), nil, args...)
			if code != 86 {
				t.Errorf("exit code %d, want 86\n%s", code, stderr)
			}
			if got, _ := os.ReadFile(cfg); string(got) != "precious\n" {
				t.Errorf("config.toml is %q after the run\n%s", got, stderr)
			}
		})
	}
}
