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
	// parts of names are '*'.
	Entry string
	// Covers are the violations it lets pass, in report order.
	Covers []*report.Violation
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
// this run pass: only writes that succeeded (not attempts) and are not in
// the baseline, not those a
// deny entry matched, not cut paths; an entry for a path is dropped when
// an entry for a directory above it is proposed (an entry covers what is
// below it); names of one directory become one glob of what they share
// ("chart*.xlsx"), and random and numbered parts of a lone name become '*'.
// No entry covers the project, the home directory or a directory above
// either: such a write gets no entry (Unsuggested lists it).
func Suggest(r *report.Report) (suggested []Suggestion, unsuggested []*report.Violation) {
	s := &suggester{base: configDir(r), home: r.Home, whole: map[string]int{}}
	paths, unsuggested := s.gather(r)
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
	base, home string                         // the config file's directory, the home directory
	byPath     map[string][]*report.Violation // the writes to let pass, by path
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
		if tooBroad(v.Path, s.base, s.home) || !utf8.ValidString(v.Path) {
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
// of a whole path that succeeded and is not in the baseline, which no deny
// entry matched and no allow entry already allows (one --enforce could
// not grant exactly).
func suggestable(v *report.Violation) bool {
	return v.Path != "" && !v.Truncated && v.DeniedBy == "" && v.NotEnforced == "" && !v.AllFailed() &&
		v.Severity != report.SeverityAttempt && !v.Baselined
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
// each name. A directory already allowed whole covers them.
func (s *suggester) addDir(d string, names []string) {
	if i, ok := wholeAbove(s.whole, d); ok {
		s.list[i].Covers = append(s.list[i].Covers, s.covers(d, names)...)
		return
	}
	prefix, suffix, _ := nameshape.NameParts(names)
	switch {
	case len(names) > 1 && prefix+suffix != "":
		s.addGlobs(d, map[string][]string{s.sharedGlob(d, prefix, suffix, names): names})
	case len(names) >= collapseMin && !tooBroad(d, s.base, s.home):
		s.addWhole(d, names)
	default:
		s.addGlobs(d, s.nameGlobs(d, names))
	}
}

// sharedGlob is the entry for the names of d that share prefix and suffix.
func (s *suggester) sharedGlob(d, prefix, suffix string, names []string) string {
	var pids []int
	for _, n := range names {
		pids = writerPIDs(pids, s.byPath[filepath.Join(d, n)])
	}
	return entryFor(d, joinGlob(randomGlob(prefix, pids), randomGlob(suffix, pids)), s.base, s.home)
}

// nameGlobs gives each of the names of d its entry, with its random and
// numbered parts as '*': entry -> names.
func (s *suggester) nameGlobs(d string, names []string) map[string][]string {
	globs := map[string][]string{}
	for _, n := range names {
		e := entryFor(d, randomGlob(n, writerPIDs(nil, s.byPath[filepath.Join(d, n)])), s.base, s.home)
		globs[e] = append(globs[e], n)
	}
	return globs
}

// addWhole suggests directory d itself, for names that share nothing.
func (s *suggester) addWhole(d string, names []string) {
	e := entryFor(filepath.Dir(d), escapeGlobText(filepath.Base(d)), s.base, s.home)
	s.whole[d] = len(s.list)
	s.list = append(s.list, Suggestion{Entry: e, Covers: s.covers(d, names)})
}

// addGlobs suggests the entries of globs (entry -> names of d).
func (s *suggester) addGlobs(d string, globs map[string][]string) {
	for e, names := range globs {
		s.list = append(s.list, Suggestion{Entry: e, Covers: s.covers(d, names)})
	}
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

// randomGlob turns the random and numbered parts of a name into '*':
// "outline_demo_158482901.pdf" is "outline_demo_*.pdf"; a number that is
// one of pids, the writers' process IDs, too: "scratch-355.tmp" by
// process 355 is "scratch-*.tmp".
func randomGlob(name string, pids []int) string {
	return nameshape.VaryingName(escapeGlobText(name), pids)
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
