package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/writewatch/writewatch/report"
)

// git clone of a fixture repository of the project's into the temp dir
// hard-links its objects, and cp -al links every file: a hard link
// changes nothing of the file linked, so the run passes, with nothing
// reported. A later write through a new name is a write of the file it
// was linked from, data loss, requested as the name written.
func TestVerdictHardLinksOfUnchangedFiles(t *testing.T) {
	base, root := heldProject(t)
	env := []string{"TMPDIR=" + base}
	repo := filepath.Join(root, "fixtures", "repo")
	must(t, os.MkdirAll(repo, 0o755))
	writeFile(t, filepath.Join(root, "fixtures", "README"), "fixture\n")
	writeFile(t, filepath.Join(repo, "a.txt"), "a\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", "a.txt"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "a"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	res := wwEnv(t, root, env, nil, "sh", "-c", `git clone -q fixtures/repo "$TMPDIR/clone" && cp -al fixtures "$TMPDIR/copy"`)
	if res.code != 0 || len(res.rep.Violations) != 0 {
		t.Errorf("exit %d, violations %v, want 0 and none\n%s", res.code, keys(res.rep), res.stderr)
	}
	var st syscall.Stat_t
	must(t, syscall.Stat(filepath.Join(root, "fixtures", "README"), &st))
	if st.Nlink < 2 {
		t.Fatalf("fixtures/README has %d links: cp -al made none, the test proves nothing", st.Nlink)
	}
	objects, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "??", "*"))
	if len(objects) == 0 || syscall.Stat(objects[0], &st) != nil || st.Nlink < 2 {
		t.Errorf("git clone linked no object (%q): the test proves less", objects)
	}

	copied := filepath.Join(base, "copy2", "README")
	res = wwEnv(t, root, env, nil, "sh", "-c", `cp -al fixtures "$TMPDIR/copy2" && echo changed >> `+copied)
	v := violation(res.rep, "open", filepath.Join(root, "fixtures", "README"))
	if res.code != 86 || v == nil || v.RequestedPath != copied || v.Severity != report.SeverityDataLoss {
		t.Errorf("a write through the link: exit %d, violation %+v, want 86 and data loss on fixtures/README requested as %s\n%s",
			res.code, v, copied, res.stderr)
	}
}
