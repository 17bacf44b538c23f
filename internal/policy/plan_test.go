package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/allowlist"
)

func tree(t *testing.T, paths ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func entry(kind allowlist.Kind, pattern string) allowlist.Entry {
	return allowlist.Entry{Kind: kind, Pattern: pattern, Raw: pattern, Source: "test"}
}

func grants(p *Plan, root string) []string {
	var out []string
	for _, g := range p.Grants {
		s := strings.TrimPrefix(g.Path, root)
		if g.Dir {
			s += "/"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// No grant ever covers a path a deny entry names, and what is granted is
// allowed: the safe side, whatever the entries.
func TestPlanNeverGrantsDenied(t *testing.T) {
	root := tree(t, "tests/a.txt", "tests/golden/g.txt", "tests/sub/s.txt", "tests/x.lock", "build/out/o.txt", "other/", "gen-1/f", "gen-2/f", "gen-x/f")
	entries := []allowlist.Entry{
		entry(allowlist.Allow, root+"/tests"),
		entry(allowlist.Allow, root+"/build"),
		entry(allowlist.Allow, root+"/missing"),
		entry(allowlist.Allow, root+"/gen-[0-9]"),
		entry(allowlist.Allow, "/**/__pycache__"),
		entry(allowlist.Deny, root+"/tests/golden"),
		entry(allowlist.Deny, root+"/tests/*.lock"),
	}
	p, err := NewPlan(entries)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/build/", "/gen-1/", "/gen-2/", "/tests/a.txt", "/tests/sub/"}
	if got := grants(p, root); !slices.Equal(got, want) {
		t.Errorf("grants:\n got %v\nwant %v", got, want)
	}
	hows := map[string]How{}
	for _, e := range p.Entries {
		hows[strings.TrimPrefix(e.Entry.Pattern, root)] = e.How
	}
	for pat, want := range map[string]How{
		"/tests": Narrowed, "/build": Exact, "/missing": Missing, "/gen-[0-9]": Expanded,
		"/**/__pycache__": Inexpressible, "/tests/golden": DenyExact,
	} {
		if hows[pat] != want {
			t.Errorf("%s: how %d, want %d", pat, hows[pat], want)
		}
	}
	if !slices.Equal(p.Denied, []string{root + "/tests/golden", root + "/tests/x.lock"}) {
		t.Errorf("denied: %v", p.Denied)
	}

	// Every granted path and everything under it is allowed by the list.
	list := func(path string) bool {
		for _, e := range entries {
			if e.Kind == allowlist.Deny && allowlist.MustCompile(e.Pattern).Match(path) {
				return false
			}
		}
		return true
	}
	for _, g := range p.Grants {
		for _, probe := range []string{g.Path, g.Path + "/new", g.Path + "/x.lock", g.Path + "/golden/x"} {
			if !list(probe) && (probe == g.Path || g.Dir) {
				t.Errorf("grant %s lets through %s, which a deny entry names", g.Path, probe)
			}
		}
	}
}

func TestPlanPrefixes(t *testing.T) {
	root := tree(t, "d/", "f")
	p, err := NewPlan([]allowlist.Entry{entry(allowlist.Allow, root+"/d"), entry(allowlist.Allow, root+"/f")})
	if err != nil {
		t.Fatal(err)
	}
	dirs, exact := p.Prefixes(255)
	if !slices.Equal(dirs, []string{root + "/d/"}) || !slices.Equal(exact, []string{root + "/d", root + "/f"}) {
		t.Errorf("prefixes %v %v", dirs, exact)
	}
	if d, e := p.Prefixes(len(root)); len(d)+len(e) != 0 {
		t.Errorf("prefixes longer than the limit kept: %v %v", d, e)
	}
}

func TestPlanAllows(t *testing.T) {
	root := tree(t, "proj/tests/", "proj/keep.txt", "proj/file.txt")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(root, "proj"), filepath.Join(root, "link")))
	p := &Plan{Grants: []Grant{
		{Path: filepath.Join(root, "link/tests"), Dir: true},
		{Path: filepath.Join(root, "proj/file.txt")},
	}}
	allows := p.Allows()
	for path, want := range map[string]bool{
		"proj/tests":         true,
		"proj/tests/a/b.txt": true,
		"link/tests/x":       true,
		"proj/testsuite":     false,
		"proj/keep.txt":      false,
		"proj/file.txt":      true,
		"proj/file.txt/x":    false,
		"proj":               false,
	} {
		if got := allows(filepath.Join(root, path)); got != want {
			t.Errorf("allows(%s) = %v, want %v", path, got, want)
		}
	}
	if !(&Plan{Grants: []Grant{{Path: "/", Dir: true}}}).Allows()("/etc/passwd") {
		t.Error("a grant of / must allow everything")
	}
}

// A project in the temp dir: the tmp default is granted around the
// project, the project's own entries inside it are granted as written,
// and the project itself is refused.
func TestPlanProjectInTempDir(t *testing.T) {
	tmp := tree(t, "proj/tests/sub/", "proj/src/", "proj/keep.txt", "other/", "file")
	proj := filepath.Join(tmp, "proj")
	writeConfig(t, proj, "allow:\n  - tests/**\n  - missing/\n")
	list, err := allowlist.Load(allowlist.Options{WorkDir: proj, Getenv: envOf("TMPDIR=" + tmp)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(list.Entries())
	if err != nil {
		t.Fatal(err)
	}
	got := grants(p, tmp)
	for _, want := range []string{"/proj/tests/", "/other/", "/file"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not granted: %v", want, got)
		}
	}
	allows := p.Allows()
	for path, want := range map[string]bool{
		"proj":               false,
		"proj/new":           false,
		"proj/keep.txt":      false,
		"proj/src/a.go":      false,
		"proj/tests/new":     true,
		"proj/tests/sub/x/y": true,
		"other/x":            true,
		"file":               true,
	} {
		if allows(filepath.Join(tmp, path)) != want {
			t.Errorf("%s: granted %v, want %v", path, !want, want)
		}
		if ok, _ := list.Match(filepath.Join(tmp, path)); want && !ok {
			t.Errorf("%s granted, but the allowlist does not allow it", path)
		}
	}
	if !slices.Contains(p.Denied, proj) {
		t.Errorf("the project is not marked denied: %v", p.Denied)
	}
	for _, e := range p.Entries {
		if e.Entry.Source == list.ConfigFile()+":2" && e.How != Exact {
			t.Errorf("tests/**: %v, want exact", e.Describe(landlock))
		}
	}
}

func writeConfig(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, allowlist.ConfigFileName), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// envOf is a Getenv of the variables given as KEY=VALUE.
func envOf(kv ...string) func(string) string {
	return func(key string) string {
		for _, s := range kv {
			if k, v, _ := strings.Cut(s, "="); k == key {
				return v
			}
		}
		return ""
	}
}

// A grant that is itself a symbolic link is matched where it leads too.
func TestPlanAllowsThroughALinkedGrant(t *testing.T) {
	root := tree(t, "real/dir/", "real/file")
	for _, l := range []string{"dir", "file"} {
		if err := os.Symlink(filepath.Join(root, "real", l), filepath.Join(root, "link-"+l)); err != nil {
			t.Fatal(err)
		}
	}
	entries := []allowlist.Entry{entry(allowlist.Allow, root+"/link-dir"), entry(allowlist.Allow, root+"/link-file")}
	p, err := NewPlan(entries)
	if err != nil {
		t.Fatal(err)
	}
	allows := p.Allows()
	for path, want := range map[string]bool{
		"link-dir/x":  true,
		"real/dir/x":  true,
		"real/file":   true,
		"link-file":   true,
		"real/file/x": false,
		"real/other":  false,
	} {
		if got := allows(filepath.Join(root, path)); got != want {
			t.Errorf("allows(%s) = %v, want %v", path, got, want)
		}
	}
}

// More grants than the kernel is given: the directories made for COMMAND
// and the first grants are kept, the entries whose grants go beyond say
// so, and what they name beyond is refused: never more is granted.
func TestPlanTooManyGrants(t *testing.T) {
	root := tree(t, "run/", "f0", "f1", "f2", "f3", "f4")
	defer func(n int) { maxGrants = n }(maxGrants)
	maxGrants = 4
	entries := []allowlist.Entry{entry(allowlist.Allow, root+"/run")}
	for i := range 5 {
		entries = append(entries, entry(allowlist.Allow, fmt.Sprintf("%s/f%d", root, i)))
	}
	p, err := NewPlan(entries, root+"/run")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := grants(p, root), []string{"/f0", "/f1", "/f2", "/run/"}; !slices.Equal(got, want) {
		t.Errorf("grants %v, want %v", got, want)
	}
	var hows []How
	for _, e := range p.Entries {
		hows = append(hows, e.How)
	}
	if want := []How{Exact, Exact, Exact, Exact, TooMany, TooMany}; !slices.Equal(hows, want) {
		t.Errorf("hows %v, want %v", hows, want)
	}
	if s := p.Entries[4].Describe(landlock); !strings.Contains(s, "more than 4 grants") || !strings.Contains(s, "refused") {
		t.Errorf("TooMany described as %q", s)
	}
}
