package render

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/nameshape"
	"github.com/writewatch/writewatch/internal/pathwalk"
	"github.com/writewatch/writewatch/report"
)

// Suggestion is one allow entry that would let writes of this run pass.
type Suggestion struct {
	// Entry is the allowlist entry as it would be written in the config
	// file: relative to the config file's directory when under it, "~/"
	// for the home directory, absolute otherwise; random and numbered
	// parts of names are '*'. A directory named as it is ends in '/',
	// which --enforce makes before the run when it is missing.
	Entry string
	// Covers are the violations it lets pass, in report order.
	Covers []*report.Violation
	// NewNames says the entry is a glob that the run's writes made new
	// names of: --enforce can grant only the names there at start.
	NewNames bool
}

// Severity is the worst severity of the writes s covers.
func (s *Suggestion) Severity() string {
	worst := ""
	for i, v := range s.Covers {
		if i == 0 || report.SeverityRank(v.Severity) < report.SeverityRank(worst) {
			worst = v.Severity
		}
	}
	return worst
}

// Tests lists the tests (or, for writes no test made, what is known of
// who made them) whose writes s covers, each once.
func (s *Suggestion) Tests() []string {
	var out []string
	for _, v := range s.Covers {
		who := v.Test
		if who == "" && attributed(v) {
			who = whoText(v)
		}
		if who != "" && !slices.Contains(out, who) {
			out = append(out, who)
		}
	}
	return out
}

// Suggest proposes the fewest allow entries that would let the writes of
// this run pass, relative to the config file's directory (see suggest).
func Suggest(r *report.Report) (suggested []Suggestion, unsuggested []*report.Violation) {
	return suggest(r, configDir(r), configDir(r))
}

// suggest proposes the fewest allow entries that would let the writes of
// this run pass: only writes that succeeded (not attempts) or that
// --enforce refused, and are not in the baseline, not those a deny entry
// matched, not cut paths; an entry for a path is dropped when an entry
// for a directory above it is proposed (an entry covers what is below
// it); names of one directory become one glob of what they share
// ("chart*.xlsx"), and random and numbered parts of a lone name become
// '*' (nameshape.Varying, and nameshape.Alike across the run's names).
// No entry covers the project, the home directory, a directory above
// either, or a directory many programs share (~/.config, /etc: see
// sharedDir): such a write gets no entry (Unsuggested lists it), and the
// names in a shared directory get an entry each. Entries are relative to
// base when under it ("" for none), from "~/" under the home directory,
// else absolute; read is where the config will be read from, a project
// too when it is not base.
func suggest(r *report.Report, base, read string) (suggested []Suggestion, unsuggested []*report.Violation) {
	s := &suggester{base: base, home: r.Home, projects: []string{configDir(r)}, whole: map[string]int{}}
	if read != "" && read != configDir(r) {
		s.projects = append(s.projects, read)
	}
	paths, unsuggested := s.gather(r)
	s.alike = alikeNames(paths, s.byPath)
	byDir, dirs := byDirectory(s.topPaths(paths))
	for _, d := range dirs {
		s.addDir(d, byDir[d])
	}
	slices.SortFunc(s.list, func(a, b Suggestion) int { return cmp.Compare(a.Entry, b.Entry) })
	for i := range s.list {
		slices.SortStableFunc(s.list[i].Covers, func(a, b *report.Violation) int { return cmp.Compare(a.Path, b.Path) })
	}
	return s.list, unsuggested
}

// suggester builds the suggestions for one report.
type suggester struct {
	base, home string                         // entries are relative to base, "~/" is home
	projects   []string                       // no entry may cover these
	byPath     map[string][]*report.Violation // the writes to let pass, by path
	alike      map[string][]nameshape.Span    // the parts of names found varying across the run
	whole      map[string]int                 // directories allowed whole -> their suggestion
	list       []Suggestion
}

// gather groups by path the writes an entry would let pass, and returns
// their paths, sorted, and the writes no entry may cover, in report order.
func (s *suggester) gather(r *report.Report) (paths []string, unsuggested []*report.Violation) {
	s.byPath = map[string][]*report.Violation{}
	for i := range r.Violations {
		v := &r.Violations[i]
		if !suggestable(v) {
			continue
		}
		if s.tooBroad(v.Path) || sharedDir(v.Path, s.home) || !utf8.ValidString(v.Path) {
			unsuggested = append(unsuggested, v)
			continue
		}
		if s.byPath[v.Path] == nil {
			paths = append(paths, v.Path)
		}
		s.byPath[v.Path] = append(s.byPath[v.Path], v)
	}
	slices.Sort(paths)
	return paths, unsuggested
}

// suggestable reports whether an allow entry is what v calls for: a write
// of a whole path that succeeded, or that --enforce refused, and is not
// in the baseline, which no deny entry matched and no allow entry already
// allows (one --enforce could not grant exactly).
func suggestable(v *report.Violation) bool {
	if v.Path == "" || v.Truncated || v.DeniedBy != "" || v.NotEnforced != "" || v.Baselined {
		return false
	}
	return refused(v) || !v.AllFailed() && v.Severity != report.SeverityAttempt
}

// refused reports whether --enforce refused v.
func refused(v *report.Violation) bool {
	return v.Action == report.ActionBlocked || v.Action == report.ActionBlockedKilled
}

// alikeNames finds the parts of the names of paths that vary across the
// run (nameshape.Alike), by path.
func alikeNames(paths []string, byPath map[string][]*report.Violation) map[string][]nameshape.Span {
	var names []string
	var pids []int
	for _, p := range paths {
		names = append(names, filepath.Base(p))
		pids = writerPIDs(pids, byPath[p])
	}
	byName := nameshape.Alike(names, pids)
	out := map[string][]nameshape.Span{}
	for _, p := range paths {
		if spans := byName[filepath.Base(p)]; spans != nil {
			out[p] = spans
		}
	}
	return out
}

// topPaths drops from paths, sorted, those under another one to allow,
// which is given their writes: an entry covers what is below it.
func (s *suggester) topPaths(paths []string) []string {
	var tops []string
	for _, p := range paths {
		if n := len(tops); n > 0 && p != tops[n-1] && pathwalk.Within(p, tops[n-1]) {
			s.byPath[tops[n-1]] = append(s.byPath[tops[n-1]], s.byPath[p]...)
			continue
		}
		tops = append(tops, p)
	}
	return tops
}

// byDirectory groups the names of paths by their directory, and lists
// the directories sorted: a directory before those below it.
func byDirectory(paths []string) (map[string][]string, []string) {
	byDir := map[string][]string{}
	var dirs []string
	for _, p := range paths {
		d := filepath.Dir(p)
		if byDir[d] == nil {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], filepath.Base(p))
	}
	slices.Sort(dirs)
	return byDir, dirs
}

// addDir suggests entries for the names of directory d: one glob of what
// they share, else the directory itself when they are many, else one for
// each name. A directory already allowed whole covers them. In a
// directory many programs share, or one no entry may cover, each name
// gets its own.
func (s *suggester) addDir(d string, names []string) {
	if i, ok := wholeAbove(s.whole, d); ok {
		s.list[i].Covers = append(s.list[i].Covers, s.covers(d, names)...)
		return
	}
	own := sharedDir(d, s.home) || s.tooBroad(d)
	if glob, ok := s.oneGlob(d, names); ok && len(names) > 1 && (!own || !strings.HasPrefix(glob, "*")) {
		s.addGlobs(d, map[string][]string{entryFor(d, glob, s.base, s.home): names})
		return
	}
	if len(names) >= collapseMin && !own {
		s.addWhole(d, names)
		return
	}
	s.addGlobs(d, s.nameGlobs(d, names))
}

// oneGlob is the one glob for the names of d, when they share something
// ("chart*.xlsx", nameshape.SharedGlob).
func (s *suggester) oneGlob(d string, names []string) (string, bool) {
	return nameshape.SharedGlob(names, func(n string) []nameshape.Span { return s.varying(d, n) }, escapeGlobText)
}

// varying are the parts of name, in d, that vary from one run to the
// next: its random and numbered parts, the writers' pids, and those
// found varying across the run's names.
func (s *suggester) varying(d, name string) []nameshape.Span {
	p := filepath.Join(d, name)
	return nameshape.Merge(nameshape.Varying(name, writerPIDs(nil, s.byPath[p])), s.alike[p])
}

// nameGlob is name, in d, with its random and numbered parts as '*'.
func (s *suggester) nameGlob(d, name string) string {
	return nameshape.Join(name, s.varying(d, name), escapeGlobText)
}

// nameGlobs gives each of the names of d its entry, with its random and
// numbered parts as '*': entry -> names. A name with none, which the
// run made a directory of, ends in '/'.
func (s *suggester) nameGlobs(d string, names []string) map[string][]string {
	globs := map[string][]string{}
	for _, n := range names {
		g := s.nameGlob(d, n)
		if g == escapeGlobText(n) && s.isDir(filepath.Join(d, n)) {
			g += "/"
		}
		e := entryFor(d, g, s.base, s.home)
		globs[e] = append(globs[e], n)
	}
	return globs
}

// isDir reports whether the run's writes show path is a directory: it
// made or removed one there, or wrote below it.
func (s *suggester) isDir(path string) bool {
	for _, v := range s.byPath[path] {
		if v.Path != path || v.Op == "mkdir" || v.Op == "rmdir" {
			return true
		}
	}
	return false
}

// addWhole suggests directory d itself, for names that share nothing.
func (s *suggester) addWhole(d string, names []string) {
	e := entryFor(filepath.Dir(d), escapeGlobText(filepath.Base(d))+"/", s.base, s.home)
	s.whole[d] = len(s.list)
	s.list = append(s.list, Suggestion{Entry: e, Covers: s.covers(d, names)})
}

// addGlobs suggests the entries of globs (entry -> names of d).
func (s *suggester) addGlobs(d string, globs map[string][]string) {
	for e, names := range globs {
		sg := Suggestion{Entry: e, Covers: s.covers(d, names)}
		sg.NewNames = wildcard(e) && madeNames(sg.Covers)
		s.list = append(s.list, sg)
	}
}

// wildcard reports whether entry e has a '*' that is not escaped.
func wildcard(e string) bool {
	for i := 0; i < len(e); i++ {
		switch e[i] {
		case '\\':
			i++
		case '*':
			return true
		}
	}
	return false
}

// madeNames reports whether writes of vs made a new name.
func madeNames(vs []*report.Violation) bool {
	for _, v := range vs {
		if v.Severity == report.SeverityLeftBehind || v.Severity == report.SeverityTransient || refused(v) {
			return true
		}
	}
	return false
}

// covers lists the writes of the names of d.
func (s *suggester) covers(d string, names []string) []*report.Violation {
	var out []*report.Violation
	for _, n := range names {
		out = append(out, s.byPath[filepath.Join(d, n)]...)
	}
	return out
}

// wholeAbove finds the directory allowed whole that d is in or below.
func wholeAbove(whole map[string]int, d string) (int, bool) {
	for dir, i := range whole {
		if pathwalk.Within(d, dir) {
			return i, true
		}
	}
	return 0, false
}

// tooBroad reports whether an entry for path would cover a project, the
// home directory or /.
func (s *suggester) tooBroad(path string) bool {
	for _, p := range s.projects {
		if tooBroad(path, p, s.home) {
			return true
		}
	}
	return len(s.projects) == 0 && tooBroad(path, "", s.home)
}

// tooBroad reports whether an entry for path would cover the project,
// the home directory or /.
func tooBroad(path, project, home string) bool {
	for _, d := range []string{project, home, "/"} {
		if d != "" && pathwalk.Within(d, path) {
			return true
		}
	}
	return false
}

// homeShared are the directories of the home directory that many
// programs keep their own directories in (the XDG base directories).
var homeShared = []string{".config", ".cache", ".local", ".local/share", ".local/state", ".local/bin", ".local/lib"}

// systemShared are the system's directories that many programs keep
// their own directories in.
var systemShared = []string{"/etc", "/var", "/usr", "/opt", "/srv", "/run", "/tmp", "/home", "/root", "/mnt", "/media",
	"/dev", "/boot", "/lib", "/lib64", "/bin", "/sbin", "/snap", "/nix",
	"/var/lib", "/var/cache", "/var/log", "/var/tmp", "/var/spool", "/usr/local", "/usr/local/bin",
	"/usr/local/lib", "/usr/local/share", "/usr/local/etc", "/usr/lib", "/usr/share", "/usr/bin", "/run/user"}

// sharedDir reports whether path is a directory many programs keep
// their own directories in: ~/.config, ~/.cache, ~/.local and those of
// its own, /etc, /var, /opt, /var/lib, /usr/local and the like. An entry
// for one would let a test write to every program's files; one
// program's own directory in it is what to allow.
func sharedDir(path, home string) bool {
	if slices.Contains(systemShared, path) {
		return true
	}
	if home == "" {
		return false
	}
	rel, ok := strings.CutPrefix(path, strings.TrimSuffix(home, "/")+"/")
	return ok && slices.Contains(homeShared, rel)
}

// escapeGlobText escapes the characters a pattern reads as wildcards.
func escapeGlobText(s string) string {
	e := allowlist.Literal(s)
	return strings.TrimPrefix(e, "./")
}

// entryFor writes the entry for name (a glob, escaped) in dir: relative
// to base when under it, from "~/" when under home, else absolute.
func entryFor(dir, name, base, home string) string {
	lit := func(p string) string { return strings.TrimPrefix(allowlist.Literal(p), "./") }
	var e string
	switch {
	case base != "" && pathwalk.Within(dir, base):
		rel, _ := filepath.Rel(base, dir)
		e = lit(rel) + "/" + name
		e = strings.TrimPrefix(e, "./")
	case home != "" && pathwalk.Within(dir, home):
		rel, _ := filepath.Rel(home, dir)
		e = "~/" + strings.TrimPrefix(lit(rel)+"/"+name, "./")
	default:
		e = lit(dir) + "/" + name
		if dir == "/" {
			e = "/" + name
		}
	}
	if strings.HasPrefix(e, "~") && !strings.HasPrefix(e, "~/") {
		e = "./" + e
	}
	return e
}
