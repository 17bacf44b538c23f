package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func mustOpen(t *testing.T, path string, opts Options) *File {
	t.Helper()
	f, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A file replaces the one before it whole, and Open leaves nothing
// behind.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ww.json")
	os.WriteFile(path, []byte("old, and longer than the new one\n"), 0o600)
	f := mustOpen(t, path, Options{})
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("Open left %v", left)
	}
	if err := f.Replace(writeString("new\n")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "new\n" {
		t.Errorf("file holds %q", got)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("Replace left %v", left)
	}
}

// A symbolic link planted at the name after Open is replaced, never
// followed; one there before Open is refused.
func TestSymlinkAtTheNameIsNotFollowed(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	os.WriteFile(config, []byte("precious\n"), 0o644)
	path := filepath.Join(dir, "ww.json")
	f := mustOpen(t, path, Options{})
	if err := os.Symlink("config.toml", path); err != nil {
		t.Fatal(err)
	}
	if err := f.Replace(writeString("report\n")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, config); got != "precious\n" {
		t.Errorf("config.toml holds %q: the report went through the link", got)
	}
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		t.Errorf("ww.json is %v (%v), want the report as a regular file", st.Mode(), err)
	}

	os.Remove(path)
	os.Symlink("config.toml", path)
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Open through a link to a file: %v, want refused", err)
	}
	if got := readFile(t, config); got != "precious\n" {
		t.Errorf("config.toml holds %q", got)
	}
}

// A link to a device or a FIFO (/dev/stdout, bash's /dev/fd/63) is
// followed: the stream is opened at Open and written as it is.
func TestStreamThroughLink(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "out")
	os.Symlink(fifo, link)
	got := make(chan string)
	go func() {
		data, _ := os.ReadFile(fifo)
		got <- string(data)
	}()
	f := mustOpen(t, link, Options{})
	if err := f.Replace(writeString("through the pipe\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if s := <-got; s != "through the pipe\n" {
		t.Errorf("the FIFO's reader got %q", s)
	}
	n := mustOpen(t, "/dev/null", Options{})
	if err := n.Replace(writeString("x")); err != nil {
		t.Errorf("/dev/null: %v", err)
	}
}

// The directory is the one opened at Open, whatever happens to its path
// during the run.
func TestDirectoryIsHeld(t *testing.T) {
	base := t.TempDir()
	sub, elsewhere := filepath.Join(base, "sub"), filepath.Join(base, "elsewhere")
	os.Mkdir(sub, 0o755)
	os.Mkdir(elsewhere, 0o755)
	f := mustOpen(t, filepath.Join(sub, "ww.json"), Options{})
	if err := os.Rename(sub, filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(elsewhere, sub)
	if err := f.Replace(writeString("report\n")); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(elsewhere, "ww.json")) {
		t.Error("the report followed a link that replaced its directory")
	}
	if got := readFile(t, filepath.Join(base, "moved", "ww.json")); got != "report\n" {
		t.Errorf("the report in its directory holds %q", got)
	}
}

// The suite removes the file's directory and makes it again (rm -rf
// build; mkdir -p build/reports, as make clean test does): the file is
// written at the path given, in the directory there at the end, and read
// there. A link planted in the directory's place is never followed: the
// file goes to the directory opened at Open while that is there, and is
// refused once it is gone.
func TestDirectoryMadeAgain(t *testing.T) {
	base := t.TempDir()
	build := filepath.Join(base, "build")
	dir := filepath.Join(build, "reports")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "ww.json")
	f := mustOpen(t, path, Options{})
	if err := os.RemoveAll(build); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o755)
	os.WriteFile(path, []byte("last run\n"), 0o644)
	var last []byte
	if err := f.Read(func(r io.Reader) error {
		var err error
		last, err = io.ReadAll(r)
		return err
	}); err != nil || string(last) != "last run\n" {
		t.Errorf("read %q (%v), want the file in the directory made again", last, err)
	}
	if err := f.Replace(writeString("report\n")); err != nil {
		t.Fatalf("Replace after the directory was made again: %v", err)
	}
	if got := readFile(t, path); got != "report\n" {
		t.Errorf("the report holds %q", got)
	}

	elsewhere := filepath.Join(base, "elsewhere")
	os.MkdirAll(filepath.Join(elsewhere, "reports"), 0o755)
	for _, plant := range []struct{ name, link string }{{"the directory", dir}, {"a directory above it", build}} {
		g := mustOpen(t, path, Options{})
		os.RemoveAll(build)
		os.MkdirAll(build, 0o755)
		os.Symlink(filepath.Join(elsewhere, "reports"), dir)
		if plant.link == build {
			os.RemoveAll(build)
			os.Symlink(elsewhere, build)
		}
		if err := g.Replace(writeString("report\n")); err == nil {
			t.Errorf("%s removed and a link made in its place: the report was written", plant.name)
		}
		if exists(filepath.Join(elsewhere, "reports", "ww.json")) {
			t.Errorf("%s removed and a link made in its place: the report followed it", plant.name)
		}
		os.Remove(dir)
		os.Remove(build)
		os.MkdirAll(dir, 0o755)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ path, want string }{
		{dir, "is a directory"},
		{filepath.Join(dir, "missing", "ww.json"), "missing"},
		{filepath.Join(dir, "."), "directory"},
	} {
		if _, err := Open(tc.path, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s): %v, want %q", tc.path, err, tc.want)
		}
	}
}

// Mode is the file's mode whatever the umask (node_exporter reads the
// textfile as another user).
func TestMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "ww.prom")
	f := mustOpen(t, path, Options{Mode: 0o644})
	if err := f.Replace(writeString("x 1\n")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644", st.Mode(), err)
	}
}

// Read reads the file there now, never through a link.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ww.prom")
	f := mustOpen(t, path, Options{})
	read := func() string {
		var got string
		if err := f.Read(func(r io.Reader) error {
			data, err := io.ReadAll(r)
			got = string(data)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := read(); got != "" {
		t.Errorf("missing file read as %q", got)
	}
	os.WriteFile(path, []byte("last 1\n"), 0o644)
	if got := read(); got != "last 1\n" {
		t.Errorf("read %q", got)
	}
	os.Remove(path)
	os.WriteFile(filepath.Join(dir, "secret"), []byte("secret\n"), 0o600)
	os.Symlink("secret", path)
	if got := read(); got != "" {
		t.Errorf("read %q through a link", got)
	}
}

// The step summary is appended to, never through a link.
func TestAppend(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.md")
	os.WriteFile(path, []byte("earlier step\n"), 0o644)
	if err := Append(path, Options{}, writeString("### writewatch\n")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "earlier step\n### writewatch\n" {
		t.Errorf("summary holds %q", got)
	}
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("root only\n"), 0o600)
	link := filepath.Join(dir, "link.md")
	os.Symlink(secret, link)
	if err := Append(link, Options{}, writeString("x\n")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Append through a link: %v, want refused", err)
	}
	if got := readFile(t, secret); got != "root only\n" {
		t.Errorf("the link's target holds %q", got)
	}
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	if err := Append(fifo, Options{}, writeString("x\n")); err == nil {
		t.Error("Append to a FIFO with no reader: no error")
	}
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to take another user's rights")
	}
}

var nobody = &User{UID: 65534, GID: 65534}

// As the user: what is created belongs to them, and what they may not
// write is refused, though writewatch is root.
func TestAsUser(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	if _, err := Open(filepath.Join(dir, "ww.json"), Options{As: nobody}); !errors.Is(err, os.ErrPermission) {
		t.Errorf("Open in root's directory as nobody: %v, want permission denied", err)
	}
	mine := filepath.Join(dir, "mine")
	os.Mkdir(mine, 0o755)
	os.Chown(mine, int(nobody.UID), int(nobody.GID))
	path := filepath.Join(mine, "ww.json")
	f := mustOpen(t, path, Options{As: nobody})
	if err := f.Replace(writeString("report\n")); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil || st.Uid != nobody.UID || st.Gid != nobody.GID {
		t.Errorf("report owned by %d:%d (%v), want nobody's", st.Uid, st.Gid, err)
	}
	// A link in the user's directory to a root-only file: appending as
	// the user would be refused even if links were followed.
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("root only\n"), 0o600)
	os.Symlink(secret, filepath.Join(mine, "summary.md"))
	if err := Append(filepath.Join(mine, "summary.md"), Options{As: nobody}, writeString("x\n")); err == nil {
		t.Error("appended through a link to a root-only file")
	}
	if got := readFile(t, secret); got != "root only\n" {
		t.Errorf("secret holds %q", got)
	}
	if os.Geteuid() != 0 {
		t.Error("the process lost root")
	}
}

// A directory COMMAND's user can write but does not own is refused; one
// of their own, or one they cannot write, is not.
func TestCommandsDirectory(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o755)
	os.Chmod(base, 0o755)
	shared, theirs, closed := filepath.Join(base, "shared"), filepath.Join(base, "theirs"), filepath.Join(base, "closed")
	for _, d := range []string{shared, theirs, closed} {
		os.Mkdir(d, 0o755)
	}
	os.Chmod(shared, 0o1777)
	os.Chown(theirs, int(nobody.UID), int(nobody.GID))
	opts := Options{Command: nobody}
	if _, err := Open(filepath.Join(shared, "ww.json"), opts); !errors.Is(err, ErrSharedDir) || !strings.Contains(err.Error(), "could plant a file or link") {
		t.Errorf("a sticky world-writable directory: %v, want refused", err)
	}
	// A directory is said to be one, wherever it is.
	os.Mkdir(filepath.Join(shared, "sub"), 0o755)
	if _, err := Open(filepath.Join(shared, "sub"), opts); !errors.Is(err, ErrIsDir) {
		t.Errorf("a directory in a shared one: %v, want %v", err, ErrIsDir)
	}
	if err := Append(filepath.Join(shared, "summary.md"), opts, writeString("x")); err == nil {
		t.Error("Append in a sticky world-writable directory: not refused")
	}
	for _, d := range []string{theirs, closed} {
		if _, err := Open(filepath.Join(d, "ww.json"), opts); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if _, err := Open(filepath.Join(shared, "ww.json"), Options{Command: &User{}}); err != nil {
		t.Errorf("COMMAND as root: %v", err)
	}
}
