package render

import (
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/report"
)

// The text report's "How to fix" section: the allow entries to add,
// the temporary directory to use, the writes only a fixed test can stop.

// ownWrites reports whether a write that fails the run is not to a
// system path.
func ownWrites(r *report.Report) bool {
	for i := range r.Violations {
		if v := &r.Violations[i]; v.Fails() && !systemPath(r, v) {
			return true
		}
	}
	return false
}

// marked counts the violations an allow entry cannot fix as it is
// suggested.
type marked struct {
	denied     int // matched a deny entry
	unenforced int // allowed by an entry --enforce cannot grant exactly
	truncated  int // of a path cut short, that succeeded
}

func countMarked(vs []report.Violation) marked {
	var m marked
	for i := range vs {
		switch v := &vs[i]; {
		case v.DeniedBy != "":
			m.denied++
		case v.NotEnforced != "":
			m.unenforced++
		case v.Truncated && !v.AllFailed():
			m.truncated++
		}
	}
	return m
}

// allowEntries are the YAML list items of the allow entries suggested,
// and a comment for each path that is not valid UTF-8.
func allowEntries(r *report.Report, suggested []Suggestion, unsuggested []*report.Violation) []string {
	var entries []string
	for _, s := range suggested {
		if e, ok := yamlScalar(s.Entry); ok {
			entries = append(entries, "- "+e)
		}
	}
	for _, v := range unsuggested {
		if !utf8.ValidString(v.Path) {
			p := v.Path
			if rel, ok := relUnder(p, configDir(r)); ok {
				p = rel
			}
			entries = append(entries, "# "+displayPath(p)+" is not valid UTF-8: allow a directory above it")
		}
	}
	return entries
}

func invalidUTF8(vs []*report.Violation) int {
	n := 0
	for _, v := range vs {
		if !utf8.ValidString(v.Path) {
			n++
		}
	}
	return n
}

func (t *textWriter) howToFix(r *report.Report) {
	if !r.Failed() {
		return
	}
	t.line()
	t.line("How to fix:")
	t.tempDirFix(r)
	suggested, unsuggested := Suggest(r)
	marked := countMarked(r.Violations)
	t.allowFix(r, allowEntries(r, suggested, unsuggested), marked.truncated)
	if broad := len(unsuggested) - invalidUTF8(unsuggested); broad > 0 {
		t.line("    ", plural(broad, "write", "writes"), " to the project, the home directory or a directory above them ",
			pick(broad == 1, "gets", "get"), " no entry: fix the test.")
	}
	t.markedFixes(r, marked)
}

// tempDirFix tells to write under a temporary directory, and how for
// each test that can be told; then what to do of writes to system paths,
// which no temporary directory takes.
func (t *textWriter) tempDirFix(r *report.Report) {
	system := systemWrites(r)
	defer t.systemFix(system)
	fixes := testFixes(r)
	if len(fixes) == 0 && len(system) > 0 && !ownWrites(r) {
		return
	}
	if len(fixes) == 0 {
		t.line("  - Make the tests write under a temporary directory: t.TempDir() in Go, the tmp_path fixture in pytest.")
		return
	}
	t.line("  - Make the tests write under a temporary directory:")
	for _, f := range fixes {
		t.line("      ", f)
	}
}

// systemFix says what to do of the writes to system paths.
func (t *textWriter) systemFix(lines []string) {
	if len(lines) == 0 {
		return
	}
	t.line("  - Writes to system paths, which a library or tool the tests use makes on its own: a temporary directory cannot take them.")
	t.line("    Allow them if they are expected (below), or point the library elsewhere if it reads a setting or an environment variable for the path:")
	for _, l := range lines {
		t.line("      ", l)
	}
}

// allowFix shows the allow list to write, if the writes are expected;
// truncated paths are not in it: a directory above them is.
func (t *textWriter) allowFix(r *report.Report, entries []string, truncated int) {
	if len(entries) == 0 {
		if truncated > 0 {
			t.line("  - Or, if these writes are expected, allow a directory above the truncated ",
				pick(truncated == 1, "path", "paths"), " in ", pick(r.ConfigFile == "", allowlist.ConfigFileName, displayPath(configName(r))), ".")
		}
		return
	}
	if r.ConfigFile == "" {
		t.line("  - Or, if these writes are expected, create ", allowlist.ConfigFileName, " in ", displayPath(r.WorkDir), " with:")
	} else {
		t.line("  - Or, if these writes are expected, add them to the allow list in ", displayPath(configName(r)), ":")
	}
	t.line()
	t.line("        allow:")
	for _, e := range entries {
		t.line("          ", e)
	}
	t.line()
	if truncated > 0 {
		t.line("    ", pick(truncated == 1, "The truncated path is", "Truncated paths are"),
			" not listed: allow a directory above ", pick(truncated == 1, "it", "them"), " instead.")
	}
}

// markedFixes tells what to do of denied and unenforced writes, and of
// refusals lost.
func (t *textWriter) markedFixes(r *report.Report, m marked) {
	if m.denied > 0 {
		t.line("  - Writes marked \"denied by\" match a deny rule: an allow entry does not lift it; change that rule if they are expected.")
	}
	if m.unenforced > 0 {
		t.line("  - Writes marked \"allowed by …, but --enforce cannot grant it exactly\" are allowed by an entry the kernel cannot")
		t.line("    grant as written (writewatch --print-config says how each entry is enforced): it grants only what is there")
		t.line("    when the run starts, so a glob's new names and a path missing at start are refused. Allow their directory,")
		t.line("    with a trailing / (~/.config/myapp/): --enforce then makes it before the run when it is missing.")
	}
	if r.LostRefusals > 0 {
		t.line("  - To see every refused write, run again with a larger ring buffer (--ringbuf-mib).")
	}
}
