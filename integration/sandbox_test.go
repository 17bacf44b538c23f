package integration

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/report"
)

// seedsProject copies testdata/seeds into a project with a home of its
// own, whose ~/.config/seedapp/config.toml is the user's.
func seedsProject(t *testing.T) (root, home string) {
	t.Helper()
	root, outside := project(t)
	copyDir(t, "testdata/seeds", root)
	home = filepath.Join(outside, "home")
	must(t, os.MkdirAll(filepath.Join(home, ".config/seedapp"), 0o755))
	writeFile(t, filepath.Join(home, ".config/seedapp/config.toml"), "theme = \"dark\"\nsize = 12\n")
	return root, home
}

// goEnv is what go needs with another HOME: the real caches, so that
// nothing is built anew.
func goEnv(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	return []string{"GOCACHE=" + v[0], "GOMODCACHE=" + v[1], "GOPATH=" + v[2], "GOFLAGS=-count=1", "GOTOOLCHAIN=local"}
}

// files is what a tree holds, path by path (symlinks by their target),
// for comparing before and after.
func files(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.Name() == ".cache" || d.Name() == "go" && d.IsDir() {
				return filepath.SkipDir // the Go caches, allowed
			}
			switch {
			case d.Type()&os.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				out[p] = "-> " + target
			case d.IsDir():
				out[p] = "dir"
			default:
				data, _ := os.ReadFile(p)
				st, _ := os.Lstat(p)
				out[p] = st.Mode().String() + " " + string(data)
			}
			return nil
		})
	}
	return out
}

// The seeds' scenario, in a Go and a pytest suite: tests overwrite the
// user's config in $HOME and leave files in the repository root. Under
// --sandbox the real files are byte for byte as they were, the suites
// pass and fail as bare, and the report names each change with its test
// and what it would have made of the file.
func TestSandboxSeedsScenario(t *testing.T) {
	requireRoot(t)
	requirePytest(t, "/usr/bin/python3")
	suites := []struct {
		name, test, litter string
		cmd                []string
	}{
		{"go", "TestSavesConfig", "debug-output.txt", []string{"go", "test", "."}},
		{"pytest", "test_seeds.py::test_saves_config", "py-output.txt",
			[]string{"/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_seeds.py"}},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			// Bare, in a copy of its own.
			bareRoot, bareHome := seedsProject(t)
			env := append(goEnv(t), "HOME="+bareHome)
			bare := exec.Command(s.cmd[0], s.cmd[1:]...)
			bare.Dir, bare.Env = bareRoot, append(os.Environ(), env...)
			bareOut, err := bare.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatalf("bare: %v", err)
			}
			bareCode := bare.ProcessState.ExitCode()

			root, home := seedsProject(t)
			before := files(t, root, home)
			res := wwEnv(t, root, append(goEnv(t), "HOME="+home), []string{"--sandbox", "--audit"}, s.cmd...)
			if res.code != bareCode {
				t.Errorf("exit %d, bare %d\n%s\n%s\nbare:\n%s", res.code, bareCode, res.stdout, res.stderr, bareOut)
			}
			if got, want := outcomes(res.stdout), outcomes(string(bareOut)); !slices.Equal(got, want) {
				t.Errorf("outcomes %v, bare %v\n%s", got, want, res.stdout)
			}
			if after := files(t, root, home); !mapsEqual(before, after) {
				t.Errorf("the real files changed:\nbefore %v\nafter  %v", before, after)
			}
			config := filepath.Join(home, ".config/seedapp/config.toml")
			v := violationAt(res.rep, config)
			switch {
			case v == nil:
				t.Fatalf("no violation at %s: %v\n%s", config, keys(res.rep), res.stderr)
			case v.Test != s.test || v.Severity != report.SeverityDataLoss || !slices.Contains(v.SeenBy, report.SeenBySandbox):
				t.Errorf("%s: test %q severity %q seen by %v", config, v.Test, v.Severity, v.SeenBy)
			case v.Change == nil || !strings.Contains(v.Change.Diff, `-theme = "dark"`) || v.Change.Kind != "modified":
				t.Errorf("%s: change %+v", config, v.Change)
			}
			litter := filepath.Join(root, s.litter)
			if v := violationAt(res.rep, litter); v == nil || v.Change == nil || v.Change.Kind != "created" || v.Severity != report.SeverityLeftBehind {
				t.Errorf("%s: %+v", litter, v)
			}
			if res.rep.Sandbox == nil || !slices.Contains(res.rep.Sandbox.Overlaid, "/") {
				t.Errorf("sandbox %+v", res.rep.Sandbox)
			}
			if !strings.Contains(res.stderr, "sandboxed: none of it reached the real files") || !strings.Contains(res.stderr, `+theme = "`) {
				t.Errorf("the summary does not say so, or shows no diff:\n%s", res.stderr)
			}
		})
	}
}

// outcomes are the test outcome lines a go test or pytest run printed,
// sorted: "--- FAIL: TestX", "ok"/"FAIL" of the package, pytest's
// "N failed, M passed".
func outcomes(out string) []string {
	var got []string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "--- "):
			got = append(got, strings.Fields(line)[0]+" "+strings.Fields(line)[2])
		case strings.HasPrefix(line, "FAIL\t"), strings.HasPrefix(line, "ok  \t"):
			got = append(got, strings.Fields(line)[0])
		case strings.Contains(line, " passed") || strings.Contains(line, " failed"):
			f := strings.Fields(strings.Trim(line, "= "))
			got = append(got, strings.Join(f[:min(len(f), 4)], " "))
		}
	}
	slices.Sort(got)
	return got
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A write the records judge allowed, made through a mount of the
// tree's own (the project bound onto an allowed directory, in a mount
// namespace of its own), changes config.toml: the sandbox's overlay
// holds the change, whatever path the call named, and the real file is
// untouched.
func TestSandboxHoldsWhatRecordsMiss(t *testing.T) {
	requireRoot(t)
	root, _ := project(t)
	cfg := filepath.Join(root, "config.toml")
	writeFile(t, cfg, "original\n")
	must(t, os.MkdirAll(filepath.Join(root, "tests/x"), 0o755))
	res := ww(t, root, []string{"--sandbox"}, opBin, "mount-ns-bind", root, filepath.Join(root, "tests/x"), "config.toml")
	if res.code != 86 {
		t.Fatalf("exit %d, want 86\n%s", res.code, res.stderr)
	}
	if data, _ := os.ReadFile(cfg); !bytes.Equal(data, []byte("original\n")) {
		t.Errorf("config.toml changed for real: %q", data)
	}
	if v := violationAt(res.rep, cfg); v == nil || v.Change == nil || v.Change.Kind != "modified" || !slices.Contains(v.SeenBy, report.SeenBySandbox) {
		t.Errorf("%s: %+v (%v)\n%s", cfg, v, keys(res.rep), res.stderr)
	}
	// The root filesystem is overlaid (in the VMs of make vmtest, the
	// initramfs: rootfs, which pivot_root cannot leave), and every
	// filesystem that could be written is: none made read-only instead.
	if sb := res.rep.Sandbox; sb == nil || !slices.Contains(sb.Overlaid, "/") || len(sb.ReadOnly) > 0 {
		t.Errorf("sandbox %+v", sb)
	}
}

// Inside a container whose root is an overlay already (as Docker's and
// CI images' are), the sandbox's overlays stack on it: a root made here
// as an overlay over a bind of /, with the special filesystems bound in,
// and writewatch run in it (chroot) keeps the container's files as they
// were. The script uses only what busybox's applets do too, so that it
// runs in make vmtest's guests.
func TestSandboxOnAnOverlayRoot(t *testing.T) {
	requireRoot(t)
	root, _ := project(t)
	writeFile(t, filepath.Join(root, "config.toml"), "original\n")
	box := t.TempDir()
	report := filepath.Join(root, "tests", "report.json")
	script := `set -e
mount --make-rprivate /
mkdir -p $B/lower $B/layers $B/merged
mount -t tmpfs tmpfs $B/layers
mkdir $B/layers/upper $B/layers/work
mount --bind / $B/lower
mount -t overlay overlay -o lowerdir=$B/lower,upperdir=$B/layers/upper,workdir=$B/layers/work $B/merged
# The project shows through where /var/tmp lies on the root filesystem;
# where it is a filesystem of its own (the VMs' tmpfs), the project is
# copied into the container's root, as an image's files would be.
[ -e $B/merged$P/config.toml ] || { mkdir -p $B/merged$P && cp -a $P/. $B/merged$P; }
for d in proc sys dev dev/pts dev/shm; do mount --bind /$d $B/merged/$d; done
mount --bind /sys/kernel/btf $B/merged/sys/kernel/btf 2>/dev/null || true
set +e
chroot $B/merged sh -c "cd $P && $WW --sandbox --json $R -- sh -c 'echo changed > config.toml; echo stray > stray.txt; echo ok > tests/ok.txt'"
echo "exit=$?"
chroot $B/merged cat $P/config.toml
chroot $B/merged sh -c "test -e $P/stray.txt && echo stray-made || echo no-stray"
chroot $B/merged cat $R
`
	cmd := exec.Command("unshare", "--mount", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "B="+box, "P="+root, "WW="+wwBin, "R="+report)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{"exit=86", "\noriginal\n", "no-stray", `"seen_by"`, `"sandbox"`} {
		if !strings.Contains(s, want) {
			t.Errorf("%q missing:\n%s", want, s)
		}
	}
}

// A normal user's setcap copy (CAP_BPF and CAP_PERFMON, no
// CAP_SYS_ADMIN) cannot make the sandbox: one line says why and what to
// run instead, and writewatch exits with 87 before COMMAND runs.
func TestSandboxWithoutPrivilegeIs87(t *testing.T) {
	u := makeUser(t)
	root, ww := setcapCopy(t, u)
	code, stderr := runAs(t, u, root, u.env(), nil, ww, "--sandbox", "--", "sh", "-c", "echo ran > tests/ran")
	if code != 87 {
		t.Errorf("exit %d, want 87\n%s", code, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 ||
		!strings.Contains(stderr, "--sandbox") || !strings.Contains(stderr, "sudo") {
		t.Errorf("want one line that says why and what to run:\n%s", stderr)
	}
	if exists(filepath.Join(root, "tests/ran")) {
		t.Error("COMMAND ran")
	}
}
