package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileHasTraceCaps(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setcap needs root")
	}
	setcap, err := exec.LookPath("setcap")
	if err != nil {
		t.Skip("setcap is not installed (package libcap2-bin)")
	}
	file := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(file, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if fileHasTraceCaps(file) {
		t.Error("a file without capabilities reported as having them")
	}
	for caps, want := range map[string]bool{
		"cap_bpf,cap_perfmon+ep":          true,
		"cap_bpf,cap_perfmon,cap_kill+ep": true,
		"cap_bpf+ep":                      false,
		"cap_perfmon+ep":                  false,
		"cap_bpf,cap_perfmon+p":           false, // not effective
		"cap_bpf,cap_perfmon+i":           false,
	} {
		if out, err := exec.Command(setcap, caps, file).CombinedOutput(); err != nil {
			t.Fatalf("setcap %s: %v\n%s", caps, err, out)
		}
		if got := fileHasTraceCaps(file); got != want {
			t.Errorf("after setcap %s: fileHasTraceCaps = %v, want %v", caps, got, want)
		}
	}
}

func TestPrivilegesAdvice(t *testing.T) {
	root := Privileges{Root: true, Missing: []string{"cap_bpf"}}
	if root.Advice() != "" || !root.CanTryTracing() {
		t.Errorf("root: advice %q", root.Advice())
	}
	user := Privileges{UID: 1000, Missing: []string{"cap_bpf", "cap_perfmon"}, Executable: "/usr/local/bin/writewatch"}
	if a := user.Advice(); !strings.Contains(a, "needs root, or CAP_BPF and CAP_PERFMON; run it with sudo") ||
		!strings.Contains(a, "sudo setcap cap_bpf,cap_perfmon+ep /usr/local/bin/writewatch") {
		t.Errorf("user without capabilities: advice %q", a)
	}
	half := Privileges{UID: 1000, Missing: []string{"cap_perfmon"}}
	if a := half.Advice(); !strings.Contains(a, "(CAP_PERFMON is missing)") {
		t.Errorf("user with CAP_BPF only: advice %q", a)
	}
	user.FileCaps = true
	if a := user.Advice(); !strings.Contains(a, "nosuid") {
		t.Errorf("file capabilities not applied: advice %q", a)
	}
	user.NoNewPrivs = true
	if a := user.Advice(); !strings.Contains(a, "no_new_privs") {
		t.Errorf("no_new_privs: advice %q", a)
	}
	capped := Privileges{UID: 1000}
	if capped.Advice() != "" || !capped.CanTryTracing() {
		t.Errorf("user with the capabilities: advice %q", capped.Advice())
	}
}
