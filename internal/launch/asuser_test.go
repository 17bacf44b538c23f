package launch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// What AsUser creates belongs to the user, what it may not do fails, and
// the rest of the process keeps its own identity.
func TestAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to take another identity")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	closed := filepath.Join(dir, "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	id := &Identity{UID: 65534, GID: 65534}
	mine := filepath.Join(dir, "mine")
	if err := AsUser(id, func() error { return os.Mkdir(mine, 0o755) }); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(mine, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != id.UID || st.Gid != id.GID {
		t.Errorf("made by uid %d gid %d, want %d %d", st.Uid, st.Gid, id.UID, id.GID)
	}
	if err := AsUser(id, func() error { return os.Mkdir(filepath.Join(closed, "x"), 0o755) }); !os.IsPermission(err) {
		t.Errorf("mkdir in root's 0700 directory as uid %d: %v, want permission denied", id.UID, err)
	}
	for range 20 {
		if os.Geteuid() != 0 || syscall.Getuid() != 0 {
			t.Fatal("the process lost its own identity")
		}
		if err := os.Mkdir(filepath.Join(closed, "root"), 0o755); err != nil && !os.IsExist(err) {
			t.Fatalf("root cannot write its own directory any more: %v", err)
		}
	}
	if err := AsUser(nil, func() error { return os.Mkdir(filepath.Join(closed, "self"), 0o755) }); err != nil {
		t.Errorf("AsUser(nil): %v", err)
	}
}
