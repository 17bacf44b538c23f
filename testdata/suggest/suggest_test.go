// Package suggest is a test suite whose writes have the names real
// suites' do: an app's directory under ~/.config, made and removed;
// files of several apps directly in ~/.config; atomic writes' temporary
// files, named by Python's tempfile, in three directories; a directory
// of mktemp's in the home directory; a directory of outputs.
package suggest

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An app's config directory, missing at start, made and removed.
func TestAppConfig(t *testing.T) {
	dir := filepath.Join(os.Getenv("HOME"), ".config", "myapp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Outputs in a directory of the project.
func TestOutputs(t *testing.T) {
	if err := os.MkdirAll("out", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("out", "report.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Files of three apps that share nothing, in ~/.config itself.
func TestManyApps(t *testing.T) {
	for _, name := range []string{"alpha.toml", "beta.ini", "gamma.json"} {
		if err := os.WriteFile(filepath.Join(os.Getenv("HOME"), ".config", name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The temporary files of atomic writes, as Python's tempfile names them
// (NamedTemporaryFile(prefix="info.json.", suffix=".tmp")), one in each
// of three directories, new at each run.
func TestAtomicWrites(t *testing.T) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789_"
	for _, d := range []string{"a", "b", "c"} {
		var random strings.Builder
		for range 8 {
			random.WriteByte(alphabet[rand.Intn(len(alphabet))])
		}
		tmp := filepath.Join("data", d, "info.json."+random.String()+".tmp")
		if err := os.WriteFile(tmp, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(tmp); err != nil {
			t.Fatal(err)
		}
	}
}

// A directory of mktemp's in the home directory, as dotdrop's tests make.
func TestMktempHome(t *testing.T) {
	out, err := exec.Command("mktemp", "-d", "-p", os.Getenv("HOME"), "--suffix=-dotdrop-tests").Output()
	if err != nil {
		t.Skipf("mktemp: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "dotfile"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
