package allowlist

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Kind tells whether an entry allows or denies.
type Kind int

const (
	Allow Kind = iota // the entry allows writes to what it matches
	Deny              // the entry forbids writes to what it matches
)

// String returns "allow" or "deny".
func (k Kind) String() string {
	switch k {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// An Entry is one allow or deny rule.
type Entry struct {
	Kind    Kind
	Pattern string // absolute, cleaned, after expansion
	Raw     string // as written
	Source  string // e.g. "/proj/.writewatch.yaml:4", "--allow", "default:tmp"
	// Broad marks an allow entry written as {path: ..., broad: true}: it
	// may cover /, the home directory or a directory above the project.
	Broad bool
	// CoversProject marks a default allow entry that covers the project
	// (tmp, for a project under /tmp): the deny entry from default:project
	// takes the project out of it. See Overrides.
	CoversProject bool
}

// NamesDir reports whether the entry, as written, ends in '/': it names
// a directory, which --enforce makes before the run when it is missing
// (package policy: Dirs).
func (e *Entry) NamesDir() bool {
	return strings.HasSuffix(e.Raw, "/")
}

// SourceProject is the Source of the deny entries that take the project
// out of the defaults that cover it.
const SourceProject = "default:project"

// Overrides reports whether deny entry d wins over allow entry a on a path
// that both match. Every deny entry wins over every allow entry, except
// the project's own (Source SourceProject): it wins only over the defaults
// that cover the project (a.CoversProject), so the config's entries and
// --allow still allow what they name inside the project.
func (d *Entry) Overrides(a *Entry) bool {
	return d.Source != SourceProject || a.CoversProject
}

// Options tell Load where to find the config and how to expand entries.
type Options struct {
	ConfigPath string // --config; "" = search upward from WorkDir
	WorkDir    string // absolute
	Home       string // what ~ expands to; "" makes ~ an error
	// Getenv looks up the variables of $VAR and ${VAR}, and TMPDIR. nil
	// means os.Getenv.
	Getenv     func(string) string
	ExtraAllow []string // --allow patterns, relative to WorkDir
	// ExtraAllowBroad says the ExtraAllow entries are meant even if they
	// cover /, the home directory or a directory above the project.
	ExtraAllowBroad bool
	// Outputs are the files writewatch's own output goes to, which COMMAND
	// inherits (see OutputFile): each is allowed, from "output:" + its
	// Name. Writes through COMMAND's stdout and stderr are the run's
	// output, where the user sent it, not a test's stray write.
	Outputs []Output
	// GoEnv finds the go caches for the go-cache default (see RunGoEnv);
	// nil means no go-cache entries. It runs only when Command may run go
	// (MayRunGo), concurrently: Load returns without waiting for it, and
	// the list's first use waits GoEnvPatience at most. When it fails or
	// takes longer, Go's documented cache locations (GoCacheDefaults)
	// stand in, and Warn says so.
	GoEnv func() (map[string]string, error)
	// Command is COMMAND with its arguments; nil when there is none.
	Command []string
	// Warn, when not nil, receives warnings, one line each.
	Warn func(string)
}

// A List is a compiled allowlist.
type List struct {
	// finish completes the list: the defaults, the project's carve-out and
	// the indexes. It runs once, when the list is first used.
	finish     func()
	once       sync.Once
	configFile string
	searchDir  string // where the search for the config file started
	projectDir string
	entries    []Entry
	allow      *index // allow entries but those in covering
	deny       *index // deny entries but those in project
	// covering holds the defaults that cover the project, and project the
	// deny entries that take the project out of them.
	covering *index
	project  *index
}

type compiled struct {
	pat   *Pattern
	entry *Entry
	pos   int // of entry in the list
}

// fileSystem is what Load needs from the file system; tests replace it.
type fileSystem struct {
	stat         func(string) (fs.FileInfo, error)
	lstat        func(string) (fs.FileInfo, error)
	readDir      func(string) ([]fs.DirEntry, error)              // nil: lstat each name
	readConfig   func(string) (data []byte, null bool, err error) // see readConfigFile
	evalSymlinks func(string) (string, error)
}

var osFS = fileSystem{stat: os.Stat, lstat: os.Lstat, readDir: os.ReadDir, readConfig: readConfigFile, evalSymlinks: filepath.EvalSymlinks}

// Load finds and parses the config file, then adds the --allow entries and
// the built-in defaults that the config leaves on.
//
// Config entries come first in the list, in file order, then
// Options.ExtraAllow, then Options.Outputs, then the defaults, then the deny entries that take
// the project out of the defaults that cover it (see the package
// documentation).
// Every entry whose leading literal directory goes through a symbolic link
// is followed by a copy with that directory resolved, with the same Raw
// and Source, since the kernel reports writes under the resolved path.
func Load(opts Options) (*List, error) {
	return load(opts, osFS)
}

func load(opts Options, fsys fileSystem) (*List, error) {
	if !filepath.IsAbs(opts.WorkDir) {
		return nil, fmt.Errorf("allowlist: work directory %q is not absolute", opts.WorkDir)
	}
	opts.WorkDir = filepath.Clean(opts.WorkDir)
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}

	file, err := findConfig(opts, fsys)
	if err != nil {
		return nil, err
	}
	cfg, project, err := projectConfig(file, opts.WorkDir, fsys)
	if err != nil {
		return nil, err
	}

	goCache := startGoCache(cfg.defaults, opts)
	b := &builder{fsys: fsys}
	guard := b.broadGuard(project, opts.Home)
	if err := b.addConfigEntries(file, cfg.entries, opts, guard); err != nil {
		return nil, err
	}
	if err := b.addExtraAllow(opts, guard); err != nil {
		return nil, err
	}
	if err := b.addOutputs(opts.Outputs); err != nil {
		return nil, err
	}
	// The rest waits for go env, if it runs: it is done when the list is
	// first used, so go env runs while the caller starts other work.
	l := &List{configFile: file, searchDir: opts.WorkDir, projectDir: project}
	l.finish = func() {
		b.addDefaults(cfg.defaults, opts, goCache)
		b.carveProject(project)
		b.fill(l)
	}
	if goCache == nil {
		l.ready()
	}
	return l, nil
}

// projectConfig reads and parses the config file, if there is one (file
// ""), and returns it and the project's directory: the config file's,
// or workDir with no config file or a null one.
func projectConfig(file, workDir string, fsys fileSystem) (*config, string, error) {
	if file == "" {
		return &config{defaults: allDefaults(true)}, workDir, nil
	}
	data, null, err := fsys.readConfig(file)
	if err != nil {
		return nil, "", err
	}
	cfg, err := parseConfig(file, data)
	if err != nil {
		return nil, "", err
	}
	if null {
		return cfg, workDir, nil
	}
	return cfg, filepath.Dir(file), nil
}

// addConfigEntries adds the entries of the config file, relative to its
// directory.
func (b *builder) addConfigEntries(file string, entries []rawEntry, opts Options, guard *broadGuard) error {
	baseDir := filepath.Dir(file)
	for _, e := range entries {
		if err := b.addConfigEntry(e, fmt.Sprintf("%s:%d", file, e.line), baseDir, opts, guard); err != nil {
			return &ConfigError{File: file, Line: e.line, Msg: fmt.Sprintf("%s %q: %v", e.kind, e.text, err)}
		}
	}
	return nil
}

// addConfigEntry adds entry e, from src; an allow entry that covers /,
// the home directory or a directory above the project must say broad.
func (b *builder) addConfigEntry(e rawEntry, src, baseDir string, opts Options, guard *broadGuard) error {
	pat, err := expand(e.text, baseDir, opts)
	if err != nil {
		return err
	}
	pats, err := b.add(Entry{Kind: e.kind, Pattern: pat, Raw: e.text, Source: src, Broad: e.broad})
	if err != nil {
		return err
	}
	if why := guard.covers(pats); e.kind == Allow && !e.broad && why != "" {
		return fmt.Errorf("%s; allow only what the tests write, or write {path: %q, broad: true} if all of it is meant", why, e.text)
	}
	return nil
}

// addExtraAllow adds the --allow entries, relative to the work
// directory.
func (b *builder) addExtraAllow(opts Options, guard *broadGuard) error {
	for _, raw := range opts.ExtraAllow {
		if raw == "" {
			return errors.New("allowlist: --allow: empty pattern")
		}
		if err := b.addExtraEntry(raw, opts, guard); err != nil {
			return fmt.Errorf("allowlist: --allow %q: %w", raw, err)
		}
	}
	return nil
}

// addExtraEntry adds --allow raw; one that covers /, the home directory
// or a directory above the project is refused unless ExtraAllowBroad.
func (b *builder) addExtraEntry(raw string, opts Options, guard *broadGuard) error {
	pat, err := expand(raw, opts.WorkDir, opts)
	if err != nil {
		return err
	}
	pats, err := b.add(Entry{Kind: Allow, Pattern: pat, Raw: raw, Source: "--allow", Broad: opts.ExtraAllowBroad})
	if err != nil {
		return err
	}
	if why := guard.covers(pats); !opts.ExtraAllowBroad && why != "" {
		return fmt.Errorf("%s; allow only what the tests write, or give it in the config as {path: %q, broad: true} if all of it is meant", why, raw)
	}
	return nil
}

// addOutputs allows the files writewatch's stdout and stderr go to,
// which COMMAND inherits.
func (b *builder) addOutputs(outputs []Output) error {
	for _, o := range outputs {
		// An escaped absolute path compiles.
		if _, err := b.add(Entry{Kind: Allow, Pattern: escapeGlob(filepath.Clean(o.Path)), Raw: o.Path, Source: "output:" + o.Name}); err != nil {
			return fmt.Errorf("allowlist: %s %q: %w", o.Name, o.Path, err)
		}
	}
	return nil
}

// carveProject takes the project out of the defaults that cover it: it
// marks them CoversProject and adds a deny entry for the project from
// SourceProject. A default that lies inside the project (a GOCACHE in the
// checkout) or only names some of its directories (python-cache's
// __pycache__) does not cover it, and stays as it is.
func (b *builder) carveProject(project string) {
	projects := []string{project}
	if real, ok := b.real(project); ok && real != project {
		projects = append(projects, real)
	}
	covered := false
	for i := range b.entries {
		e := &b.entries[i]
		if e.Kind != Allow || !strings.HasPrefix(e.Source, "default:") {
			continue
		}
		for _, p := range projects {
			if b.pats[i].Match(p) {
				e.CoversProject = true
				covered = true
			}
		}
	}
	if !covered {
		return
	}
	// An escaped absolute path compiles.
	if _, err := b.add(Entry{Kind: Deny, Pattern: escapeGlob(project), Raw: project, Source: SourceProject}); err != nil {
		panic(err)
	}
}

// findConfig returns the config file to use, or "" if there is none.
func findConfig(opts Options, fsys fileSystem) (string, error) {
	if opts.ConfigPath != "" {
		file := opts.ConfigPath
		if !filepath.IsAbs(file) {
			file = filepath.Join(opts.WorkDir, file)
		}
		file = filepath.Clean(file)
		if _, err := fsys.stat(file); err != nil {
			return "", fmt.Errorf("allowlist: config file: %w", err)
		}
		return file, nil
	}
	dir := opts.WorkDir
	for {
		file := filepath.Join(dir, ConfigFileName)
		_, err := fsys.stat(file)
		switch {
		case err == nil:
			return file, nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission):
			return "", fmt.Errorf("allowlist: looking for %s: %w", ConfigFileName, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

// expand turns an entry as written into an absolute, clean pattern: a
// leading ~ becomes home, $VAR and ${VAR} are replaced, and a relative
// result is taken relative to base. Substituted text is escaped, so it
// matches literally.
func expand(raw, base string, opts Options) (string, error) {
	s := raw
	var b strings.Builder
	if s == "~" || strings.HasPrefix(s, "~/") {
		if opts.Home == "" {
			return "", errors.New("~ used, but the home directory is unknown")
		}
		if !filepath.IsAbs(opts.Home) {
			return "", fmt.Errorf("~ used, but the home directory %q is not absolute", opts.Home)
		}
		b.WriteString(escapeGlob(opts.Home))
		s = s[1:]
	} else if strings.HasPrefix(s, "~") {
		return "", errors.New("only ~ and ~/ are expanded (~user is not supported; write ./~... for a name that starts with ~)")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			// An escaped byte stays as written; so "\$" is a literal '$'.
			b.WriteByte(c)
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
			continue
		case '$':
		default:
			b.WriteByte(c)
			continue
		}
		var name string
		rest := s[i+1:]
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return "", errors.New("unterminated ${")
			}
			name = rest[1:end]
			if !isVarName(name) {
				return "", fmt.Errorf("bad variable name %q in ${...}", name)
			}
			i += 1 + end
		default:
			n := 0
			for n < len(rest) && isVarByte(rest[n], n == 0) {
				n++
			}
			if n == 0 {
				return "", errors.New("$ not followed by a variable name (write \\$ for a literal $)")
			}
			name = rest[:n]
			i += n
		}
		val := opts.Getenv(name)
		if val == "" {
			return "", fmt.Errorf("undefined variable $%s", name)
		}
		b.WriteString(escapeGlob(val))
	}
	pat := b.String()
	if !strings.HasPrefix(pat, "/") {
		pat = escapeGlob(base) + "/" + pat
	}
	return filepath.Clean(pat), nil
}

func isVarByte(c byte, first bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
}

func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isVarByte(s[i], i == 0) {
			return false
		}
	}
	return true
}

type builder struct {
	fsys      fileSystem
	entries   []Entry
	pats      []*Pattern
	realCache map[string]realPath // see real
	listings  map[string]*listing // see entryType
}

// add compiles e.Pattern and appends e, followed by a copy with the
// pattern's symlinks resolved when that differs. It returns the patterns
// it added.
func (b *builder) add(e Entry) ([]*Pattern, error) {
	p, err := compile(e.Pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPattern, err)
	}
	n := len(b.pats)
	e.Pattern = p.String()
	b.entries = append(b.entries, e)
	b.pats = append(b.pats, p)
	if r := b.resolved(p); r != nil {
		e.Pattern = r.String()
		b.entries = append(b.entries, e)
		b.pats = append(b.pats, r)
	}
	return b.pats[n:], nil
}

// resolved returns p with the symbolic links in its literal prefix
// resolved, or nil when that changes nothing. Components that do not exist
// are kept as they are.
func (b *builder) resolved(p *Pattern) *Pattern {
	prefix := p.LiteralPrefix()
	if prefix == "" {
		return nil
	}
	dir, tail := prefix, ""
	var real string
	for {
		if r, ok := b.real(dir); ok {
			real = r
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		tail = "/" + filepath.Base(dir) + tail
		dir = parent
	}
	if real == dir || !filepath.IsAbs(real) {
		return nil
	}
	s := escapeGlob(filepath.Clean(real + tail))
	if len(p.rest) > 0 {
		s += "/" + strings.Join(p.rest, "/")
	}
	r, err := Compile(s)
	if err != nil || r.String() == p.String() {
		return nil
	}
	return r
}

// fill gives l the builder's entries.
func (b *builder) fill(l *List) {
	l.entries = b.entries
	var allow, deny, covering, project []compiled
	for i := range l.entries {
		c := compiled{pat: b.pats[i], entry: &l.entries[i], pos: i}
		switch {
		case c.entry.Kind == Deny && c.entry.Source == SourceProject:
			project = append(project, c)
		case c.entry.Kind == Deny:
			deny = append(deny, c)
		case c.entry.CoversProject:
			covering = append(covering, c)
		default:
			allow = append(allow, c)
		}
	}
	l.allow, l.deny = newIndex(allow), newIndex(deny)
	l.covering, l.project = newIndex(covering), newIndex(project)
}

// devPaths are the device files that tests may write to freely. Names
// such as /dev/stdout are links into /proc/self/fd, and writes through
// them land on whatever the descriptor refers to, so they are not listed.
var devPaths = []string{
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm",
}

// goEnvVars are the variables of `go env` whose directories the go-cache
// default allows.
var goEnvVars = []string{"GOCACHE", "GOMODCACHE", "GOTELEMETRYDIR"}

// addDefaults adds the defaults that on leaves on. goCache, when not
// nil, gives the go caches, and a warning when go env could not be used.
// The patterns are literal, absolute paths or constants: they compile.
func (b *builder) addDefaults(on map[string]bool, opts Options, goCache func() (map[string]string, string)) {
	lit := func(name, dir string) {
		if _, err := b.add(Entry{Kind: Allow, Pattern: escapeGlob(dir), Raw: dir, Source: "default:" + name}); err != nil {
			panic(err)
		}
	}
	if on[DefaultTmp] {
		tmp := "/tmp"
		if t := opts.Getenv("TMPDIR"); filepath.IsAbs(t) {
			tmp = filepath.Clean(t)
		}
		lit(DefaultTmp, tmp)
	}
	if on[DefaultDev] {
		for _, d := range devPaths {
			lit(DefaultDev, d)
		}
	}
	if on[DefaultGoCache] && goCache != nil {
		env, warning := goCache()
		if warning != "" && opts.Warn != nil {
			opts.Warn(warning)
		}
		for _, v := range goEnvVars {
			if dir := env[v]; filepath.IsAbs(dir) {
				lit(DefaultGoCache, filepath.Clean(dir))
			}
		}
	}
	if on[DefaultPythonCache] {
		for _, p := range []string{"/**/__pycache__", "/**/.pytest_cache"} {
			if _, err := b.add(Entry{Kind: Allow, Pattern: p, Raw: strings.TrimPrefix(p, "/"), Source: "default:" + DefaultPythonCache}); err != nil {
				panic(err)
			}
		}
	}
}

// startGoCache starts finding the go caches for the go-cache default and
// returns what waits for them; nil when the default is off or Options
// name no GoEnv. go env runs, concurrently, only when COMMAND may run go
// (MayRunGo); else, when go is on PATH, Go's documented locations stand in.
func startGoCache(on map[string]bool, opts Options) func() (map[string]string, string) {
	if !on[DefaultGoCache] || opts.GoEnv == nil {
		return nil
	}
	fallback := func() map[string]string { return GoCacheDefaults(opts.Getenv, opts.Home) }
	if !MayRunGo(opts.Command, opts.WorkDir, opts.Getenv) {
		var env map[string]string
		if lookPath("go", opts.Getenv("PATH"), opts.WorkDir) != "" {
			env = fallback()
		}
		return func() (map[string]string, string) { return env, "" }
	}
	type result struct {
		env map[string]string
		err error
	}
	done := make(chan result, 1)
	go func() {
		env, err := opts.GoEnv()
		done <- result{env, err}
	}()
	instead := func(why string) (map[string]string, string) {
		env := fallback()
		var dirs []string
		for _, v := range goEnvVars {
			if env[v] != "" {
				dirs = append(dirs, env[v])
			}
		}
		return env, fmt.Sprintf("%s; the %s default allows Go's default cache locations instead: %s",
			why, DefaultGoCache, strings.Join(dirs, ", "))
	}
	return func() (map[string]string, string) {
		timer := time.NewTimer(goEnvPatience)
		defer timer.Stop()
		select {
		case r := <-done:
			if r.err != nil {
				return instead(r.err.Error())
			}
			if r.env == nil {
				// No go to ask: COMMAND may still find one.
				return fallback(), ""
			}
			return r.env, ""
		case <-timer.C:
			// go keeps running and is left to finish: stopping it
			// while it unpacks something would leave a half-written
			// directory behind.
			return instead(fmt.Sprintf("go env did not answer within %v", goEnvPatience))
		}
	}
}

// ready completes the list when that has not happened yet. It waits for
// go env, GoEnvPatience at most.
func (l *List) ready() {
	if l.finish != nil {
		l.once.Do(l.finish)
	}
}

// ConfigFile returns the config file that was used, or "" if none was
// found.
func (l *List) ConfigFile() string { return l.configFile }

// Project returns the project directory: the directory of the config
// file, or the working directory when there is none.
func (l *List) Project() string { return l.projectDir }

// Entries returns a copy of the entries, in the order described at Load.
// The first call on a list (of Entries, Match, Allowed or
// WritePrintConfig) may wait for go env; see Options.GoEnv.
func (l *List) Entries() []Entry {
	l.ready()
	return append([]Entry(nil), l.entries...)
}

// Match decides whether path, which must be absolute and clean, may be
// written. e is the entry that decided: the first deny entry that matches
// when the path is denied, else the first allow entry that matches, else
// nil. Inside the project, the defaults that cover it do not match (see
// Overrides): there a path that only such a default allows is not allowed,
// and e is nil. e points into the list and must not be modified. Match does not
// allocate and is safe for concurrent use.
func (l *List) Match(path string) (allowed bool, e *Entry) {
	l.ready()
	if i := l.deny.first(path); i >= 0 {
		return false, l.deny.pats[i].entry
	}
	i := l.allow.first(path)
	if j := l.covering.first(path); j >= 0 && (i < 0 || l.covering.pats[j].pos < l.allow.pats[i].pos) && l.project.first(path) < 0 {
		return true, l.covering.pats[j].entry
	}
	if i >= 0 {
		return true, l.allow.pats[i].entry
	}
	return false, nil
}

// DenyBelow names the first deny entry that may protect a path strictly
// below dir, an absolute, clean path that allow entry a allows (Match's
// entry): one whose pattern can match below dir (Pattern.CanMatchBelow)
// and that wins over a there (Overrides; the project's carve-out wins
// only over a default that covers the project). Renaming the directory
// dir moves what such an entry protects. nil when none can.
func (l *List) DenyBelow(dir string, a *Entry) *Entry {
	l.ready()
	for _, ix := range []*index{l.deny, l.project} {
		for _, c := range ix.pats {
			if (a == nil || c.entry.Overrides(a)) && c.pat.CanMatchBelow(dir) {
				return c.entry
			}
		}
	}
	return nil
}

// Names reports whether an allow entry names path itself, with no
// wildcard, and no deny entry matches it: the allowlist allows that one
// path on purpose (a block device's node, whose writes reach every file
// on the device, is allowed only so). path must be absolute and clean.
func (l *List) Names(path string) bool {
	l.ready()
	if l.deny.first(path) >= 0 {
		return false
	}
	for _, e := range l.entries {
		if e.Kind == Allow && e.Pattern == path && !strings.ContainsAny(e.Pattern, `*?[\`) {
			return true
		}
	}
	return false
}

// Allowed reports whether path may be written.
func (l *List) Allowed(path string) bool {
	ok, _ := l.Match(path)
	return ok
}

// FromEntries makes the list whose entries are entries, as Entries
// returned them (symlinked prefixes already resolved, defaults and the
// project's carve-out included), for a run replayed from its recording:
// nothing is read from the filesystem. configFile and project are what
// ConfigFile and Project return.
func FromEntries(configFile, project string, entries []Entry) (*List, error) {
	b := &builder{}
	for _, e := range entries {
		p, err := compile(e.Pattern)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %q: %w", ErrBadPattern, e.Kind, e.Pattern, err)
		}
		b.entries = append(b.entries, e)
		b.pats = append(b.pats, p)
	}
	l := &List{configFile: configFile, searchDir: project, projectDir: project}
	b.fill(l)
	return l, nil
}
