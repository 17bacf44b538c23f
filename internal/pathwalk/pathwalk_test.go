package pathwalk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// tree builds a project and another directory, with links: tests/x -> .,
// an absolute link away, a relative one that climbs, loops, a chain, a
// dangling link, chains of MaxLinks and MaxLinks+1 links, and a link to
// /proc/self/fd.
func tree(t *testing.T) (proj, other string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj, other = filepath.Join(root, "proj"), filepath.Join(root, "other")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(proj, "tests", "deep"), 0o755))
	must(os.MkdirAll(filepath.Join(other, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(proj, "config.toml"), nil, 0o644))
	links := map[string]string{
		"tests/x":       ".",
		"tests/away":    filepath.Join(other, "a", "b"),
		"tests/deep/up": "../deep/../x/..",
		"tests/loop":    "loop",
		"tests/ping":    "pong",
		"tests/pong":    "ping",
		"chain1":        "chain2",
		"chain2":        "./tests/../chain3",
		"chain3":        "tests/deep",
		"file":          "config.toml",
		"dirlink":       filepath.Join(other, "a"),
		"dangling":      "missing/target",
		"fdlink":        "/proc/self/fd",
		"cfg2":          "tests/x/../config.toml",
	}
	for i := range MaxLinks + 1 {
		links[fmt.Sprintf("l%d", i)] = fmt.Sprintf("l%d", i+1) // l0 … l40 -> l41
		links[fmt.Sprintf("m%d", i)] = fmt.Sprintf("m%d", i+1)
	}
	delete(links, fmt.Sprintf("l%d", MaxLinks))
	links[fmt.Sprintf("l%d", MaxLinks-1)] = "config.toml" // l0: 40 links
	links[fmt.Sprintf("m%d", MaxLinks)] = "config.toml"   // m0: 41 links
	for name, target := range links {
		must(os.Symlink(target, filepath.Join(proj, name)))
	}
	return proj, other
}

type walkCase struct {
	in   string
	o    Options
	want string
	err  error
}

func check(t *testing.T, cases []walkCase) {
	t.Helper()
	for _, c := range cases {
		got, err := Resolve(c.in, c.o)
		if got != c.want || (c.err == nil) != (err == nil) || (c.err != nil && !errors.Is(err, c.err)) {
			t.Errorf("Resolve(%q, %+v) = %q, %v; want %q, %v", c.in, c.o, got, err, c.want, c.err)
		}
	}
}

// Symlinks are followed where they stand, before a ".." after them:
// tests/x/../config.toml with tests/x -> . is the project's config.toml.
func TestResolve(t *testing.T) {
	proj, other := tree(t)
	entry, nofollow, follow := Options{Last: Entry}, Options{Last: NoFollow}, Options{Last: Follow}
	check(t, []walkCase{
		{proj + "/tests/x/../config.toml", entry, proj + "/config.toml", nil},
		{proj + "/tests/x/x/x/../config.toml", entry, proj + "/config.toml", nil},
		{proj + "/tests/away/../c.txt", entry, other + "/a/c.txt", nil},
		{proj + "/tests/deep/up/../f", entry, filepath.Dir(proj) + "/f", nil},
		{proj + "/tests/away/..", entry, other + "/a", nil},
		{proj + "//tests/./deep/", entry, proj + "/tests/deep", nil},
		{proj + "/chain1/../f", entry, proj + "/tests/f", nil},
		{"/", entry, "/", nil},
		{"/..", entry, "/", nil},
		{"/../..//.", follow, "/", nil},

		// The last component: the entry itself, or followed.
		{proj + "/tests/x", entry, proj + "/tests/x", nil},
		{proj + "/tests/x/", entry, proj + "/tests/x", nil},
		{proj + "/file", nofollow, proj + "/file", nil},
		{proj + "/file", follow, proj + "/config.toml", nil},
		{proj + "/dirlink/", entry, proj + "/dirlink", nil},
		{proj + "/dirlink/", nofollow, other + "/a", nil}, // a trailing slash follows it
		{proj + "/dirlink//", follow, other + "/a", nil},
		{proj + "/tests/deep/", nofollow, proj + "/tests/deep", nil},
		{proj + "/chain1", follow, proj + "/tests/deep", nil},
		{proj + "/cfg2", follow, proj + "/config.toml", nil},

		// Relative paths start from Dir.
		{"tests/x/../config.toml", Options{Dir: proj}, proj + "/config.toml", nil},
		{"../tests/away/..", Options{Dir: proj + "/tests"}, other + "/a", nil},
		{"a/../b", entry, "b", ErrRelative},

		// Where the walk cannot go on, the rest as text, with the error.
		{proj + "/gone/../tests/x/../f", entry, proj + "/tests/f", fs.ErrNotExist},
		{proj + "/config.toml/x", follow, proj + "/config.toml/x", syscall.ENOTDIR},
		{proj + "/dangling", follow, proj + "/missing/target", fs.ErrNotExist},
		{proj + "/dangling", nofollow, proj + "/dangling", nil},
		{proj + "/tests/loop/../f", entry, proj + "/tests/f", syscall.ELOOP},
		{proj + "/tests/ping", follow, proj + "/tests/ping", syscall.ELOOP},
		{proj + "/l0", follow, proj + "/config.toml", nil},
		{proj + "/m0", follow, proj + fmt.Sprintf("/m%d", MaxLinks), syscall.ELOOP},

		// With no caller, /proc/self would be this process: not read.
		{"/proc/self/cwd/../x", entry, "/proc/self/x", ErrNoCaller},
		{"/proc/1/cwd/x", follow, "/proc/1/cwd/x", ErrNoCaller},
		{proj + "/fdlink/0/../x", entry, "/proc/self/fd/x", ErrNoCaller},
		{"/proc/../etc/x", entry, "/etc/x", nil},
		{"/proc", follow, "/proc", nil},
	})
}

// For a caller, /proc/self and /proc/thread-self are its own, and its
// descriptors' links name its files: a file removed since by the name it
// had, a pipe by none.
func TestResolveForCaller(t *testing.T) {
	proj, _ := tree(t)
	held, err := os.Open(filepath.Join(proj, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	gone := filepath.Join(proj, "gone.txt")
	removed, err := os.Create(gone)
	if err != nil {
		t.Fatal(err)
	}
	defer removed.Close()
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	cmd := exec.Command("sleep", "60")
	cmd.Dir = filepath.Join(proj, "tests", "deep")
	cmd.ExtraFiles = []*os.File{held, removed, pr} // 3, 4, 5
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	dir := "/proc/" + strconv.Itoa(pid)
	caller := func(last Last) Options { return Options{PID: pid, TID: pid, Last: last} }
	check(t, []walkCase{
		{"/proc/self/cwd/../f", caller(Entry), proj + "/tests/f", nil},
		{"/proc/thread-self/cwd/x", caller(Entry), proj + "/tests/deep/x", nil},
		{"/proc/thread-self/cwd/x", Options{PID: pid}, proj + "/tests/deep/x", nil},
		{"/proc/self/cwd", caller(Entry), dir + "/cwd", nil},
		{"/proc/self/fd/3", caller(Follow), proj + "/config.toml", nil},
		{"/proc/self/fd/3", caller(NoFollow), dir + "/fd/3", nil},
		{proj + "/fdlink/3", caller(Follow), proj + "/config.toml", nil},
		{"/dev/fd/3", caller(Follow), proj + "/config.toml", nil},
		{"/proc/self/fd/4", caller(Follow), gone, fs.ErrNotExist},
		{"/proc/self/fd/5", caller(Follow), "", ErrNotFile},
		{"/proc/mounts", caller(Follow), dir + "/mounts", nil}, // -> self/mounts
		{"../x/../f", Options{PID: pid, TID: pid, Dir: proj + "/tests/deep"}, proj + "/f", nil},
	})
}

func TestDescriptor(t *testing.T) {
	for target, want := range map[string]string{
		"/home/u/f":            "/home/u/f",
		"/home/u/f (deleted)":  "/home/u/f",
		"pipe:[1234]":          "",
		"socket:[99]":          "",
		"anon_inode:[eventfd]": "",
		"self/mounts":          "self/mounts",
	} {
		got, ok := Descriptor(target)
		if got != want || ok != (want != "") {
			t.Errorf("Descriptor(%q) = %q, %v; want %q", target, got, ok, want)
		}
	}
}

// A caller in a chroot: absolute paths, absolute links and ".." at the
// top stay inside its root; a working directory outside it (a process
// that left its chroot) is walked from this process's root.
func TestResolveInRoot(t *testing.T) {
	proj, other := tree(t)
	jail := filepath.Dir(proj)
	check(t, []walkCase{
		{in: "/proj/config.toml", o: Options{Root: jail}, want: filepath.Join(proj, "config.toml")},
		{in: "/../../proj/tests", o: Options{Root: jail}, want: filepath.Join(proj, "tests")},
		{in: "config.toml", o: Options{Root: jail, Dir: proj}, want: filepath.Join(proj, "config.toml")},
		{in: "../../..", o: Options{Root: jail, Dir: proj}, want: jail},
		{in: "/proj/file", o: Options{Root: jail, Last: Follow}, want: filepath.Join(proj, "config.toml")},
		// tests/away -> other/a/b, absolute: inside the root, other is
		// not where this process finds it.
		{in: "/tests/away", o: Options{Root: proj, Last: Follow}, want: filepath.Join(proj, other, "a", "b"), err: fs.ErrNotExist},
		{in: "/", o: Options{Root: jail}, want: jail},
		{in: "../config.toml", o: Options{Root: filepath.Join(proj, "tests"), Dir: proj}, want: filepath.Join(jail, "config.toml")},
	})
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		path, dir string
		want      bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b/c", "/a/b", true},
		{"/a/bc", "/a/b", false},
		{"/a", "/a/b", false},
		{"/a/b", "/", true},
		{"/", "/", true},
		{"/x", "/a", false},
	} {
		if got := Within(c.path, c.dir); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", c.path, c.dir, got, c.want)
		}
	}
}

// Links holds the latest change of the symlinks the walk follows, on
// the way or in the last component; a walk that follows none leaves it.
func TestResolveLinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(dir+"/real", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/real/file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", dir+"/dirlink"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file", dir+"/real/link"); err != nil {
		t.Fatal(err)
	}
	ctime := func(p string) time.Time {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	long := time.Unix(1, 0)
	for _, c := range []struct {
		name string
		path string
		last Last
		want time.Time
	}{
		{"link in the last component", dir + "/real/link", Follow, ctime(dir + "/real/link")},
		{"last component not followed", dir + "/real/link", Entry, long},
		{"link on the way", dir + "/dirlink/file", Follow, ctime(dir + "/dirlink")},
		{"both, the latest", dir + "/dirlink/link", Follow, ctime(dir + "/real/link")},
		{"no symlink", dir + "/real/file", Follow, long},
	} {
		links := long
		got, err := Resolve(c.path, Options{Last: c.last, Links: &links})
		if err != nil {
			t.Errorf("%s: Resolve = %q, %v", c.name, got, err)
		}
		if !links.Equal(c.want) {
			t.Errorf("%s: links %v, want %v", c.name, links, c.want)
		}
	}
}

// A path that is gone when it is followed tells nothing of where a
// call's lookup went: Gone.
func TestResolveGone(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		path string
		last Last
		want bool
	}{
		{"last component gone, followed", dir + "/gone", Follow, true},
		{"directory gone", dir + "/gone/file", Entry, true},
		{"last component gone, not looked at", dir + "/gone", Entry, false},
	} {
		gone := false
		got, err := Resolve(c.path, Options{Last: c.last, Gone: &gone})
		if got != c.path {
			t.Errorf("%s: Resolve = %q, %v; want %q", c.name, got, err, c.path)
		}
		if gone != c.want {
			t.Errorf("%s: gone %v, want %v", c.name, gone, c.want)
		}
	}
}
