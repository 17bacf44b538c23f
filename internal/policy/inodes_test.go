package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Looked up through a directory's listing or one by one, every path
// gives what stat(2) gives.
func TestInodesAgreeWithStat(t *testing.T) {
	root := tree(t, "sub/", "sub/inner/f")
	var paths []string
	for i := range 2 * listAt {
		p := filepath.Join(root, fmt.Sprintf("f%d", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("sub", filepath.Join(root, "link")))
	must(os.Symlink("gone", filepath.Join(root, "dangling")))
	paths = append(paths, root+"/sub", root+"/link", root+"/dangling", root+"/missing", root+"/link/inner", root+"/link/inner/f")
	// Mount points: their directory entries name what they cover.
	for _, p := range []string{"/proc", "/sys", "/dev", "/tmp", "/etc", "/usr", "/bin", "/var"} {
		paths = append(paths, p)
	}
	for i := range listAt {
		paths = append(paths, fmt.Sprintf("/missing-%d", i))
	}
	c := newInodes(paths)
	for _, p := range paths {
		got, gotOK := c.stat(p)
		want, wantOK := statPath(p)
		if got != want || gotOK != wantOK {
			t.Errorf("%s: %+v %v, stat says %+v %v", p, got, gotOK, want, wantOK)
		}
	}
	if l := c.dirs[root]; l == nil || !l.ok {
		t.Errorf("%s was not read as a whole", root)
	}
}
