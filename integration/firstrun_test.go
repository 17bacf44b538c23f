package integration

import (
	"os/exec"
	"strings"
	"testing"
)

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
