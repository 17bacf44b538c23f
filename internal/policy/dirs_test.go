package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/launch"
)

// dirsFixture is a temp dir, a home in it and a project, with its
// config, where the test puts it.
type dirsFixture struct {
	tmp, home, proj string
	env             []string
}

func newDirsFixture(t *testing.T, projUnderTmp bool, config string) *dirsFixture {
	t.Helper()
	root := tree(t, "tmp/other/", "home/", "elsewhere/")
	f := &dirsFixture{tmp: root + "/tmp", home: root + "/home", proj: root + "/elsewhere/proj"}
	if projUnderTmp {
		f.proj = f.tmp + "/proj"
	}
	if err := os.MkdirAll(filepath.Join(f.proj, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, f.proj, config)
	f.env = []string{"TMPDIR=" + f.tmp, "HOME=" + f.home, "PATH=/usr/bin:/bin"}
	return f
}

func (f *dirsFixture) load(t *testing.T, command ...string) (*allowlist.List, DirsOptions) {
	t.Helper()
	list, err := allowlist.Load(allowlist.Options{
		WorkDir: f.proj, Home: f.home, Getenv: func(k string) string { return launch.Getenv(f.env, k) },
		Command: command,
		GoEnv: func() (map[string]string, error) {
			return map[string]string{"GOCACHE": f.home + "/.cache/go-build", "GOMODCACHE": f.home + "/go/pkg/mod"}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return list, DirsOptions{Env: f.env, Command: command, WorkDir: f.proj}
}

// A project in the temp dir: COMMAND gets a private temp dir, granted
// whole, while the project stays refused and its tests/ granted; the
// directory goes at the end.
func TestDirsPrivateTempDir(t *testing.T) {
	f := newDirsFixture(t, true, "allow:\n  - tests/**\n")
	list, o := f.load(t, "true")
	d := PlanDirs(list, o)
	if d.TempBase != f.tmp || d.Temp != f.tmp+"/writewatch-tmp-*" {
		t.Fatalf("temp dir %q in %q, want one in %s", d.Temp, d.TempBase, f.tmp)
	}
	if w := d.Make(); len(w) > 0 {
		t.Fatalf("warnings: %v", w)
	}
	if fi, err := os.Stat(d.Temp); err != nil || !fi.IsDir() || filepath.Dir(d.Temp) != f.tmp {
		t.Fatalf("private temp dir %s: %v", d.Temp, err)
	}
	env := d.Env(f.env)
	if launch.Getenv(env, "TMPDIR") != d.Temp || launch.Getenv(env, "GOTMPDIR") != "" {
		t.Errorf("env %v", env)
	}
	if got := launch.Getenv(d.Env(append(f.env, "GOTMPDIR=/elsewhere")), "GOTMPDIR"); got != d.Temp {
		t.Errorf("GOTMPDIR %q, want %s", got, d.Temp)
	}
	p, err := NewPlan(list.Entries(), d.Grants()...)
	if err != nil {
		t.Fatal(err)
	}
	allows := p.Allows()
	for path, want := range map[string]bool{
		d.Temp + "/TestX123/001/f": true,
		d.Temp + "/go-build1/b001": true,
		f.proj + "/tests/new":      true,
		f.proj + "/stray":          false,
		f.tmp + "/new":             false, // a new name beside the project
		f.tmp + "/other/x":         true,
	} {
		if allows(path) != want {
			t.Errorf("%s: granted %v, want %v", path, !want, want)
		}
		if ok, _ := list.Match(path); want && !ok {
			t.Errorf("%s granted, but the allowlist does not allow it", path)
		}
	}
	if i := slices.IndexFunc(p.Dirs, func(dp DirPlan) bool { return dp.Path == d.Temp }); i < 0 ||
		p.Dirs[i].How != Exact || p.Dirs[i].By == nil || p.Dirs[i].By.Source != "default:tmp" {
		t.Errorf("the temp dir's plan: %+v", p.Dirs)
	}
	if err := os.WriteFile(filepath.Join(d.Temp, "left"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(d.Temp); !os.IsNotExist(err) {
		t.Errorf("the private temp dir is still there: %v", err)
	}
}

// A project elsewhere: the temp dir is granted whole, and COMMAND keeps
// its TMPDIR.
func TestDirsNoPrivateTempDirWhenTheTempDirIsGrantedWhole(t *testing.T) {
	f := newDirsFixture(t, false, "allow:\n  - tests/**\n")
	list, o := f.load(t, "true")
	d := PlanDirs(list, o)
	if d.Temp != "" || d.TempBase != "" {
		t.Errorf("temp dir %q in %q", d.Temp, d.TempBase)
	}
	d.Make()
	if got := launch.Getenv(d.Env(f.env), "TMPDIR"); got != f.tmp {
		t.Errorf("TMPDIR %q, want %s", got, f.tmp)
	}
	// A deny entry in the temp dir narrows it: a private one again.
	f2 := newDirsFixture(t, false, "allow:\n  - tests/**\ndeny:\n  - $TMPDIR/secret\n")
	list, o = f2.load(t, "true")
	if d := PlanDirs(list, o); d.TempBase != f2.tmp {
		t.Errorf("a deny entry in the temp dir: temp dir %q in %q", d.Temp, d.TempBase)
	}
}

// Python's and pytest's caches go to directories the python-cache
// default allows by their names, granted whole; they stay.
func TestDirsPythonCaches(t *testing.T) {
	f := newDirsFixture(t, false, "allow:\n  - tests/**\n")
	f.env = append(f.env, "PYTEST_ADDOPTS=-x -o cache_dir=mine")
	list, o := f.load(t, "pytest")
	d := PlanDirs(list, o)
	base := f.home + "/.cache/writewatch"
	if d.PyCache != base+"/__pycache__" || d.PytestCache != base+"/.pytest_cache" {
		t.Fatalf("caches %q %q", d.PyCache, d.PytestCache)
	}
	if w := d.Make(); len(w) > 0 {
		t.Fatalf("warnings: %v", w)
	}
	env := d.Env(f.env)
	if got := launch.Getenv(env, "PYTHONPYCACHEPREFIX"); got != d.PyCache {
		t.Errorf("PYTHONPYCACHEPREFIX %q", got)
	}
	addopts := launch.Getenv(env, "PYTEST_ADDOPTS")
	wantOpt := "-o 'cache_dir=" + base + "/.pytest_cache/proj-"
	if !strings.HasPrefix(addopts, wantOpt) || !strings.HasSuffix(addopts, " -x -o cache_dir=mine") {
		t.Errorf("PYTEST_ADDOPTS %q: want ours first, the user's after", addopts)
	}
	p, err := NewPlan(list.Entries(), d.Grants()...)
	if err != nil {
		t.Fatal(err)
	}
	allows := p.Allows()
	for path, want := range map[string]bool{
		d.PyCache + "/usr/lib/python3/x.cpython-311.pyc": true,
		d.PytestCache + "/proj-123/v/cache/lastfailed":   true,
		base + "/other":                                    false,
		f.proj + "/__pycache__/x.pyc":                      false, // new: no grant can name it
		f.home + "/.cache/writewatch/__pycache__extra/x":   false,
		f.home + "/.cache/writewatch/.pytest_cache-2/file": false,
	} {
		if allows(path) != want {
			t.Errorf("%s: granted %v, want %v", path, !want, want)
		}
		if ok, _ := list.Match(path); want && !ok {
			t.Errorf("%s granted, but the allowlist does not allow it", path)
		}
	}
	d.Remove()
	if _, err := os.Stat(d.PyCache); err != nil {
		t.Errorf("Python's cache went with the run: %v", err)
	}

	// Two projects, two pytest caches.
	if projectKey("/a/proj") == projectKey("/b/proj") || !strings.HasPrefix(projectKey("/a/proj"), "proj-") {
		t.Errorf("project keys %q %q", projectKey("/a/proj"), projectKey("/b/proj"))
	}
}

// The user's own PYTHONPYCACHEPREFIX is kept; a python-cache default
// switched off, or a deny entry on the cache, leaves the caches alone.
func TestDirsPythonCachesLeftAlone(t *testing.T) {
	f := newDirsFixture(t, false, "allow:\n  - tests/**\n")
	f.env = append(f.env, "PYTHONPYCACHEPREFIX=/mine")
	list, o := f.load(t, "pytest")
	if d := PlanDirs(list, o); d.PyCache != "" || d.PytestCache == "" {
		t.Errorf("own prefix: %q %q", d.PyCache, d.PytestCache)
	}
	for _, config := range []string{
		"allow:\n  - tests/**\ndefaults:\n  python-cache: false\n",
		"allow:\n  - tests/**\ndeny:\n  - ~/.cache/writewatch/__pycache__/x\n  - ~/.cache/writewatch/.pytest_cache\n",
	} {
		f := newDirsFixture(t, false, config)
		list, o := f.load(t, "pytest")
		d := PlanDirs(list, o)
		if d.PyCache != "" || d.PytestCache != "" {
			t.Errorf("%q: caches %q %q", config, d.PyCache, d.PytestCache)
		}
		d.Make()
		if env := d.Env(f.env); launch.Getenv(env, "PYTHONPYCACHEPREFIX") != "" || launch.Getenv(env, "PYTEST_ADDOPTS") != "" {
			t.Errorf("%q: env %v", config, env)
		}
	}
	// No home: nowhere to keep them.
	f.env = []string{"TMPDIR=" + f.tmp, "HOME=/"}
	list, o = f.load(t, "pytest")
	if d := PlanDirs(list, o); d.PyCache != "" || d.PytestCache != "" {
		t.Errorf("HOME=/: caches %q %q", d.PyCache, d.PytestCache)
	}
}

// go's caches missing at start are made when COMMAND may run go, and are
// then granted by the go-cache default's own entries.
func TestDirsGoCaches(t *testing.T) {
	f := newDirsFixture(t, false, "allow:\n  - tests/**\n")
	list, o := f.load(t, "go", "test", "./...")
	d := PlanDirs(list, o)
	want := []string{f.home + "/.cache/go-build", f.home + "/go/pkg/mod"}
	if !slices.Equal(d.GoCaches, want) {
		t.Fatalf("go caches %v, want %v", d.GoCaches, want)
	}
	d.Make()
	p, err := NewPlan(list.Entries(), d.Grants()...)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Allows()(f.home + "/.cache/go-build/00/x-d") {
		t.Error("GOCACHE not granted once made")
	}
	// A program that does not run go gets no go caches made.
	bin := filepath.Join(t.TempDir(), "tool")
	os.WriteFile(bin, []byte("\x7fELF not go"), 0o755)
	f2 := newDirsFixture(t, false, "allow:\n  - tests/**\n")
	list, o = f2.load(t, bin)
	if d := PlanDirs(list, o); len(d.GoCaches) != 0 {
		t.Errorf("go caches made for %s: %v", bin, d.GoCaches)
	}
}

// Remove prunes the bytecode of writewatch's temporary directories that
// are gone, and nothing else.
func TestPrunePyCache(t *testing.T) {
	root := tree(t, "prefix/", "base/writewatch-plugins-2/", "base/other/")
	prefix, base := root+"/prefix", root+"/base"
	for _, d := range []string{"writewatch-plugins-1", "writewatch-plugins-2", "writewatch-tmp-3", "other", "gone"} {
		os.MkdirAll(filepath.Join(prefix, base, d), 0o755)
	}
	prunePyCache(prefix, base)
	des, _ := os.ReadDir(filepath.Join(prefix, base))
	var left []string
	for _, de := range des {
		left = append(left, de.Name())
	}
	if want := []string{"gone", "other", "writewatch-plugins-2"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

// A directory the allowlist names with a trailing '/', missing at start,
// is made before the plan, with the directory above it, and granted
// whole: its parent stays refused. Those COMMAND left empty go at the
// end; one it wrote in stays. Without the '/', or as a glob, nothing is
// made.
func TestDirsNamed(t *testing.T) {
	f := newDirsFixture(t, false, "allow:\n  - ~/.config/myapp/\n  - ~/.local/share/tool/\n  - ~/.cache/plain\n  - ~/.cache/glob*/\n")
	list, o := f.load(t, "true")
	d := PlanDirs(list, o)
	myapp, tool := f.home+"/.config/myapp", f.home+"/.local/share/tool"
	if !slices.Equal(d.Named, []string{myapp, tool}) {
		t.Fatalf("named %q, want %q", d.Named, []string{myapp, tool})
	}
	if w := d.Make(); len(w) > 0 {
		t.Fatalf("warnings: %v", w)
	}
	p, err := NewPlan(list.Entries(), d.Grants()...)
	if err != nil {
		t.Fatal(err)
	}
	allows := p.Allows()
	for path, want := range map[string]bool{
		myapp:                          true,
		myapp + "/settings.json":       true,
		tool + "/db/x":                 true,
		f.home + "/.config/other":      false,
		f.home + "/.local/share/other": false,
		f.home + "/.cache/plain":       false,
	} {
		if got := allows(path); got != want {
			t.Errorf("allows(%s) = %v, want %v", path, got, want)
		}
	}
	for _, e := range p.Entries {
		if e.Entry.Raw == "~/.config/myapp/" && e.How != Exact {
			t.Errorf("%s: %s", e.Entry.Raw, e.Describe(landlockTier{}))
		}
	}
	if err := os.WriteFile(myapp+"/settings.json", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{myapp: true, f.home + "/.config": true, tool: false, f.home + "/.local": false} {
		if _, err := os.Lstat(path); (err == nil) != want {
			t.Errorf("%s: %v after the run, want there %v", path, err, want)
		}
	}
}
