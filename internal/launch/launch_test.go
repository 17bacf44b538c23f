package launch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	plain := filepath.Join(dir, "data")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(plain, []byte("x"), 0o644)
	env := []string{"PATH=/nonexistent:" + dir}

	if got, err := Resolve("tool", env); err != nil || got != exe {
		t.Errorf("Resolve(tool) = %q, %v", got, err)
	}
	if _, err := Resolve("data", env); !errors.Is(err, ErrNotExecutable) {
		t.Errorf("Resolve(data) error %v, want ErrNotExecutable", err)
	}
	if _, err := Resolve("missing", env); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(missing) error %v, want ErrNotFound", err)
	}
	if _, err := Resolve(plain, env); !errors.Is(err, ErrNotExecutable) {
		t.Errorf("Resolve(%s) error %v, want ErrNotExecutable", plain, err)
	}
	if _, err := Resolve(dir, env); !errors.Is(err, ErrNotExecutable) {
		t.Errorf("Resolve(a directory) error %v, want ErrNotExecutable", err)
	}
	if _, err := Resolve(filepath.Join(dir, "nope"), env); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(missing path) error %v, want ErrNotFound", err)
	}
}

func TestIdentityEnv(t *testing.T) {
	id := &Identity{UID: 1000, GID: 1000, Name: "dev", Home: "/home/dev"}
	got := id.Env([]string{"HOME=/root", "PATH=/bin", "SUDO_UID=1000", "SUDO_USER=dev", "USER=root", "LANG=C"})
	want := []string{"PATH=/bin", "LANG=C", "HOME=/home/dev", "USER=dev", "LOGNAME=dev"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
	id.Path = "/home/dev/go/bin:/usr/bin"
	got = id.Env([]string{"PATH=/usr/sbin:/usr/bin", "LANG=C"})
	want = []string{"LANG=C", "PATH=/home/dev/go/bin:/usr/bin", "HOME=/home/dev", "USER=dev", "LOGNAME=dev"}
	if !slices.Equal(got, want) {
		t.Errorf("Env with the user's PATH = %q, want %q", got, want)
	}
}

func TestSudoIdentity(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SudoIdentity only applies to root")
	}
	t.Setenv("SUDO_UID", "")
	if id, err := SudoIdentity(); id != nil || err != nil {
		t.Errorf("without SUDO_UID: %+v, %v", id, err)
	}
	t.Setenv("SUDO_UID", "65534")
	t.Setenv("SUDO_GID", "65534")
	id, err := SudoIdentity()
	if err != nil || id == nil || id.UID != 65534 || id.GID != 65534 {
		t.Fatalf("SudoIdentity = %+v, %v", id, err)
	}
	t.Setenv("SUDO_UID", "bogus")
	if _, err := SudoIdentity(); err == nil {
		t.Error("bogus SUDO_UID accepted")
	}
}
