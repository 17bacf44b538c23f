package render

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/golden"
	"github.com/writewatch/writewatch/report"
	"gopkg.in/yaml.v3"
)

// The configs the proposal's allow entries are added to: each kept with
// its comments, in testdata/suggest/NAME.yaml.
var addAllowCases = []struct{ name, config string }{
	{"flow-empty", "allow: []\n"},
	{"flow", "allow: [a, 'b c']  # the usual\ndeny: [.git]\n"},
	{"block", "# the project's config\nallow:\n  - tests/**  # fixtures\n\n  # generated\n  - build\ndeny:\n  - .git\n"},
	{"block-unindented", "allow:\n- a\n- {path: /srv/scratch, broad: true}\n"},
	{"no-allow", "deny:\n  - tests/golden/**\n# the end\n"},
	{"null-allow", "allow: # none yet\ndeny:\n  - .git\n"},
	{"comments-only", "# nothing here yet\n"},
	{"empty", ""},
	{"defaults", "defaults:\n  tmp: false # our own TMPDIR\n"},
}

func addAllowItems() []*yaml.Node {
	return []*yaml.Node{
		suggestionNode(&Suggestion{Entry: "out/", Covers: []*report.Violation{{Op: "mkdir", Severity: report.SeverityLeftBehind, Who: report.Who{Test: "TestOut"}}}}),
		suggestionNode(&Suggestion{Entry: "~/.config/app/config.toml", Covers: []*report.Violation{{Op: "open", Severity: report.SeverityDataLoss}}}),
		suggestionNode(&Suggestion{Entry: "*.log", Covers: []*report.Violation{{Op: "open", Severity: report.SeverityTransient}}, NewNames: true}),
	}
}

func TestAddAllowGolden(t *testing.T) {
	for _, c := range addAllowCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := addAllow([]byte(c.config), addAllowItems(), "")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "suggest/"+c.name+".yaml", got)
			checkLists(t, c.config, got, nil, []string{"out/", "~/.config/app/config.toml", "*.log"})
			// The comments of the config are all kept.
			for _, line := range strings.Split(c.config, "\n") {
				if _, comment, ok := strings.Cut(line, "#"); ok && !strings.Contains(string(got), "#"+comment) {
					t.Errorf("comment %q lost:\n%s", comment, got)
				}
			}
		})
	}
}

// Written elsewhere, the config's relative entries become absolute;
// those from /, ~ or a variable stay, and so do the comments.
func TestAddAllowRebase(t *testing.T) {
	config := "allow:\n  - tests/**  # fixtures\n  - ~/.cache/app\n  - /srv/data\n  - $HOME/x\n  - {path: 'build', broad: false}\n  - '[ab]*.tmp'\ndeny:\n  - tests/golden/**\n"
	got, err := addAllow([]byte(config), addAllowItems()[:1], "/home/dev/my proj")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "suggest/rebased.yaml", got)
	checkLists(t, "", got, []string{`/home/dev/my proj/tests/**`, "~/.cache/app", "/srv/data", "$HOME/x", "map[broad:false path:/home/dev/my proj/build]",
		`/home/dev/my proj/[ab]*.tmp`, "out/"}, nil)
}

// checkLists decodes got and checks its allow list: the config's items
// followed by extra, or exactly want.
func checkLists(t *testing.T, config string, got []byte, want, extra []string) {
	t.Helper()
	var before, after struct{ Allow []any }
	if err := yaml.Unmarshal([]byte(config), &before); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(got, &after); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, got)
	}
	str := func(l []any) []string {
		var out []string
		for _, x := range l {
			out = append(out, strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(fmtAny(x), "\n", " "), "  ", " ")))
		}
		return out
	}
	if want == nil {
		want = append(str(before.Allow), extra...)
	}
	if g := str(after.Allow); !slices.Equal(g, want) {
		t.Errorf("allow list %q, want %q\n%s", g, want, got)
	}
}

func fmtAny(x any) string {
	if m, ok := x.(map[string]any); ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+":"+fmtAny(m[k]))
		}
		return "map[" + strings.Join(parts, " ") + "]"
	}
	if b, ok := x.(bool); ok {
		if b {
			return "true"
		}
		return "false"
	}
	s, _ := x.(string)
	return s
}

func TestWriteSuggestedConfigGolden(t *testing.T) {
	for _, c := range []struct {
		Name   string
		Report func() *report.Report
		config string
		file   string
	}{
		{"rich", richReport, "# the project's config\nallow:\n  - tests/**\ndeny:\n  - .git\n", "/home/dev/proj/.writewatch.yaml.new"},
		{"rich-elsewhere", richReport, "# the project's config\nallow:\n  - tests/**\ndeny:\n  - .git\n", "/tmp/proposal.yaml"},
		{"tests", testsReport, "", ""},
		{"tests-elsewhere", testsReport, "", "/tmp/proposal.yaml"},
		{"names", namesReport, "allow: []\n", "/home/dev/proj/.writewatch.yaml"},
	} {
		t.Run(c.Name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteSuggestedConfig(&buf, c.Report(), []byte(c.config), c.file); err != nil {
				t.Fatal(err)
			}
			var v any
			if err := yaml.Unmarshal(buf.Bytes(), &v); err != nil {
				t.Errorf("not YAML: %v\n%s", err, buf.String())
			}
			golden.Check(t, c.Name+".suggested.yaml", buf.Bytes())
		})
	}
}

// namesReport is a run whose writes have random names, in the home
// directory's shared directories, and one --enforce refused.
func namesReport() *report.Report {
	r := &report.Report{Command: []string{"pytest"}, WorkDir: "/home/dev/proj", ConfigFile: "/home/dev/proj/.writewatch.yaml", Home: "/home/dev",
		Started: t0}
	add := func(op, path, sev string, pid int) {
		r.Violations = append(r.Violations, report.Violation{Op: op, Path: path, Severity: sev, PID: pid, Action: report.ActionReported,
			Who: report.Who{Test: "test_" + op}})
	}
	// Atomic writes in three directories, by Python's tempfile: one name
	// has no digit, and is told random by the others.
	add("open", "/home/dev/proj/data/a/info.json.k3j_x9ab.tmp", report.SeverityTransient, 0)
	add("open", "/home/dev/proj/data/b/info.json.pisfjhwy.tmp", report.SeverityTransient, 0)
	add("open", "/home/dev/proj/data/c/info.json.q8dk2m1a.tmp", report.SeverityTransient, 0)
	// mktemp -d -p ~ --suffix=-dotdrop-tests, and a file in it.
	add("mkdir", "/home/dev/tmp.Xa3bQ9zLkP-dotdrop-tests", report.SeverityTransient, 0)
	add("open", "/home/dev/tmp.Xa3bQ9zLkP-dotdrop-tests/dotfile", report.SeverityTransient, 0)
	// ~/.config made by the run, one app's directory in it, and three
	// files of apps that share nothing.
	add("mkdir", "/home/dev/.config", report.SeverityLeftBehind, 0)
	add("mkdir", "/home/dev/.config/myapp", report.SeverityTransient, 0)
	add("open", "/home/dev/.config/myapp/settings.json", report.SeverityTransient, 0)
	add("open", "/home/dev/.config/alpha.toml", report.SeverityLeftBehind, 0)
	add("open", "/home/dev/.config/beta.ini", report.SeverityLeftBehind, 0)
	add("open", "/home/dev/.config/gamma.json", report.SeverityLeftBehind, 0)
	// Refused by --enforce=block.
	r.Violations = append(r.Violations, report.Violation{Op: "mkdir", Path: "/home/dev/.local/share/tool", Errno: "EACCES",
		Severity: report.SeverityAttempt, Action: report.ActionBlocked, Who: report.Who{Test: "test_tool"}})
	return r
}

func TestSuggestNames(t *testing.T) {
	got, unsuggested := Suggest(namesReport())
	var entries []string
	for _, s := range got {
		entries = append(entries, s.Entry)
	}
	want := []string{
		"data/a/info.json.*.tmp", "data/b/info.json.*.tmp", "data/c/info.json.*.tmp",
		"~/.config/alpha.toml", "~/.config/beta.ini", "~/.config/gamma.json", "~/.config/myapp/",
		"~/.local/share/tool/", "~/tmp.*-dotdrop-tests",
	}
	if !slices.Equal(entries, want) {
		t.Errorf("entries\n%q\nwant\n%q", entries, want)
	}
	if len(unsuggested) != 1 || unsuggested[0].Path != "/home/dev/.config" {
		t.Errorf("unsuggested: %v, want the mkdir of ~/.config alone", unsuggested)
	}

	// The next run's names, random again, are allowed.
	next := []string{
		"/home/dev/proj/data/a/info.json.zz9_ab1c.tmp", "/home/dev/proj/data/b/info.json.u2mmq8rt.tmp", "/home/dev/proj/data/c/info.json.abcdefgh.tmp",
		"/home/dev/tmp.QwE4rTy7Ui-dotdrop-tests/dotfile", "/home/dev/.config/myapp/settings.json", "/home/dev/.local/share/tool",
	}
	for _, path := range next {
		if !slices.ContainsFunc(entries, func(e string) bool { return entryAllows(t, e, path) }) {
			t.Errorf("%s: no entry allows it", path)
		}
	}
	// Nor do they allow all of ~/.config.
	if slices.ContainsFunc(entries, func(e string) bool { return entryAllows(t, e, "/home/dev/.config/other/x") }) {
		t.Errorf("an entry allows all of ~/.config: %q", entries)
	}
}

// entryAllows reports whether entry e, in /home/dev/proj/.writewatch.yaml
// with the home directory /home/dev, allows a write to path.
func entryAllows(t *testing.T, e, path string) bool {
	t.Helper()
	switch {
	case strings.HasPrefix(e, "~/"):
		e = "/home/dev" + e[1:]
	case !strings.HasPrefix(e, "/"):
		e = "/home/dev/proj/" + e
	}
	p, err := allowlist.Compile(filepath.Clean(e))
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	for d := path; d != "/"; d = filepath.Dir(d) {
		if p.Match(d) {
			return true
		}
	}
	return false
}
