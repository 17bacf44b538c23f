package render

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/report"
)

func TestSuggest(t *testing.T) {
	proj := t.TempDir()
	home := t.TempDir()
	r := emptyReport()
	r.WorkDir, r.Home, r.ConfigFile = proj, home, filepath.Join(proj, ".writewatch.yaml")
	add := func(op, path, sev string, mod ...func(*report.Violation)) {
		v := report.Violation{Op: op, Path: path, Severity: sev, Who: report.Who{Test: "TestX", Runner: report.RunnerGo, Package: "p"}}
		for _, m := range mod {
			m(&v)
		}
		r.Violations = append(r.Violations, v)
	}
	// A directory made, with everything under it: one entry.
	add("mkdir", home+"/.config/app", report.SeverityLeftBehind)
	add("open", home+"/.config/app/config.toml", report.SeverityLeftBehind)
	// Numbered names in one directory: one glob.
	add("open", proj+"/outline_demo_158482901.pdf", report.SeverityLeftBehind)
	add("open", proj+"/outline_demo_2342.pdf", report.SeverityTransient)
	// A lone numbered name.
	add("open", "/var/tmp/run-20250314.log", report.SeverityLeftBehind)
	// A name with the writer's pid, three digits; a small number that
	// is not a pid stays.
	add("open", proj+"/scratch-355.tmp", report.SeverityTransient, func(v *report.Violation) { v.PID = 355 })
	add("open", proj+"/v2/page-12.txt", report.SeverityLeftBehind, func(v *report.Violation) { v.PID = 355 })
	// Names sharing nothing, three of them, in a directory of their own.
	for _, n := range []string{"a.json", "b.yaml", "c.txt"} {
		add("open", proj+"/out/"+n, report.SeverityLeftBehind)
	}
	// Failed attempts get nothing; the home directory itself gets nothing.
	add("unlink", "/d", report.SeverityAttempt, func(v *report.Violation) { v.Errno = "ENOENT" })
	add("open", "/hopefully not existing", report.SeverityAttempt, func(v *report.Violation) { v.Errno = "EACCES" })
	add("chmod", home, report.SeverityDataLoss)

	got, unsuggested := Suggest(r)
	var entries []string
	for _, s := range got {
		entries = append(entries, s.Entry)
	}
	want := []string{"/var/tmp/run-*.log", "out/", "outline_demo_*.pdf", "scratch-*.tmp", "v2/page-12.txt", "~/.config/app/"}
	if !slices.Equal(entries, want) {
		t.Errorf("entries %q, want %q", entries, want)
	}
	if len(unsuggested) != 1 || unsuggested[0].Path != home {
		t.Errorf("unsuggested %+v, want the chmod of the home directory", unsuggested)
	}

	// The entries, in a config file, allow every write they cover, and
	// the allowlist takes them as they are (none is too broad).
	var cfg strings.Builder
	cfg.WriteString("allow:\n")
	for _, e := range entries {
		s, _ := yamlScalar(e)
		cfg.WriteString("  - " + s + "\n")
	}
	if err := os.WriteFile(r.ConfigFile, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := allowlist.Load(allowlist.Options{ConfigPath: r.ConfigFile, WorkDir: proj, Home: home,
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("%v\n%s", err, cfg.String())
	}
	for _, s := range got {
		for _, v := range s.Covers {
			if !list.Allowed(v.Path) {
				t.Errorf("%s: entry %q does not allow it", v.Path, s.Entry)
			}
		}
	}
	if list.Allowed(proj + "/other.pdf") {
		t.Errorf("an entry allows the project's other files")
	}
	if s := got[len(got)-1]; s.Severity() != report.SeverityLeftBehind || !slices.Equal(s.Tests(), []string{"TestX"}) {
		t.Errorf("~/.config/app: severity %q, tests %q", s.Severity(), s.Tests())
	}
}
