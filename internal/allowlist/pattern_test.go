package allowlist

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
)

// matchCases are patterns, paths, and whether the one matches the other.
var matchCases = []struct {
	pattern string
	path    string
	want    bool
}{
	// Literal paths match themselves and everything below.
	{"/a", "/a", true},
	{"/a", "/a/b", true},
	{"/a", "/a/b/c.txt", true},
	{"/a", "/ab", false},
	{"/a", "/", false},
	{"/a/b", "/a", false},
	{"/home/u/proj", "/home/u/project", false},
	{"/home/u/proj", "/home/u/proj/x", true},
	{"/a/b/", "/a/b/c", true}, // cleaned
	{"/a//b", "/a/b", true},
	{"/a/./b/../c", "/a/c/d", true},
	// The root matches every absolute path.
	{"/", "/", true},
	{"/", "/x/y", true},
	// Relative or empty paths never match.
	{"/", "x", false},
	{"/", "", false},
	{"/a", "a", false},
	{"/**", "a/b", false},
	// * stays within one segment and may be empty.
	{"/a/*", "/a", false},
	{"/a/*", "/a/b", true},
	{"/a/*", "/a/b/c", true},
	{"/*", "/x", true},
	{"/tmp/*.d", "/tmp/x.d", true},
	{"/tmp/*.d", "/tmp/x.d/f", true},
	{"/tmp/*.d", "/tmp/.d", true},
	{"/tmp/*.d", "/tmp/x.dd", false},
	{"/tmp/*.d", "/tmp/a/x.d", false},
	{"/a/*/c", "/a/b/c/d", true},
	{"/a/*/c", "/a/b/d", false},
	{"/a/x*y*z", "/a/xyz", true},
	{"/a/x*y*z", "/a/x_y_y_z", true},
	{"/a/x*y*z", "/a/x_y_z_", false},
	{"/a/*a*a*b", "/a/aaaaaaaaaaaaaaaaaaaaaaaa", false},
	// ** is zero or more whole segments.
	{"/a/**", "/a", true},
	{"/a/**", "/a/b/c", true},
	{"/a/**", "/b", false},
	{"/**", "/", true},
	{"/**/__pycache__", "/__pycache__", true},
	{"/**/__pycache__", "/x/y/__pycache__", true},
	{"/**/__pycache__", "/x/y/__pycache__/m.pyc", true},
	{"/**/__pycache__", "/x/__pycache__x/m.pyc", false},
	{"/**/__pycache__", "/x/y", false},
	{"/a/**/b", "/a/b", true},
	{"/a/**/b", "/a/x/b", true},
	{"/a/**/b", "/a/x/y/b/c", true},
	{"/a/**/b", "/a/x/b2", false},
	{"/a/**/b", "/b", false},
	{"/a/**/b/**/c", "/a/b/c", true},
	{"/a/**/b/**/c", "/a/x/b/y/b/z/c", true},
	{"/a/**/b/**/c", "/a/x/b/y/z", false},
	{"/a/**/**/b", "/a/b", true},
	{"/**/x/*.go", "/p/q/x/y.go", true},
	{"/**/x/*.go", "/p/q/x/y.c", false},
	// ?
	{"/a/?", "/a/x", true},
	{"/a/?", "/a/xy", false},
	{"/a/?", "/a", false},
	{"/a/?", "/a/\xff", true},
	// Classes.
	{"/a/[abc]", "/a/b", true},
	{"/a/[abc]", "/a/d", false},
	{"/a/[!abc]", "/a/d", true},
	{"/a/[!abc]", "/a/a", false},
	{"/a/[^abc]", "/a/d", true},
	{"/a/[a-c]x", "/a/bx", true},
	{"/a/[a-c]x", "/a/dx", false},
	{"/a/[]]", "/a/]", true},
	{"/a/[!]]", "/a/]", false},
	{"/a/[!]]", "/a/x", true},
	{"/a/[a-]", "/a/-", true},
	{"/a/[-a]", "/a/-", true},
	{"/a/[\\]]", "/a/]", true},
	{"/a/[\\!a]", "/a/!", true},
	{"/a/[\\a-\\c]", "/a/b", true},
	{"/a/[\x80-\xff]", "/a/\xc3", true},
	{"/a/[\x80-\xff]", "/a/z", false},
	// Escapes.
	{"/a/\\*", "/a/*", true},
	{"/a/\\*", "/a/b", false},
	{"/a\\[1\\]/b", "/a[1]/b/c", true},
	{"/a\\[1\\]/b", "/a1/b", false},
	{"/a/\\**", "/a/*x", true},
	{"/a/\\**", "/a/x*", false},
	// Bytes, not runes.
	{"/a/\xff*", "/a/\xff\xfe", true},
	{"/a/é", "/a/é", true},
	{"/a/?", "/a/é", false}, // two bytes
	{"/a/??", "/a/é", true},
}

func TestPatternMatch(t *testing.T) {
	for _, tt := range matchCases {
		p, err := Compile(tt.pattern)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.pattern, err)
			continue
		}
		if got := p.Match(tt.path); got != tt.want {
			t.Errorf("Compile(%q).Match(%q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
		if ref := refMatch(path.Clean(tt.pattern), tt.path); strings.HasPrefix(tt.path, "/") && ref != tt.want {
			t.Errorf("refMatch(%q, %q) = %v, want %v", tt.pattern, tt.path, ref, tt.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		pattern string
		want    string
	}{
		{"", "empty pattern"},
		{"rel/a", "not an absolute path"},
		{"/a**b", "** must be a whole path segment"},
		{"/x/**b", "** must be a whole path segment"},
		{"/x/a**", "** must be a whole path segment"},
		{"/x/***", "** must be a whole path segment"},
		{"/x/[abc", "unterminated [ ]"},
		{"/x/[", "unterminated [ ]"},
		{"/x/[]", "unterminated [ ]"},
		{"/x/[!]", "unterminated [ ]"},
		{"/x/[a\\", "unterminated [ ]"},
		{"/x/[a-\\", "unterminated [ ]"},
		{"/x/[z-a]", "bad range"},
		{"/x/a\\", "\\ at the end of a path segment"},
		{"/x/a\\/b", "\\ at the end of a path segment"},
	}
	for _, tt := range tests {
		_, err := Compile(tt.pattern)
		if err == nil {
			t.Errorf("Compile(%q) succeeded, want error containing %q", tt.pattern, tt.want)
			continue
		}
		if !errors.Is(err, ErrBadPattern) {
			t.Errorf("Compile(%q) error %v does not wrap ErrBadPattern", tt.pattern, err)
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%q) error %q, want it to contain %q", tt.pattern, err, tt.want)
		}
		if refValid(path.Clean(tt.pattern)) && tt.pattern != "" && tt.pattern[0] == '/' {
			t.Errorf("refValid(%q) = true, want false", tt.pattern)
		}
	}
}

func TestPatternString(t *testing.T) {
	p := MustCompile("/a//b/./c/")
	if got := p.String(); got != "/a/b/c" {
		t.Errorf("String() = %q, want /a/b/c", got)
	}
	for pat, want := range map[string]string{
		"/a/b":        "/a/b",
		"/a\\*/b/*/c": "/a*/b",
		"/*/b":        "",
		"/":           "",
	} {
		if got := MustCompile(pat).LiteralPrefix(); got != want {
			t.Errorf("Compile(%q).LiteralPrefix() = %q, want %q", pat, got, want)
		}
	}
}

func TestEscapeGlob(t *testing.T) {
	for _, name := range []string{"plain", "a*b", "we[ir]d", "q?", `back\slash`, "[!x]", "**"} {
		p, err := Compile("/d/" + escapeGlob(name))
		if err != nil {
			t.Errorf("escaped %q: %v", name, err)
			continue
		}
		if !p.Match("/d/" + name) {
			t.Errorf("escaped %q does not match itself", name)
		}
		if name != "plain" && p.Match("/d/plain") {
			t.Errorf("escaped %q matches /d/plain", name)
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	l := benchList(t)
	paths := benchPaths()
	allocs := testing.AllocsPerRun(100, func() {
		for _, p := range paths {
			l.Match(p)
		}
	})
	if allocs != 0 {
		t.Errorf("Match allocates %v times per run, want 0", allocs)
	}

	// With the project taken out of the tmp default.
	tmp, err := load(Options{WorkDir: "/tmp/proj", Getenv: mapEnv(nil)},
		fakeFS(map[string]string{"/tmp/proj/.writewatch.yaml": "allow: [tests]\n"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	paths = []string{"/tmp/proj/x", "/tmp/proj/tests/x", "/tmp/y", "/etc/z"}
	if allocs := testing.AllocsPerRun(100, func() {
		for _, p := range paths {
			tmp.Match(p)
		}
	}); allocs != 0 {
		t.Errorf("Match allocates %v times per run with a project in tmp, want 0", allocs)
	}
}

func benchList(tb testing.TB) *List {
	tb.Helper()
	var cfg strings.Builder
	cfg.WriteString("allow:\n")
	for i := range 20 {
		fmt.Fprintf(&cfg, "  - build/out%d\n", i)
	}
	for i := range 10 {
		fmt.Fprintf(&cfg, "  - /var/cache/app%d/*.tmp\n", i)
	}
	for i := range 10 {
		fmt.Fprintf(&cfg, "  - /srv/**/data%d/**/*.log\n", i)
	}
	cfg.WriteString("  - tests/**\n  - ~/.cache/tool\n  - /opt/[a-c]?x/run\n")
	cfg.WriteString("  - /tmp\n  - /dev/null\n  - /**/__pycache__\n")
	cfg.WriteString("deny:\n  - .git\n  - tests/golden\n  - /srv/**/secret*\n")
	cfg.WriteString("defaults: false\n")
	l, err := load(Options{
		WorkDir:    "/home/u/proj",
		Home:       "/home/u",
		Getenv:     mapEnv(nil),
		ExtraAllow: []string{"/data/x"},
	}, fakeFS(map[string]string{"/home/u/proj/.writewatch.yaml": cfg.String()}, nil))
	if err != nil {
		tb.Fatal(err)
	}
	if n := len(l.Entries()); n != 50 {
		tb.Fatalf("benchmark list has %d entries, want 50", n)
	}
	return l
}

func benchPaths() []string {
	return []string{
		"/home/u/proj/tests/unit/fixtures/out.json",
		"/home/u/proj/.git/index.lock",
		"/home/u/proj/src/main.go",
		"/home/u/.config/app/settings.ini",
		"/srv/a/b/c/data7/2024/01/app.log",
		"/srv/a/b/c/data7/2024/01/secret.key",
		"/var/cache/app9/x.tmp",
		"/tmp/go-build123/b001/exe/main",
		"/home/u/proj/build/out19/obj.o",
		"/usr/lib/python3/dist-packages/__pycache__/x.pyc",
	}
}

func BenchmarkMatch50(b *testing.B) {
	l := benchList(b)
	paths := benchPaths()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		l.Match(paths[i%len(paths)])
	}
}
