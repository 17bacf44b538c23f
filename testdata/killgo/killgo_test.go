// Package killgo is a suite one of whose tests writes outside the
// allowlist: under --enforce its test binary is killed there.
package killgo

import (
	"os"
	"testing"
)

func TestFirst(t *testing.T) {}

// TestParallel waits, paused, for the sequential tests to end: it is
// running when TestSave's binary is killed.
func TestParallel(t *testing.T) {
	t.Parallel()
}

// TestSave writes the file WW_KILL_TARGET names.
func TestSave(t *testing.T) {
	if err := os.WriteFile(os.Getenv("WW_KILL_TARGET"), []byte("theme = 'test'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAfter(t *testing.T) {}

func TestLast(t *testing.T) {}
