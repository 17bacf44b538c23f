package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Mistakes in the command line stop writewatch with exit code 2 and one
// clear line, before anything runs.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "no COMMAND given"},
		{"unknown flag", []string{"--frobnicate", "true"}, "flag provided but not defined"},
		{"enforce is not offered yet", []string{"--enforce", "true"}, "flag provided but not defined: -enforce"},
		{"bad ring buffer", []string{"--ringbuf-mib", "3", "true"}, "power of two"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := realMain(tc.args, &stderr); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.want)
			}
		})
	}
}

func TestBrokenConfigIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ww.yaml")
	os.WriteFile(cfg, []byte("allow:\n  - ok\nbogus: 1\n"), 0o644)
	mark := filepath.Join(dir, "ran")
	var stderr bytes.Buffer
	code := realMain([]string{"--config", cfg, "--", "touch", mark}, &stderr)
	if code != exitUsage {
		t.Errorf("exit code %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr.String(), cfg+":3:") {
		t.Errorf("stderr %q should name %s:3", stderr.String(), cfg)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("COMMAND ran")
	}
}

func TestHelpListsExitCodes(t *testing.T) {
	var stderr bytes.Buffer
	if code := realMain([]string{"--help"}, &stderr); code != 0 {
		t.Errorf("--help exit code %d", code)
	}
	for _, want := range []string{"86", "87", "127", "128+N", "-audit", "-json"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
}

func TestJSONPathCheckedBeforeRun(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "ran")
	var stderr bytes.Buffer
	code := realMain([]string{"--json", filepath.Join(dir, "missing", "r.json"), "--", "touch", mark}, &stderr)
	if code != exitUsage {
		t.Errorf("exit code %d, want %d (%s)", code, exitUsage, stderr.String())
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("COMMAND ran")
	}
}
