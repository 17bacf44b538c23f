package launch

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	if IsTrampoline() {
		os.Exit(Trampoline())
	}
	os.Exit(m.Run())
}

func requireLandlock(t *testing.T) int {
	t.Helper()
	abi, err := LandlockABI()
	if err != nil || abi < 3 {
		t.Skipf("Landlock ABI 3 or newer is needed (have %d, %v)", abi, err)
	}
	return abi
}

func hashOf(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// COMMAND started through the trampoline can write only where the rules
// allow, from its first instruction, and keeps its exit code.
func TestLandlockTrampoline(t *testing.T) {
	abi := requireLandlock(t)
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	keep := filepath.Join(dir, "keep.txt")
	if err := os.Mkdir(ok, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("precious\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	before := hashOf(t, keep)
	script := `echo a > ok/a.txt && mkdir ok/d && mv ok/a.txt ok/d/b.txt
(: > keep.txt); rm -f keep.txt; mv keep.txt ok/; echo new > new.txt; mkdir newdir; ln keep.txt ok/hard
exit 7`
	sh, _ := exec.LookPath("sh")
	p, err := Start(sh, Spec{
		Args: []string{"sh", "-c", script}, Dir: dir, Stderr: os.Stderr,
		Landlock: &Landlock{Handled: LandlockWriteRights(abi), Rules: []LandlockRule{{Path: ok, Access: LandlockWriteRights(abi)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait()
	if err != nil || code != 7 {
		t.Fatalf("exit code %d, %v; want 7", code, err)
	}
	if hashOf(t, keep) != before {
		t.Error("keep.txt changed")
	}
	for _, gone := range []string{"new.txt", "newdir", "ok/keep.txt", "ok/hard"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("%s was created", gone)
		}
	}
	if _, err := os.Stat(filepath.Join(ok, "d", "b.txt")); err != nil {
		t.Errorf("allowed writes failed: %v", err)
	}
}

// The identity is taken after the ruleset is in place; COMMAND runs as
// that user and is still restricted.
func TestLandlockTrampolineAsUser(t *testing.T) {
	abi := requireLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	ok := filepath.Join(dir, "ok")
	os.Mkdir(ok, 0o777)
	os.Chmod(ok, 0o777)
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sh, _ := exec.LookPath("sh")
	p, err := Start(sh, Spec{
		Args: []string{"sh", "-c", `id -u; echo x > ok/f && echo ok-written; echo y > denied || echo denied-refused`},
		Dir:  dir, Stdout: out, Stderr: out,
		User:     &Identity{UID: 65534, GID: 65534},
		Landlock: &Landlock{Handled: LandlockWriteRights(abi), Rules: []LandlockRule{{Path: ok, Access: LandlockWriteRights(abi)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(); err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	data, _ := os.ReadFile(out.Name())
	got := string(data)
	if !strings.HasPrefix(got, "65534\n") || !strings.Contains(got, "ok-written") || !strings.Contains(got, "denied-refused") {
		t.Errorf("output %q: want uid 65534, the allowed write and the refused one", got)
	}
}

func TestLandlockTrampolineExecErrors(t *testing.T) {
	abi := requireLandlock(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	ll := &Landlock{Handled: LandlockWriteRights(abi)}
	if _, err := Start(filepath.Join(dir, "missing"), Spec{Args: []string{"missing"}, Landlock: ll}); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v, want ErrNotFound", err)
	}
	if _, err := Start(plain, Spec{Args: []string{"plain"}, Landlock: ll}); !errors.Is(err, ErrNotExecutable) {
		t.Errorf("not executable: %v, want ErrNotExecutable", err)
	}
}

// A ruleset the kernel refuses stops the start with ErrConfine, before
// COMMAND runs.
func TestLandlockTrampolineRefused(t *testing.T) {
	requireLandlock(t)
	mark := filepath.Join(t.TempDir(), "ran")
	sh, _ := exec.LookPath("sh")
	_, err := Start(sh, Spec{
		Args:     []string{"sh", "-c", "touch " + mark},
		Landlock: &Landlock{Handled: 1 << 62}, // no such right
	})
	if !errors.Is(err, ErrConfine) || !strings.Contains(err.Error(), "landlock: create ruleset") {
		t.Errorf("err %v, want ErrConfine from the ruleset", err)
	}
	if _, serr := os.Stat(mark); serr == nil {
		t.Error("COMMAND ran")
	}
}

// A ruleset prepared ahead, with many rules, is the one COMMAND runs
// under, and its descriptor does not reach COMMAND.
func TestLandlockPreparedRuleset(t *testing.T) {
	abi := requireLandlock(t)
	dir := t.TempDir()
	rights := LandlockWriteRights(abi)
	ll := &Landlock{Handled: rights}
	for i := range 3000 {
		p := filepath.Join(dir, fmt.Sprintf("f%d", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		ll.Rules = append(ll.Rules, LandlockRule{Path: p, Access: rights})
	}
	ll.Rules = append(ll.Rules, LandlockRule{Path: filepath.Join(dir, "missing"), Access: rights})
	ll.Prepare()
	script := `echo x > f0 && echo x > f2999 && ls -l /proc/self/fd/ > f1 && echo x > other`
	sh, _ := exec.LookPath("sh")
	p, err := Start(sh, Spec{Args: []string{"sh", "-c", script}, Dir: dir, Landlock: ll})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(); err != nil || code == 0 {
		t.Errorf("exit code %d, %v: the write outside the ruleset should fail", code, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
		t.Error("other was created outside the ruleset")
	}
	for _, f := range []string{"f0", "f2999"} {
		if data, _ := os.ReadFile(filepath.Join(dir, f)); string(data) != "x\n" {
			t.Errorf("%s: %q, the granted write failed", f, data)
		}
	}
	fds, err := os.ReadFile(filepath.Join(dir, "f1"))
	if err != nil || !strings.Contains(string(fds), "/proc/") {
		t.Fatalf("COMMAND's descriptors: %q, %v", fds, err)
	}
	if strings.Contains(string(fds), "landlock") {
		t.Errorf("the ruleset's descriptor reached COMMAND:\n%s", fds)
	}
}
