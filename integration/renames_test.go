package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/writewatch/writewatch/report"
)

// heldProject is a project (allowing tests/**, with a config.toml) at
// base/ci/repo, with base as COMMAND's TMPDIR: the project lies under
// the temp dir the default allows, two levels down. It returns base and
// the project.
func heldProject(t *testing.T) (base, root string) {
	t.Helper()
	requireRoot(t)
	base, err := os.MkdirTemp("/var/tmp", "writewatch-it-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if base, err = filepath.EvalSymlinks(base); err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "ci", "repo")
	must(t, os.MkdirAll(filepath.Join(root, "tests"), 0o755))
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), "allow:\n  - tests/**\n")
	writeFile(t, filepath.Join(root, "config.toml"), "precious = true\n")
	return base, root
}

// Renaming a directory moves what is under it. mv tests scratch/old
// (both allowed) moves the denied tests/golden away; with the project
// under $TMPDIR, renaming the directory above it moves the whole
// project (by absolute paths, and by names in $TMPDIR, which the kernel
// would settle but for the directory's moves mark): each is data loss,
// denied by the entry that protects what moved.
func TestVerdictRenameOfADirectoryMovesWhatIsBelow(t *testing.T) {
	root, _ := project(t)
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), "allow:\n  - tests/**\n  - scratch/**\ndeny:\n  - tests/golden/**\n")
	must(t, os.MkdirAll(filepath.Join(root, "tests", "golden"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "scratch"), 0o755))
	writeFile(t, filepath.Join(root, "tests", "golden", "want.txt"), "golden\n")
	res := ww(t, root, nil, "mv", "tests", "scratch/old")
	v := violation(res.rep, "rename", filepath.Join(root, "tests"))
	if res.code != 86 || len(res.rep.Violations) != 1 || v == nil || v.Role != report.RoleOld ||
		v.Severity != report.SeverityDataLoss || v.DeniedBy != filepath.Join(root, ".writewatch.yaml")+":5" {
		t.Errorf("mv tests scratch/old: exit %d, violations %v (%+v), want 86 and the rename of tests, denied by line 5\n%s",
			res.code, keys(res.rep), v, res.stderr)
	}

	base, root := heldProject(t)
	holder := filepath.Join(base, "ci")
	for _, tc := range []struct{ name, script string }{
		{"absolute", `mv "$TMPDIR/ci" "$TMPDIR/ci-moved"`},
		{"names in TMPDIR", `cd "$TMPDIR" && mv ci ci-moved`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := wwEnv(t, root, []string{"TMPDIR=" + base}, nil, "sh", "-c", tc.script)
			if !exists(filepath.Join(base, "ci-moved", "repo", "config.toml")) {
				t.Fatalf("the project was not moved: the test proves nothing\n%s", res.stderr)
			}
			must(t, os.Rename(filepath.Join(base, "ci-moved"), holder))
			v := violation(res.rep, "rename", holder)
			if res.code != 86 || len(res.rep.Violations) != 1 || v == nil || v.Role != report.RoleOld ||
				v.Severity != report.SeverityDataLoss || v.DeniedBy != "default:project" {
				t.Errorf("exit %d, violations %v (%+v), want 86 and the rename of %s, denied by default:project\n%s",
					res.code, keys(res.rep), v, holder, res.stderr)
			}
		})
	}
}
