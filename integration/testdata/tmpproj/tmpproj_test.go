// Package tmpproj is the Go test of a project that the integration tests
// put under /tmp or $TMPDIR (integration/tmpproject_test.go): it writes
// under t.TempDir() and into tests/, which its config allows, and then a
// stray file into the project root, which nothing allows. Under --enforce
// the stray write kills the test binary, so it comes last.
package tmpproj

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAllowedWrites(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scratch.txt"), []byte("fine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("tests", "allowed.txt"), []byte("fine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log("tempdir:", dir)
}

func TestStrayWrite(t *testing.T) {
	if err := os.WriteFile("stray.txt", []byte("left behind\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
