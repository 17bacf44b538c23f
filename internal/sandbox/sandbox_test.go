package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// start makes a sandbox over this machine's mounts for a project whose
// config allows tests/**, with a file config.toml, a directory old/ and
// a file gone.txt in it.
func start(t testing.TB) (*Sandbox, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_ADMIN) to make a mount namespace and overlays")
	}
	// In the temp dir, where make dogfood lets the tests write: the
	// project's own allowlist (no defaults) overlays it in the sandbox.
	proj := filepath.Join(t.TempDir(), "proj")
	for _, d := range []string{"tests", "old/sub"} {
		must(t, os.MkdirAll(filepath.Join(proj, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(proj, ".writewatch.yaml"), []byte("allow:\n  - tests/**\n  - gen/*.out\ndefaults: false\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(proj, "config.toml"), []byte("a = 1\nb = 2\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(proj, "gone.txt"), []byte("x"), 0o644))
	must(t, os.WriteFile(filepath.Join(proj, "old/sub/f"), []byte("f"), 0o644))
	list, err := allowlist.Load(allowlist.Options{WorkDir: proj, Home: "/nonexistent", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := mountinfo.Read()
	if err != nil {
		t.Fatal(err)
	}
	stage := t.TempDir()
	sb, err := Start(NewPlan(list, mounts, stage), stage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb, proj
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// run runs a shell script in the sandbox, in dir.
func run(t testing.TB, sb *Sandbox, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	var out []byte
	var err error
	sb.Do(func() { out, err = cmd.CombinedOutput() })
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// What COMMAND writes outside the allowlist stays in the sandbox, where
// COMMAND reads it back; what the allowlist allows lands for real; the
// changes list what the sandbox holds otherwise than the real files.
func TestSandboxKeepsWritesOutsideTheAllowlist(t *testing.T) {
	sb, proj := start(t)
	run(t, sb, proj, `echo 'a = 9' > config.toml && grep -q 'a = 9' config.toml
echo ok > tests/ok.txt
mkdir new && echo n > new/file
rm gone.txt
mv old moved
mkdir -p gen && echo o > gen/x.out
mkdir -p tests/deep && echo d > tests/deep/y.out
chmod 600 config.toml`)
	if data, _ := os.ReadFile(filepath.Join(proj, "config.toml")); string(data) != "a = 1\nb = 2\n" {
		t.Errorf("config.toml changed for real: %q", data)
	}
	if _, err := os.Stat(filepath.Join(proj, "tests/ok.txt")); err != nil {
		t.Errorf("the allowed write did not land: %v", err)
	}
	for _, p := range []string{"gone.txt", "old/sub/f"} {
		if _, err := os.Stat(filepath.Join(proj, p)); err != nil {
			t.Errorf("%s gone for real: %v", p, err)
		}
	}
	for _, p := range []string{"new", "moved", "gen"} {
		if _, err := os.Lstat(filepath.Join(proj, p)); err == nil {
			t.Errorf("%s made for real", p)
		}
	}
	changes, err := sb.Changes()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Kind{}
	for _, c := range changes {
		if rel, err := filepath.Rel(proj, c.Path); err == nil && rel[0] != '.' {
			got[rel] = c.Kind
		}
	}
	want := map[string]Kind{
		"config.toml": Modified, "new": Created, "new/file": Created, "gone.txt": Removed,
		"moved": Moved, "old": Removed, "gen": Created, "gen/x.out": Created,
	}
	for p, k := range want {
		if got[p] != k {
			t.Errorf("%s: %q, want %q (all: %v)", p, got[p], k, got)
		}
	}
	if _, ok := got["tests/ok.txt"]; ok {
		t.Errorf("the allowed write is a change of the sandbox's: %v", got)
	}
	// The allowed glob's file is not applied: its directory, which the
	// allowlist does not allow, is not there for real. Nothing else is
	// applied.
	if err := sb.Apply(changes); err == nil || !contains(err.Error(), "gen/x.out") {
		t.Errorf("applying gen/x.out, in a directory not there: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(proj, "gen")); err == nil {
		t.Error("gen made for real")
	}
	if data, err := os.ReadFile(filepath.Join(proj, "tests/deep/y.out")); err != nil || string(data) != "d\n" {
		t.Errorf("tests/deep/y.out: %q %v", data, err)
	}
	if data, _ := os.ReadFile(filepath.Join(proj, "config.toml")); string(data) != "a = 1\nb = 2\n" {
		t.Errorf("config.toml applied: %q", data)
	}
	var d string
	for i := range changes {
		if changes[i].Kind == Modified {
			d = sb.Detail(&changes[i]).Diff
		}
	}
	if d == "" || !contains(d, "-a = 1") || !contains(d, "+a = 9") {
		t.Errorf("diff:\n%s", d)
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (s == sub || len(sub) == 0 || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// A kernel whose overlayfs is a module nobody loaded (Debian's cloud
// kernels in an initramfs with no modprobe) refuses the overlay with
// ENODEV: the error says overlayfs is missing and how to load it, rather
// than blaming the root filesystem.
func TestRootRefusedSaysWhatIsMissing(t *testing.T) {
	err := rootRefused("the root filesystem (rootfs)", unix.ENODEV)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no overlayfs (modprobe overlay)") ||
		strings.Contains(err.Error(), "rootfs") {
		t.Errorf("ENODEV: %v", err)
	}
	err = rootRefused("the root filesystem (fuse)", unix.EINVAL)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "the root filesystem (fuse) could not be overlaid") {
		t.Errorf("EINVAL: %v", err)
	}
}
