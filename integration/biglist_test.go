package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/report"
)

// bigListEntries is how many literal entries the big allowlist holds:
// more than the 4,096 inode marks the kernel's map once held.
const bigListEntries = 100000

// bigListProject makes a project outside the temp dir with
// bigListEntries files, 100 to a directory, each named by a literal
// entry of its config, and an unlisted file beside them. It returns the
// project, a listed file and the unlisted one.
func bigListProject(t *testing.T) (root, listed, unlisted string) {
	t.Helper()
	root, _ = project(t)
	var cfg strings.Builder
	cfg.WriteString("allow:\n")
	for i := range bigListEntries {
		dir := filepath.Join(root, "build", fmt.Sprintf("out%d", i/100))
		if i%100 == 0 {
			must(t, os.MkdirAll(dir, 0o755))
		}
		name := fmt.Sprintf("build/out%d/file%d.o", i/100, i)
		must(t, os.WriteFile(filepath.Join(root, name), []byte("old\n"), 0o644))
		fmt.Fprintf(&cfg, "  - %s\n", name)
	}
	writeFile(t, filepath.Join(root, ".writewatch.yaml"), cfg.String())
	listed = filepath.Join(root, "build/out777/file77742.o")
	unlisted = filepath.Join(root, "build/out777/unlisted.o")
	writeFile(t, unlisted, "precious\n")
	return root, listed, unlisted
}

// An allowlist of 100,000 literal entries starts, in the default mode and
// under --enforce (the inode marks, the allowed prefixes and the Landlock
// ruleset sized to it), and its verdicts are those of the entries: a
// listed file is written, an unlisted one beside it is reported, and
// under --enforce refused.
func TestEnforceHugeAllowlist(t *testing.T) {
	root, listed, unlisted := bigListProject(t)
	script := fmt.Sprintf(`echo new > %s && echo "listed ok"; echo new > %s; echo "unlisted $?"`, listed, unlisted)
	for _, mode := range []struct {
		name  string
		flags []string
	}{
		{"default", nil},
		{"enforce", []string{"--enforce", "--enforce-with", enforceTier()}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			writeFile(t, listed, "old\n")
			writeFile(t, unlisted, "precious\n")
			res := ww(t, root, mode.flags, "sh", "-c", script)
			if res.code != 86 {
				t.Fatalf("exit code %d, want 86\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
			}
			if data, _ := os.ReadFile(listed); string(data) != "new\n" || !strings.Contains(res.stdout, "listed ok") {
				t.Errorf("the listed file was not written: %q\n%s", data, res.stdout)
			}
			if got := keys(res.rep); len(got) != 1 || got[0].path != unlisted {
				t.Errorf("violations %v, want only %s\n%s", got, unlisted, res.stderr)
			}
			data, _ := os.ReadFile(unlisted)
			v := violation(res.rep, "open", unlisted)
			if mode.flags == nil {
				if string(data) != "new\n" {
					t.Errorf("unlisted: %q, the default mode only reports", data)
				}
				return
			}
			if string(data) != "precious\n" {
				t.Errorf("the unlisted file changed under --enforce: %q", data)
			}
			if v == nil || v.Action != report.ActionBlockedKilled {
				t.Errorf("unlisted: %+v, want blocked+killed", v)
			}
		})
	}
}
