package launch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseMarkedPath(t *testing.T) {
	for out, want := range map[string]string{
		pathMarker + "\n/usr/bin:/bin\n":                                      "/usr/bin:/bin",
		"Welcome!\n" + pathMarker + "\n/a:/b\n":                               "/a:/b",
		"motd mentions " + pathMarker + "\n" + pathMarker + "\n/x\ntrailer\n": "/x",
		"no marker\n/usr/bin\n":                                               "",
		pathMarker + "\n":                                                     "",
	} {
		got, ok := parseMarkedPath([]byte(out))
		if got != want || ok != (want != "") {
			t.Errorf("parseMarkedPath(%q) = %q, %v; want %q", out, got, ok, want)
		}
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"writewatch", "--json", "out dir/r.json", "--", "go", "test", "./...", "it's", ""})
	want := `writewatch --json 'out dir/r.json' -- go test ./... 'it'\''s' ''`
	if got != want {
		t.Errorf("shellJoin = %s\nwant        %s", got, want)
	}
}

func TestNotFoundHint(t *testing.T) {
	var none *Identity
	if h := none.NotFoundHint("go"); h != "" {
		t.Errorf("no sudo: hint %q", h)
	}
	known := &Identity{Name: "dev", Path: "/usr/bin", PathFrom: "the environment sudo was started with"}
	if h := known.NotFoundHint("go"); !strings.Contains(h, "dev's PATH") {
		t.Errorf("PATH known: hint %q", h)
	}
	unknown := &Identity{Name: "dev", PathErr: os.ErrDeadlineExceeded}
	if h := unknown.NotFoundHint("go"); !strings.Contains(h, `run instead: sudo env "PATH=$PATH" `) {
		t.Errorf("PATH unknown: hint %q", h)
	}
	if h := unknown.NotFoundHint("./go"); h != "" {
		t.Errorf("a path: hint %q", h)
	}
}

// The login shell runs as the user, reads their startup files, and its
// chatter is skipped.
func TestLoginShellPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs the shell as another user: needs root")
	}
	home := t.TempDir()
	// The user reads its startup file.
	os.Chmod(filepath.Dir(home), 0o755)
	os.Chmod(home, 0o755)
	profile := "echo welcome\nPATH=\"$PATH:/opt/from-profile\"; export PATH\n"
	if err := os.WriteFile(filepath.Join(home, ".profile"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	id := &Identity{UID: 65534, GID: 65534, Name: "nobody", Home: home, Shell: "/bin/sh"}
	path, err := loginShellPath(id, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, ":/opt/from-profile") {
		t.Errorf("PATH = %q, want it to end with the dir ~/.profile adds", path)
	}

	if err := os.WriteFile(filepath.Join(home, ".profile"), []byte("sleep 60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loginShellPath(id, 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("a shell that hangs: error %v", err)
	}

	id.Shell = "/usr/sbin/nologin"
	if _, err := loginShellPath(id, time.Second); err == nil || !strings.Contains(err.Error(), "no login shell") {
		t.Errorf("nologin: error %v", err)
	}
}

func TestSudoCallerPathNeedsSudo(t *testing.T) {
	// No sudo among this test's ancestors runs as an unused uid.
	if path, ok := sudoCallerPath(os.Getppid(), 4000000000); ok {
		t.Errorf("found a sudo caller's PATH %q", path)
	}
}

// The identity travels to the trampoline as JSON, also when the user's
// PATH could not be read.
func TestIdentityToTrampoline(t *testing.T) {
	id := &Identity{UID: 1000, GID: 1000, Name: "dev", Home: "/home/dev", PathErr: os.ErrDeadlineExceeded}
	data, err := json.Marshal(trampolineSpec{Path: "/bin/true", User: id})
	if err != nil {
		t.Fatal(err)
	}
	var back trampolineSpec
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("the trampoline cannot read its spec: %v", err)
	}
	if back.User == nil || back.User.UID != 1000 || back.User.Home != "/home/dev" {
		t.Errorf("the identity came back as %+v", back.User)
	}
}
