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
	base := configDir(r)
	byPath := map[string][]*report.Violation{}
	var paths []string
	for i := range r.Violations {
		v := &r.Violations[i]
		if v.Path == "" || v.Truncated || v.DeniedBy != "" || v.NotEnforced != "" || v.Errno != "" || v.Severity == report.SeverityAttempt || v.Baselined {
			continue
		}
		if tooBroad(v.Path, base, r.Home) || !utf8.ValidString(v.Path) {
			unsuggested = append(unsuggested, v)
			continue
		}
		if byPath[v.Path] == nil {
			paths = append(paths, v.Path)
		}
		byPath[v.Path] = append(byPath[v.Path], v)
	}
	slices.Sort(paths)
	// A path under another one to allow is covered by it.
	var tops []string
	for _, p := range paths {
		if n := len(tops); n > 0 && p != tops[n-1] && pathwalk.Within(p, tops[n-1]) {
			byPath[tops[n-1]] = append(byPath[tops[n-1]], byPath[p]...)
			continue
		}
		tops = append(tops, p)
	}
	// Names of one directory: one glob, unless it would be the whole of
	// the project, the home directory or a directory above them.
	byDir := map[string][]string{}
	var dirs []string
	for _, p := range tops {
		d := filepath.Dir(p)
		if byDir[d] == nil {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], filepath.Base(p))
	}
	slices.Sort(dirs)         // a directory before those below it
	whole := map[string]int{} // directories allowed whole -> their suggestion
	for _, d := range dirs {
		names := byDir[d]
		if i, ok := wholeAbove(whole, d); ok {
			for _, n := range names {
				suggested[i].Covers = append(suggested[i].Covers, byPath[filepath.Join(d, n)]...)
			}
			continue
		}
		globs := map[string][]string{} // entry -> names
		prefix, suffix, _ := nameshape.NameParts(names)
		switch {
		case len(names) > 1 && prefix+suffix != "":
			var pids []int
			for _, n := range names {
				pids = writerPIDs(pids, byPath[filepath.Join(d, n)])
			}
			globs[entryFor(d, joinGlob(randomGlob(prefix, pids), randomGlob(suffix, pids)), base, r.Home)] = names
		case len(names) >= collapseMin && !tooBroad(d, base, r.Home):
			// Nothing shared: the directory itself.
			e := entryFor(filepath.Dir(d), escapeGlobText(filepath.Base(d)), base, r.Home)
			whole[d] = len(suggested)
			s := Suggestion{Entry: e}
			for _, n := range names {
				s.Covers = append(s.Covers, byPath[filepath.Join(d, n)]...)
			}
			suggested = append(suggested, s)
			continue
		default:
			for _, n := range names {
				e := entryFor(d, randomGlob(n, writerPIDs(nil, byPath[filepath.Join(d, n)])), base, r.Home)
				globs[e] = append(globs[e], n)
			}
		}
		for e, ns := range globs {
			s := Suggestion{Entry: e}
			for _, n := range ns {
				s.Covers = append(s.Covers, byPath[filepath.Join(d, n)]...)
			}
			suggested = append(suggested, s)
		}
	}
	slices.SortFunc(suggested, func(a, b Suggestion) int { return cmp.Compare(a.Entry, b.Entry) })
	for i := range suggested {
		slices.SortStableFunc(suggested[i].Covers, func(a, b *report.Violation) int { return cmp.Compare(a.Path, b.Path) })
	}
	return suggested, unsuggested
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
