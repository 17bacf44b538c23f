// Package seeds is a suite with the habits that cost people their real
// files: a test that overwrites the user's config in $HOME and reads it
// back, one that leaves a file in the repository root, a clean one, and
// one that fails.
package seeds

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSavesConfig(t *testing.T) {
	dir := filepath.Join(os.Getenv("HOME"), ".config", "seedapp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte("theme = \"test\"\nsize = 12\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != "theme = \"test\"\nsize = 12\n" {
		t.Fatalf("read back %q, %v", data, err)
	}
}

func TestLittersRoot(t *testing.T) {
	if err := os.WriteFile("debug-output.txt", []byte("debug\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestClean(t *testing.T) {
	if err := os.WriteFile(filepath.Join(t.TempDir(), "ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFails(t *testing.T) {
	t.Error("this test fails, with or without writewatch")
}
