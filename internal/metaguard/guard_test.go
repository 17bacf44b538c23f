package metaguard_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/metaguard"
)

func TestMain(m *testing.M) {
	// The guard's filter is installed by launch's trampoline: this binary.
	if launch.IsTrampoline() {
		os.Exit(launch.Trampoline())
	}
	os.Exit(m.Run())
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// A real process tree under the filter: changes under the allowed
// directory carry on, by absolute and relative path, by fd and from a
// child process; changes to the protected file fail with EPERM and change
// nothing, also through a symlink, /proc/self/fd or a relative path from
// another directory, /dev/stdin and /dev/fd/N (the caller's descriptors,
// not the guard's), a symlink followed before ".." (allowed/x -> .,
// then allowed/x/../keep.txt), or one followed for the slash after it
// although the call says not to (touch -h allowed/up/, up -> ..); a pipe
// is not a file and carries on.
func TestGuardAnswersRealCalls(t *testing.T) {
	if err := metaguard.Supported(); err != nil {
		t.Fatalf("this kernel cannot run the metadata guard: %v", err)
	}
	root := t.TempDir()
	allowed := filepath.Join(root, "allowed")
	keep := filepath.Join(root, "keep.txt")
	if err := os.MkdirAll(filepath.Join(allowed, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{keep, filepath.Join(allowed, "a"), filepath.Join(allowed, "sub/b")} {
		if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../keep.txt", filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	script := `
check() { name=$1; shift; "$@" 2>/dev/null; echo "$name $?"; }
check abs chmod 600 allowed/a
check rel sh -c 'cd allowed/sub && chmod 600 b'
check keep chmod 600 keep.txt
check dotdot sh -c 'cd allowed && chmod 600 ../keep.txt'
check link chmod 600 allowed/link
check procfd sh -c 'exec 3<keep.txt; chmod 600 /proc/self/fd/3'
check pipe sh -c 'echo | chmod 600 /proc/self/fd/0'
check touch touch keep.txt
check stdin sh -c 'chmod 600 /dev/stdin < keep.txt'
check stdinok sh -c 'chmod 600 /dev/stdin < allowed/a'
check devfd sh -c 'exec 4<keep.txt; chmod 600 /dev/fd/4'
check linkdotdot sh -c 'ln -s . allowed/x && chmod 600 allowed/x/../keep.txt'
check slashnofollow sh -c 'ln -s .. allowed/up && touch -h allowed/up/'
`
	var out bytes.Buffer
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	read := make(chan struct{})
	go func() { out.ReadFrom(r); close(read) }()
	proc, err := launch.Start("/bin/sh", launch.Spec{
		Args: []string{"sh", "-c", script}, Dir: root, Stdout: w, Stderr: w,
		MetadataGuard: true,
	})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	l := proc.MetadataListener()
	if l == nil {
		t.Fatal("no listener from the trampoline")
	}
	var judged []string
	g, err := metaguard.Start(l, func(path string) bool {
		judged = append(judged, path)
		return path == allowed || strings.HasPrefix(path, allowed+"/")
	})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := proc.Wait(); code != 0 || err != nil {
		t.Errorf("sh: %d %v", code, err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	<-read // EOF: every copy of w is closed
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		name, code, _ := strings.Cut(line, " ")
		got[name] = code
	}
	want := map[string]string{"abs": "0", "rel": "0", "keep": "1", "dotdot": "1", "link": "1", "procfd": "1", "pipe": "0", "touch": "1",
		"stdin": "1", "stdinok": "0", "devfd": "1", "linkdotdot": "1",
		"slashnofollow": "1"}
	for name, code := range want {
		if got[name] != code {
			t.Errorf("%s: exit %q, want %s", name, got[name], code)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s\npaths judged: %q", out.String(), judged)
	}
	if m := mode(t, keep); m != 0o644 {
		t.Errorf("keep.txt is %v, want it unchanged", m)
	}
	if m := mode(t, filepath.Join(allowed, "sub/b")); m != 0o600 {
		t.Errorf("allowed/sub/b is %v, want 0600", m)
	}
	if n := g.Refused.Load(); n != 9 {
		t.Errorf("refused %d calls, want 9 (paths judged: %q)", n, judged)
	}
}
