package integration

import (
	"os"
	"strings"
	"testing"
)

// A tree deeper than PATH_MAX inside the temp dir (a test of long paths)
// is made, written and removed: every path is too long to read whole,
// but each call is made in a directory the temp dir's allow mark lies
// above, so nothing is reported. The same tree in the project, outside
// the allowlist, is reported (TestLongPathIsMarkedTruncated).
func TestVerdictDeepTreeInTheTempDir(t *testing.T) {
	base, root := heldProject(t)
	name := strings.Repeat("d", 250)
	// 20 levels of 251 bytes: about 5000 bytes, more than the 4096 kept.
	script := `top=$(mktemp -d) && cd "$top" && "$0" deep 20 ` + name + ` , write f.txt , mkdir sub , unlink f.txt , rmdir sub , undeep 20 ` + name + ` && cd / && rmdir "$top"`
	res := wwEnv(t, root, []string{"TMPDIR=" + base}, nil, "sh", "-c", script, opBin)
	if res.code != 0 || len(res.rep.Violations) != 0 {
		t.Errorf("exit %d, violations %v, want 0 and none\n%s", res.code, keys(res.rep), res.stderr)
	}
	if left, _ := os.ReadDir(base); len(left) != 1 {
		t.Errorf("the temp dir holds %v: the tree was not removed, the test proves less", left)
	}
}
