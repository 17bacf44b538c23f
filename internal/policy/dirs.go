package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/launch"
)

// Dirs are the directories writewatch makes for COMMAND under --enforce,
// before the plan is made, so that the writes the defaults allow land in
// directories the kernel can grant whole. The kernel grants existing
// directories, and cannot take a right back below a grant:
//
//   - Temp: when the temp dir the tmp default allows cannot be granted
//     whole (the project lies in it, or a deny entry names something in
//     it), only what it holds at start is granted, around the project;
//     t.TempDir(), tmp_path and go's build directory would be new names in
//     it. COMMAND gets a private temp directory inside it instead, granted
//     whole: TMPDIR, and GOTMPDIR when set, point there. It belongs to the
//     user COMMAND runs as, and is removed at the end of the run.
//   - Python's caches: the python-cache default allows every directory
//     named __pycache__ or .pytest_cache, which no grant can express.
//     COMMAND's Python writes its bytecode under
//     $XDG_CACHE_HOME/writewatch/__pycache__ (PYTHONPYCACHEPREFIX, unless
//     set), pytest its cache under
//     $XDG_CACHE_HOME/writewatch/.pytest_cache/PROJECT-HASH (-o cache_dir
//     ahead of PYTEST_ADDOPTS); both directories are granted whole. They
//     stay, so the caches work from one run to the next; the python-cache
//     default allows them in every mode, by their names.
//   - Go's caches: the go-cache default's directories that do not exist
//     yet, which go would make at its first write, are made, when COMMAND
//     may run go.
//   - The directories the allowlist names with a trailing '/'
//     (~/.config/myapp/), from the config or --allow, literal, that do not
//     exist yet: no grant can name a directory before it exists, and its
//     parent granted would let COMMAND write all of it. They are made with
//     the directories above them that are missing, and removed at the end
//     of the run when COMMAND left them empty.
//
// A directory the allowlist does not allow whole (a default switched
// off, a deny entry inside it) is neither made nor used.
type Dirs struct {
	// Temp is COMMAND's private temp directory, made in TempBase; ""
	// when none is needed. Before Make, it is TempBase/writewatch-tmp-*.
	Temp, TempBase string
	// PyCache is PYTHONPYCACHEPREFIX; "" when Python's caches are not
	// redirected (PYTHONPYCACHEPREFIX set already, no home directory, the
	// python-cache default off).
	PyCache string
	// PytestCache is the directory granted for pytest's caches, and
	// pytestDir this project's cache_dir in it.
	PytestCache, pytestDir string
	// GoCaches are the go-cache directories missing at start.
	GoCaches []string
	// Named are the directories the allowlist names with a trailing '/'
	// that are missing at start; after Make, those made.
	Named []string
	// made are the directories Make made for Named, each with those it
	// made above it, the highest first.
	made [][]string

	owner    *launch.Identity
	tempMade bool
}

// DirsOptions say for whom the directories are made.
type DirsOptions struct {
	// Env is COMMAND's environment: its TMPDIR, GOTMPDIR, HOME,
	// XDG_CACHE_HOME, PYTHONPYCACHEPREFIX and PATH are read.
	Env []string
	// Owner is the user COMMAND runs as; nil: this process's user. The
	// directories are made, and the private temp dir removed, with that
	// user's rights.
	Owner *launch.Identity
	// Command and WorkDir are COMMAND and where it runs, to tell whether
	// it may run go (allowlist.MayRunGo).
	Command []string
	WorkDir string
}

// tempPrefix starts the name of a private temp directory.
const tempPrefix = "writewatch-tmp-"

// PlanDirs decides which directories COMMAND gets under --enforce, from
// the allowlist; nothing is made yet (see Make).
func PlanDirs(list *allowlist.List, o DirsOptions) *Dirs {
	d := &Dirs{owner: o.Owner}
	getenv := func(k string) string { return launch.Getenv(o.Env, k) }
	entries := list.Entries()
	w := newWholeCheck(list, entries)
	var goCaches []string
	for _, e := range entries {
		switch {
		case e.Kind != allowlist.Allow:
		case e.Source == "default:"+allowlist.DefaultTmp && d.TempBase == "":
			if !w.whole(e.Raw) {
				d.TempBase = filepath.Clean(e.Raw)
				d.Temp = filepath.Join(d.TempBase, tempPrefix+"*")
			}
		case e.Source == "default:"+allowlist.DefaultGoCache:
			if dir := filepath.Clean(e.Raw); !contains(goCaches, dir) {
				goCaches = append(goCaches, dir)
			}
		case namedMissing(&e, w) && !contains(d.Named, e.Pattern):
			d.Named = append(d.Named, e.Pattern)
		}
	}
	if len(goCaches) > 0 && allowlist.MayRunGo(o.Command, o.WorkDir, getenv) {
		for _, dir := range goCaches {
			if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) && w.whole(dir) {
				d.GoCaches = append(d.GoCaches, dir)
			}
		}
	}
	if cache := cacheHome(getenv); cache != "" {
		base := filepath.Join(cache, "writewatch")
		if py := filepath.Join(base, "__pycache__"); getenv("PYTHONPYCACHEPREFIX") == "" && w.whole(py) {
			d.PyCache = py
		}
		if pt := filepath.Join(base, ".pytest_cache"); w.whole(pt) {
			d.PytestCache = pt
			d.pytestDir = filepath.Join(pt, projectKey(list.Project()))
		}
	}
	return d
}

// namedMissing reports whether allow entry e, from the config or
// --allow, names a directory (a trailing '/') literally that is missing,
// and the allowlist allows whole.
func namedMissing(e *allowlist.Entry, w *wholeCheck) bool {
	if !e.NamesDir() || strings.HasPrefix(e.Source, "default:") || !plainPath(e.Pattern) {
		return false
	}
	_, err := os.Lstat(e.Pattern)
	return errors.Is(err, fs.ErrNotExist) && w.whole(e.Pattern)
}

// cacheHome is $XDG_CACHE_HOME, else $HOME/.cache; "" when neither is an
// absolute path (or HOME is /).
func cacheHome(getenv func(string) string) string {
	if c := getenv("XDG_CACHE_HOME"); filepath.IsAbs(c) {
		return filepath.Clean(c)
	}
	if h := getenv("HOME"); filepath.IsAbs(h) && filepath.Clean(h) != "/" {
		return filepath.Join(h, ".cache")
	}
	return ""
}

// projectKey names a project's pytest cache: the project's name and a
// hash of its path.
func projectKey(project string) string {
	sum := sha256.Sum256([]byte(project))
	name := strings.Map(func(r rune) rune {
		if r == '/' || r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, filepath.Base(project))
	return name + "-" + hex.EncodeToString(sum[:6])
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Make makes the directories, with the rights of the user COMMAND runs
// as. A directory it cannot make is dropped (COMMAND's environment then
// does not point there), with a warning.
func (d *Dirs) Make() (warnings []string) {
	if d.TempBase != "" {
		err := launch.AsUser(d.owner, func() error {
			dir, err := os.MkdirTemp(d.TempBase, tempPrefix)
			d.Temp = dir
			return err
		})
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("cannot make COMMAND's private temp directory: %v; "+
				"under --enforce only what %s holds at start is writable", err, d.TempBase))
			d.Temp, d.TempBase = "", ""
		} else {
			d.tempMade = true
		}
	}
	mkdir := func(dir, what string) bool {
		err := launch.AsUser(d.owner, func() error { return os.MkdirAll(dir, 0o755) })
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("cannot make %s for %s: %v", dir, what, err))
		}
		return err == nil
	}
	var made []string
	for _, dir := range d.GoCaches {
		if mkdir(dir, "go's cache") {
			made = append(made, dir)
		}
	}
	d.GoCaches = made
	d.Named = d.makeNamed(&warnings)
	if d.PyCache != "" && !mkdir(d.PyCache, "Python's bytecode (PYTHONPYCACHEPREFIX)") {
		d.PyCache = ""
	}
	if d.PytestCache != "" && !mkdir(d.PytestCache, "pytest's cache") {
		d.PytestCache, d.pytestDir = "", ""
	}
	return warnings
}

// makeNamed makes the directories the allowlist names that are missing,
// with those above them, and returns those made.
func (d *Dirs) makeNamed(warnings *[]string) []string {
	var named []string
	for _, dir := range d.Named {
		var missing []string
		for p := dir; p != "/"; p = filepath.Dir(p) {
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				break
			}
			missing = append([]string{p}, missing...)
		}
		err := launch.AsUser(d.owner, func() error { return os.MkdirAll(dir, 0o777) })
		if err != nil {
			*warnings = append(*warnings, fmt.Sprintf("cannot make %s, which the allowlist names: %v; "+
				"under --enforce, writes there are refused", dir, err))
			continue
		}
		named = append(named, dir)
		d.made = append(d.made, missing)
	}
	return named
}

// removeNamed removes the directories makeNamed made that are empty, the
// lowest first.
func (d *Dirs) removeNamed() {
	for _, chain := range d.made {
		for i := len(chain) - 1; i >= 0; i-- {
			if err := os.Remove(chain[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
	}
	d.made = nil
}

// Grants are the directories to grant whole beyond the allowlist's
// literal entries (the go caches are those already).
func (d *Dirs) Grants() []string {
	var g []string
	for _, dir := range []string{d.Temp, d.PyCache, d.PytestCache} {
		if dir != "" && !strings.HasSuffix(dir, "*") {
			g = append(g, dir)
		}
	}
	return g
}

// Env points COMMAND's environment at the directories.
func (d *Dirs) Env(env []string) []string {
	env = append([]string(nil), env...)
	if d.Temp != "" {
		env = setEnv(env, "TMPDIR", d.Temp)
		if launch.Getenv(env, "GOTMPDIR") != "" {
			env = setEnv(env, "GOTMPDIR", d.Temp)
		}
	}
	if d.PyCache != "" {
		env = setEnv(env, "PYTHONPYCACHEPREFIX", d.PyCache)
	}
	if d.pytestDir != "" {
		opt := "-o " + shellQuote("cache_dir="+d.pytestDir)
		if old := launch.Getenv(env, "PYTEST_ADDOPTS"); old != "" {
			opt += " " + old
		}
		env = setEnv(env, "PYTEST_ADDOPTS", opt)
	}
	return env
}

// Remove removes the private temp directory, with everything COMMAND
// left in it, the directories made for the allowlist that COMMAND left
// empty, and the bytecode Python kept for writewatch's own
// temporary directories that are gone (the private temp dir, the pytest
// plugin's), with the rights of the user COMMAND ran as.
func (d *Dirs) Remove() error {
	if d == nil {
		return nil
	}
	return launch.AsUser(d.owner, func() error {
		var err error
		if d.tempMade {
			d.tempMade = false
			if rerr := os.RemoveAll(d.Temp); rerr != nil {
				err = fmt.Errorf("remove COMMAND's temp directory: %w", rerr)
			}
		}
		d.removeNamed()
		if d.PyCache != "" {
			for _, base := range []string{d.TempBase, os.TempDir()} {
				if base != "" {
					prunePyCache(d.PyCache, filepath.Clean(base))
				}
			}
		}
		return err
	})
}

// prunePyCache removes, from the bytecode mirror under prefix, the
// directories of writewatch's own temporary directories in base that no
// longer exist.
func prunePyCache(prefix, base string) {
	mirror := filepath.Join(prefix, base)
	des, err := os.ReadDir(mirror)
	if err != nil {
		return
	}
	for _, de := range des {
		if !de.IsDir() || !strings.HasPrefix(de.Name(), "writewatch-") {
			continue
		}
		if _, err := os.Lstat(filepath.Join(base, de.Name())); errors.Is(err, fs.ErrNotExist) {
			os.RemoveAll(filepath.Join(mirror, de.Name()))
		}
	}
}

// Explain says, for --print-config, what COMMAND gets; one line each.
func (d *Dirs) Explain() []string {
	var lines []string
	if d.TempBase != "" {
		lines = append(lines, fmt.Sprintf("COMMAND's temp dir: %s cannot be granted whole; COMMAND gets a private one, %s, "+
			"granted whole, as TMPDIR (and GOTMPDIR when set), removed at the end", d.TempBase, d.Temp))
	}
	if d.PyCache != "" {
		lines = append(lines, fmt.Sprintf("Python's bytecode: PYTHONPYCACHEPREFIX=%s, granted whole", d.PyCache))
	}
	if d.pytestDir != "" {
		lines = append(lines, fmt.Sprintf("pytest's cache: -o cache_dir=%s (PYTEST_ADDOPTS), in %s, granted whole", d.pytestDir, d.PytestCache))
	}
	for _, dir := range d.GoCaches {
		lines = append(lines, fmt.Sprintf("go's cache %s: missing, made before the run", dir))
	}
	for _, dir := range d.Named {
		lines = append(lines, fmt.Sprintf("%s: missing, named with a trailing /, made before the run and granted whole; removed at the end if left empty", dir))
	}
	return lines
}

// setEnv replaces every entry of key in env with one.
func setEnv(env []string, key, value string) []string {
	out := env[:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// shellQuote quotes s for a POSIX shell, and for Python's shlex, which
// splits PYTEST_ADDOPTS.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// wholeCheck tells whether the allowlist allows a directory with
// everything under it.
type wholeCheck struct {
	list   *allowlist.List
	denies []denyRule
}

func newWholeCheck(list *allowlist.List, entries []allowlist.Entry) *wholeCheck {
	w := &wholeCheck{list: list}
	for i := range entries {
		e := &entries[i]
		if e.Kind != allowlist.Deny {
			continue
		}
		if p, err := allowlist.Compile(e.Pattern); err == nil {
			w.denies = append(w.denies, denyRule{e, p})
		}
	}
	return w
}

// whole reports whether dir (absolute) and everything under it are
// allowed: an allow entry allows it, and no deny entry that wins over
// that entry names it or anything under it.
func (w *wholeCheck) whole(dir string) bool {
	dir = filepath.Clean(dir)
	ok, a := w.list.Match(dir)
	if !ok || a == nil {
		return false
	}
	for _, d := range w.denies {
		if d.entry.Overrides(a) && (d.pat.Match(dir) || d.pat.CanMatchBelow(dir)) {
			return false
		}
	}
	return true
}
