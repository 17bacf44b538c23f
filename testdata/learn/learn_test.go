package learn

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// Two files with numbered names, new at each run, in the project.
func TestNumberedNames(t *testing.T) {
	for range 2 {
		if err := Save(fmt.Sprintf("outline_demo_%d.pdf", 1000000+rand.Intn(9000000)), "pdf"); err != nil {
			t.Fatal(err)
		}
	}
}

// A config under $HOME, in a directory it makes.
func TestHomeConfig(t *testing.T) {
	dir := filepath.Join(os.Getenv("HOME"), ".config", "learn")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Save(filepath.Join(dir, "config.toml"), "x = 1\n"); err != nil {
		t.Fatal(err)
	}
}

// Outputs with nothing in common but their directory.
func TestOutputs(t *testing.T) {
	if err := os.MkdirAll("out", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.json", "b.yaml", "c.txt"} {
		if err := Save(filepath.Join("out", name), "x"); err != nil {
			t.Fatal(err)
		}
	}
}

// A scratch file made and removed: transient.
func TestScratch(t *testing.T) {
	name := fmt.Sprintf("scratch-%d.tmp", os.Getpid())
	if err := Save(name, "x"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
}

// A removal that fails: an attempt, which needs no entry.
func TestFailedRemove(t *testing.T) {
	os.Remove("/hopefully not existing")
	os.Remove("")
}
