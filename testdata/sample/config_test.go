package sample

import (
	"os"
	"path/filepath"
	"testing"
)

// Clean: writes only under t.TempDir().
func TestSaveConfigInTempDir(t *testing.T) {
	dir := t.TempDir()
	if err := SaveConfig(dir, "theme = 'dark'\n"); err != nil {
		t.Fatal(err)
	}
}

// Litters the repository root with a stray file.
func TestWritesStrayFileInRoot(t *testing.T) {
	if err := os.WriteFile("debug-output.txt", []byte("left behind\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Overwrites the user's real config: $HOME points at a fake home here, so
// the demo damages nothing.
func TestSaveConfigToUserDir(t *testing.T) {
	home := filepath.Join("..", "fakehome")
	abs, err := filepath.Abs(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", abs)
	if err := SaveConfig(UserConfigDir(), "theme = 'test'\n"); err != nil {
		t.Fatal(err)
	}
}
