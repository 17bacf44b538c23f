package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/report"
)

// Under --enforce, a project under /tmp or $TMPDIR is refused like any
// other, on every tier (the one the tests force, and here the kill tier): its stray write in the root is refused (or, under
// the kill tier, kills its writer) and reported, while in the same run the
// test's t.TempDir() write, its write under tests/ (which its config
// allows), go's build directory and the Go build cache go through. The
// test's temp dir is COMMAND's private one, removed at the end.
func TestEnforceProjectInTempDir(t *testing.T) {
	places := tempPlaces(t)
	tiers := []string{enforceTier()}
	if os.Getenv("WRITEWATCH_IT_TIER") == "" { // the VM harness checks its own tier
		tiers = append(tiers, "kill")
	}
	for _, place := range places {
		for _, tier := range tiers {
			t.Run(place.name+"/"+tier, func(t *testing.T) {
				root := tmpProject(t, place.base)
				res := wwEnv(t, root, []string{"TMPDIR=" + place.tmpdir}, []string{"--enforce", "--enforce-with", tier},
					tmpProjectCommand()...)
				if res.code != 86 {
					t.Fatalf("exit code %d, want 86\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
				}
				if !strings.Contains(res.stdout, "--- PASS: TestAllowedWrites") {
					t.Errorf("the allowed writes did not pass:\n%s", res.stdout)
				}
				if !exists(filepath.Join(root, "tests", "allowed.txt")) {
					t.Error("tests/allowed.txt was not written")
				}
				tempDir := tempDirOf(t, res)
				private, _, _ := strings.Cut(strings.TrimPrefix(tempDir, place.tmpdir+"/"), "/")
				if !strings.HasPrefix(tempDir, place.tmpdir+"/writewatch-tmp-") {
					t.Errorf("t.TempDir() is %s: want it in a private temp dir in %s", tempDir, place.tmpdir)
				} else if exists(filepath.Join(place.tmpdir, private)) {
					t.Errorf("the private temp dir %s is still there", filepath.Join(place.tmpdir, private))
				}
				stray := filepath.Join(root, "stray.txt")
				if tier != "kill" && exists(stray) {
					t.Errorf("stray.txt was written under the %s tier", tier)
				}
				want := report.ActionBlockedKilled
				if tier == "kill" {
					want = report.ActionKilled
				}
				v := violation(res.rep, "open", stray)
				switch {
				case v == nil:
					t.Errorf("no violation for %s: %v\nstderr:\n%s", stray, keys(res.rep), res.stderr)
				case v.Action != want:
					t.Errorf("%s: action %q, want %q", stray, v.Action, want)
				}
				for _, v := range res.rep.Violations {
					if v.Path != stray {
						t.Errorf("violation %s %s (%s): only %s should be reported\nstderr:\n%s", v.Op, v.Path, v.NotEnforced, stray, res.stderr)
					}
				}
			})
		}
	}
}

// COMMAND's temp dir under --enforce belongs to the user COMMAND runs as
// (under sudo, the invoking user), who may write there; it is gone after
// the run.
func TestEnforcePrivateTempDirBelongsToUser(t *testing.T) {
	root := tmpProject(t, "/tmp")
	u := makeUser(t)
	u.chownAll(t, root)
	script := `f=$(mktemp) && echo "tmpdir $TMPDIR" && stat -c 'owner %u' "$TMPDIR" "$f"`
	res := wwEnv(t, root, []string{"TMPDIR=/tmp", "SUDO_UID=" + u.uidS, "SUDO_GID=" + u.gidS, "SUDO_USER=" + u.name},
		[]string{"--enforce", "--enforce-with", enforceTier()}, "sh", "-c", script)
	if res.code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if got, want := res.stdout, "owner "+u.uidS+"\nowner "+u.uidS+"\n"; !strings.HasSuffix(got, want) {
		t.Errorf("the temp dir and its file are not the user's own:\n%s", got)
	}
	tmpdir, _, _ := strings.Cut(strings.TrimPrefix(res.stdout, "tmpdir "), "\n")
	if !strings.HasPrefix(tmpdir, "/tmp/writewatch-tmp-") {
		t.Fatalf("TMPDIR %q, want a private temp dir in /tmp", tmpdir)
	}
	if exists(tmpdir) {
		t.Errorf("%s is still there", tmpdir)
	}
}
