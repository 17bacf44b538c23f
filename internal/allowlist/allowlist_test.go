package allowlist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const projConfig = "/proj/.writewatch.yaml"

// loadConfig loads the config text as /proj/.writewatch.yaml, with the work
// directory /proj/sub and all defaults but the ones the config sets.
func loadConfig(t *testing.T, text string, opts Options) (*List, error) {
	t.Helper()
	if opts.WorkDir == "" {
		opts.WorkDir = "/proj/sub"
	}
	if opts.Getenv == nil {
		opts.Getenv = mapEnv(nil)
	}
	return load(opts, fakeFS(map[string]string{projConfig: text}, nil))
}

func patterns(l *List, kind Kind, source string) []string {
	var out []string
	for _, e := range l.Entries() {
		if e.Kind == kind && strings.HasPrefix(e.Source, source) {
			out = append(out, e.Pattern)
		}
	}
	return out
}

func TestExpansion(t *testing.T) {
	env := map[string]string{
		"HOME":  "/home/u",
		"XDG":   "/home/u/.local/share",
		"SUB":   "rel/dir",
		"WEIRD": "/we[ir]d*",
		"A_1":   "one",
	}
	tests := []struct {
		raw  string
		want string
	}{
		{"tests/**", "/proj/tests/**"},
		{"./tests/", "/proj/tests"},
		{"../shared", "/shared"},
		{"/abs/path", "/abs/path"},
		{"~/.cache/myapp", "/home/u/.cache/myapp"},
		{"$HOME/.local/share/foo", "/home/u/.local/share/foo"},
		{"${XDG}/foo", "/home/u/.local/share/foo"},
		{"${HOME}x/y", "/home/ux/y"},
		{"a/$SUB/b", "/proj/a/rel/dir/b"},
		{"$A_1-x", "/proj/one-x"},
		{"$WEIRD/f", `/we\[ir]d\*/f`},
		{`\$HOME`, `/proj/\$HOME`},
		{"a~/b", "/proj/a~/b"},
	}
	for _, tt := range tests {
		l, err := loadConfig(t, fmt.Sprintf("allow:\n  - '%s'\ndefaults: false\n", tt.raw),
			Options{Home: "/home/u", Getenv: mapEnv(env)})
		if err != nil {
			t.Errorf("%q: %v", tt.raw, err)
			continue
		}
		got := l.Entries()
		want := []Entry{{Kind: Allow, Pattern: tt.want, Raw: tt.raw, Source: projConfig + ":2"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: entries %+v, want %+v", tt.raw, got, want)
		}
	}

	// Expanded text matches literally.
	l, err := loadConfig(t, "allow: [$WEIRD, '\\$HOME']\ndefaults: false\n", Options{Getenv: mapEnv(env)})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"/we[ir]d*/f": true,
		"/wed/f":      false,
		"/weid*":      false,
		"/proj/$HOME": true,
	} {
		if got := l.Allowed(p); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestRelativeToConfigDir(t *testing.T) {
	// The config is found two levels up, in a directory whose name has
	// pattern characters.
	const file = "/my[proj]/.writewatch.yaml"
	l, err := load(Options{WorkDir: "/my[proj]/a/b", Getenv: mapEnv(nil)},
		fakeFS(map[string]string{file: "allow: [out, '*.log']\ndefaults: false\n"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := patterns(l, Allow, file), []string{`/my\[proj]/out`, `/my\[proj]/*.log`}; !reflect.DeepEqual(got, want) {
		t.Errorf("patterns %q, want %q", got, want)
	}
	for p, want := range map[string]bool{
		"/my[proj]/out/x":     true,
		"/my[proj]/a.log":     true,
		"/myp/out":            false,
		"/my[proj]/a/b/c.txt": false,
	} {
		if got := l.Allowed(p); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestDenyWinsOverAllow(t *testing.T) {
	l, err := loadConfig(t, `
deny:
  - .git
  - /proj/**/*.secret
allow:
  - /proj
  - /proj/.git/hooks
defaults: false
`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		allowed bool
		pattern string // of the deciding entry, "" for none
	}{
		{"/proj/src/a.go", true, "/proj"},
		{"/proj", true, "/proj"},
		{"/proj/.git", false, "/proj/.git"},
		{"/proj/.git/hooks/pre-commit", false, "/proj/.git"},
		{"/proj/a/b/key.secret", false, "/proj/**/*.secret"},
		{"/proj/key.secret/inner", false, "/proj/**/*.secret"},
		{"/elsewhere", false, ""},
	}
	for _, tt := range tests {
		allowed, e := l.Match(tt.path)
		pat := ""
		if e != nil {
			pat = e.Pattern
		}
		if allowed != tt.allowed || pat != tt.pattern {
			t.Errorf("Match(%q) = %v, %q; want %v, %q", tt.path, allowed, pat, tt.allowed, tt.pattern)
		}
		if l.Allowed(tt.path) != tt.allowed {
			t.Errorf("Allowed(%q) != %v", tt.path, tt.allowed)
		}
	}
	// Entries keep file order.
	var kinds []string
	for _, e := range l.Entries() {
		kinds = append(kinds, e.Kind.String()+" "+e.Raw+" "+e.Source)
	}
	want := []string{
		"deny .git " + projConfig + ":3",
		"deny /proj/**/*.secret " + projConfig + ":4",
		"allow /proj " + projConfig + ":6",
		"allow /proj/.git/hooks " + projConfig + ":7",
	}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("entries\n%q\nwant\n%q", kinds, want)
	}
}

func fakeGoEnv() (map[string]string, error) {
	return map[string]string{
		"GOCACHE":        "/home/u/.cache/go-build",
		"GOMODCACHE":     "/home/u/go/pkg/mod",
		"GOTELEMETRYDIR": "off",
	}, nil
}

func TestDefaults(t *testing.T) {
	all := map[string][]string{
		DefaultTmp:         {"/tmp"},
		DefaultDev:         devPaths,
		DefaultGoCache:     {"/home/u/.cache/go-build", "/home/u/go/pkg/mod"},
		DefaultPythonCache: {"/**/__pycache__", "/**/.pytest_cache"},
	}
	tests := []struct {
		name   string
		config string
		on     []string
	}{
		{"no config keys", "", defaultNames},
		{"null", "defaults:\n", defaultNames},
		{"all on", "defaults: true\n", defaultNames},
		{"all off", "defaults: false\n", nil},
		{"one off", "defaults:\n  tmp: false\n", []string{DefaultDev, DefaultGoCache, DefaultPythonCache}},
		{"flow mapping", "defaults: {dev: false, go-cache: false}\n", []string{DefaultTmp, DefaultPythonCache}},
		{"each named", "defaults:\n  tmp: false\n  dev: false\n  go-cache: false\n  python-cache: true\n", []string{DefaultPythonCache}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := loadConfig(t, tt.config, Options{GoEnv: fakeGoEnv})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range defaultNames {
				got := patterns(l, Allow, "default:"+name)
				var want []string
				for _, on := range tt.on {
					if on == name {
						want = all[name]
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("default %s: %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestDefaultTmp(t *testing.T) {
	for tmpdir, want := range map[string]string{
		"":                 "/tmp",
		"relative":         "/tmp",
		"/var/tmp/xyz/":    "/var/tmp/xyz",
		"/run/user/1/t[1]": `/run/user/1/t\[1]`,
	} {
		l, err := loadConfig(t, "", Options{Getenv: mapEnv(map[string]string{"TMPDIR": tmpdir})})
		if err != nil {
			t.Fatal(err)
		}
		if got := patterns(l, Allow, "default:tmp"); !reflect.DeepEqual(got, []string{want}) {
			t.Errorf("TMPDIR=%q: %q, want %q", tmpdir, got, want)
		}
	}
}

func TestDefaultGoCache(t *testing.T) {
	called := false
	_, err := loadConfig(t, "defaults: {go-cache: false}\n", Options{GoEnv: func() (map[string]string, error) {
		called = true
		return nil, nil
	}})
	if err != nil || called {
		t.Errorf("go-cache off: err %v, GoEnv called %v", err, called)
	}

	l, err := loadConfig(t, "", Options{GoEnv: func() (map[string]string, error) {
		return map[string]string{"GOCACHE": "", "GOMODCACHE": "relative", "GOTELEMETRYDIR": "/t/"}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := patterns(l, Allow, "default:go-cache"); !reflect.DeepEqual(got, []string{"/t"}) {
		t.Errorf("go-cache entries %q, want [/t]", got)
	}

	l, err = loadConfig(t, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := patterns(l, Allow, "default:go-cache"); got != nil {
		t.Errorf("nil GoEnv: go-cache entries %q", got)
	}
}

func TestDefaultGoEnv(t *testing.T) {
	env, err := DefaultGoEnv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, lookErr := exec.LookPath("go"); lookErr != nil {
		if env != nil {
			t.Errorf("go not installed, but got %v", env)
		}
		return
	}
	if !filepath.IsAbs(env["GOCACHE"]) && env["GOCACHE"] != "off" {
		t.Errorf("GOCACHE = %q", env["GOCACHE"])
	}
	if !filepath.IsAbs(env["GOMODCACHE"]) {
		t.Errorf("GOMODCACHE = %q", env["GOMODCACHE"])
	}

	// Without go on PATH there are no entries and no error.
	t.Setenv("PATH", t.TempDir())
	env, err = DefaultGoEnv(context.Background())
	if err != nil || env != nil {
		t.Errorf("missing go: %v, %v", env, err)
	}
}

func TestExtraAllow(t *testing.T) {
	l, err := loadConfig(t, "allow: [a]\ndefaults: false\n", Options{
		ExtraAllow: []string{"out", "/abs/*.txt", "~/x", "$V/y"},
		Home:       "/home/u",
		Getenv:     mapEnv(map[string]string{"V": "/v"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Kind: Allow, Pattern: "/proj/a", Raw: "a", Source: projConfig + ":1"},
		{Kind: Allow, Pattern: "/proj/sub/out", Raw: "out", Source: "--allow"},
		{Kind: Allow, Pattern: "/abs/*.txt", Raw: "/abs/*.txt", Source: "--allow"},
		{Kind: Allow, Pattern: "/home/u/x", Raw: "~/x", Source: "--allow"},
		{Kind: Allow, Pattern: "/v/y", Raw: "$V/y", Source: "--allow"},
	}
	if got := l.Entries(); !reflect.DeepEqual(got, want) {
		t.Errorf("entries\n%+v\nwant\n%+v", got, want)
	}
	if !l.Allowed("/proj/sub/out/f") || l.Allowed("/proj/out/f") {
		t.Error("--allow entry not relative to the work directory")
	}

	for _, bad := range []string{"a**b", "", "$NOPE", "[x"} {
		_, err := loadConfig(t, "", Options{ExtraAllow: []string{bad}})
		if err == nil || !strings.Contains(err.Error(), "--allow") {
			t.Errorf("--allow %q: error %v, want one naming --allow", bad, err)
		}
		var ce *ConfigError
		if errors.As(err, &ce) {
			t.Errorf("--allow %q: got a ConfigError %v", bad, err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		config string
		line   int
		msg    string
	}{
		{"yaml syntax", "allow:\n  - a\n  b: c\n", 3, "invalid YAML: did not find expected '-' indicator"},
		{"yaml bad indent", "allow:\n  - a\n  - b\n deny: [c]\n", 4, "invalid YAML"},
		{"yaml in second document", "allow: [a]\n---\ndeny:\n  - a\n   b: c\n", 5, "invalid YAML"},
		{"yaml tab", "allow:\n\t- a\n", 2, "invalid YAML: found character that cannot start any token"},
		{"yaml syntax first line", "allow: [a\n", 1, "invalid YAML"},
		{"unterminated quote", "allow:\n  - 'abc\n", 2, "invalid YAML"},
		{"unterminated quote first line", "\"abc", 1, "invalid YAML"},
		{"control character", "allow:\n  - a\n  - b\x01\n", 3, "control characters"},
		{"invalid utf-8", "# x\n\nallow: [\xff]\n", 3, "UTF-8"},
		{"unknown anchor", "allow:\n  - a\n  - *nope\n", 3, "unknown anchor"},
		{"two documents", "allow: [a]\n---\ndeny: [b]\n", 3, "more than one YAML document"},
		{"not a mapping", "- a\n- b\n", 1, "must be a mapping"},
		{"scalar document", "tests\n", 1, "must be a mapping"},
		{"unknown key", "allow: [a]\n\nallows: [b]\n", 3, `unknown key "allows"`},
		{"duplicate key", "allow: [a]\ndeny: [b]\nallow: [c]\n", 3, `duplicate key "allow" (first at line 1)`},
		{"complex key", "? [a]\n: b\n", 1, "as a key"},
		{"allow not a list", "allow: tests\n", 1, `allow: expected a list of paths or patterns, not "tests"`},
		{"deny mapping", "deny:\n  a: b\n", 2, "deny: expected a list"},
		{"entry mapping", "allow:\n  - a\n  - b: c\n", 3, `allow entry: unknown key "b" (known keys: path, broad)`},
		{"entry list", "allow:\n  - [a]\n", 2, "not a list"},
		{"entry over two lines", "allow:\n  - tests/**\n  - build\n    - bad indent\n", 3,
			`allow entry "build - bad indent" goes on over more than one line, which YAML joins into one entry: start each entry on its own line with "- " at the same indentation, or quote it if one entry is meant`},
		{"item less indented", "deny:\n- .git\n - x\n", 2, `deny entry ".git - x" goes on over more than one line`},
		{"entry path over two lines", "allow:\n  - path: a\n      b\n", 2, `allow entry path "a b" goes on over more than one line`},
		{"entry unknown key", "allow:\n  - {path: a, brod: true}\n", 2, `allow entry: unknown key "brod" (known keys: path, broad)`},
		{"deny entry broad", "deny:\n  - {path: a, broad: true}\n", 2, `deny entry: unknown key "broad" (the one key is path)`},
		{"entry without path", "allow:\n  - a\n  - broad: true\n", 3, "allow entry: a mapping needs the key path, the path or pattern of the entry"},
		{"entry broad not a bool", "allow:\n  - {path: a, broad: yes}\n", 2, `allow entry: broad: expected true or false, not "yes"`},
		{"entry path a list", "allow:\n  - path: [a]\n", 2, "allow entry path: expected a path or pattern, not a list"},
		{"entry path empty", "allow:\n  - path: ''\n", 2, "allow entry path is empty"},
		{"entry path twice", "allow:\n  - {path: a, path: b}\n", 2, `allow entry: duplicate key "path" (first at line 2)`},
		{"entry complex key", "allow:\n  - {[a]: b}\n", 2, "allow entry: unexpected a list as a key"},
		{"tilde alone", "allow:\n  - a\n  - ~\n", 3, "allow entry: ~ alone is YAML's empty value; write '~' for the home directory"},
		{"entry bool", "deny:\n  - true\n", 2, "not the boolean true"},
		{"entry null", "allow:\n  - a\n  -\n", 3, "not an empty value"},
		{"entry tagged", "allow:\n  - !!binary aGk=\n", 2, "tagged !!binary"},
		{"empty entry", "allow:\n  - a\n  - ''\n", 3, "allow entry is empty"},
		{"alias to list", "x: &l [a]\n", 1, `unknown key "x"`},
		{"recursive alias", "allow: &a [*a]\n", 1, "not a list"},
		{"bad glob", "allow:\n  - tests/a**b\n", 2, `allow "tests/a**b": bad pattern: "a**b": ** must be a whole path segment`},
		{"unterminated class", "deny:\n  - a\n  - '[ab'\n", 3, `deny "[ab": bad pattern`},
		{"bad range", "allow: ['x/[z-a]']\n", 1, "bad range"},
		{"trailing backslash", "allow: ['x\\']\n", 1, "\\ at the end"},
		{"undefined variable", "allow:\n  - a\n  - $NOPE/x\n", 3, "undefined variable $NOPE"},
		{"undefined braced variable", "allow:\n  - ${NOPE2}\n", 2, "undefined variable $NOPE2"},
		{"lone dollar", "allow: ['a/$/b']\n", 1, "$ not followed by a variable name"},
		{"unterminated brace", "allow: ['${HOME']\n", 1, "unterminated ${"},
		{"bad braced name", "allow: ['${1}']\n", 1, `bad variable name "1"`},
		{"tilde user", "allow: ['~root/x']\n", 1, "~user is not supported"},
		{"tilde without home", "allow:\n  - ~/x\n", 2, "home directory is unknown"},
		{"defaults string", "defaults: yes\n", 1, `defaults: expected true, false or a mapping of tmp, dev, go-cache, python-cache to true or false, not "yes"`},
		{"defaults list", "defaults: [tmp]\n", 1, "defaults: expected true, false or a mapping, not a list"},
		{"defaults unknown", "defaults:\n  tmp: true\n  node-cache: false\n", 3, `unknown default "node-cache"`},
		{"defaults wrong type", "defaults:\n  dev: 1\n", 2, "defaults: dev: expected true or false, not the number 1"},
		{"defaults null value", "defaults:\n  dev:\n", 2, "not an empty value"},
		{"defaults duplicate", "defaults:\n  dev: true\n  dev: false\n", 3, `duplicate key "dev"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(t, tt.config, Options{Getenv: mapEnv(map[string]string{"HOME": "/h"})})
			if err == nil {
				t.Fatalf("no error, want line %d: %s", tt.line, tt.msg)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *ConfigError", err, err)
			}
			msg := err.Error()
			prefix := fmt.Sprintf("%s:%d: ", projConfig, tt.line)
			if ce.File != projConfig || ce.Line != tt.line || !strings.HasPrefix(msg, prefix) {
				t.Errorf("error %q, want it to start with %q", msg, prefix)
			}
			if !strings.Contains(msg, tt.msg) {
				t.Errorf("error %q, want it to contain %q", msg, tt.msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q has more than one line", msg)
			}
		})
	}
}

func TestConfigValues(t *testing.T) {
	// Numbers are taken as written; entries may be aliases.
	l, err := loadConfig(t, "allow:\n  - 2024\n  - 1.50\n  - &x shared\ndeny:\n  - *x\ndefaults: false\n", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Kind: Allow, Pattern: "/proj/2024", Raw: "2024", Source: projConfig + ":2"},
		{Kind: Allow, Pattern: "/proj/1.50", Raw: "1.50", Source: projConfig + ":3"},
		{Kind: Allow, Pattern: "/proj/shared", Raw: "shared", Source: projConfig + ":4"},
		{Kind: Deny, Pattern: "/proj/shared", Raw: "shared", Source: projConfig + ":6"},
	}
	if got := l.Entries(); !reflect.DeepEqual(got, want) {
		t.Errorf("entries\n%+v\nwant\n%+v", got, want)
	}

	// Quoted text may go over lines; plain text may hold " - ".
	l, err = loadConfig(t, "allow:\n  - 'a\n    b'\n  - c - d # e\n  - {path: f}\n  - path: >-\n      g\n      h\ndefaults: false\n", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := patterns(l, Allow, projConfig), []string{"/proj/a b", "/proj/c - d", "/proj/f", "/proj/g h"}; !reflect.DeepEqual(got, want) {
		t.Errorf("patterns %q, want %q", got, want)
	}

	// Empty and null documents and lists are fine.
	for _, text := range []string{"", "# nothing\n", "---\n", "~\n", "allow:\ndeny: []\n", "---\nallow: [a]\n---\n", "allow: [a]\n...\n"} {
		l, err := loadConfig(t, text, Options{})
		if err != nil {
			t.Errorf("%q: %v", text, err)
			continue
		}
		if l.ConfigFile() != projConfig {
			t.Errorf("%q: ConfigFile() = %q", text, l.ConfigFile())
		}
	}
}

func TestFindConfig(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		t.Helper()
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	top := write(filepath.Join(root, ConfigFileName), "allow: [top]\ndefaults: false\n")
	mid := write(filepath.Join(root, "a", ConfigFileName), "allow: [mid]\ndefaults: false\n")
	other := write(filepath.Join(root, "other.yaml"), "allow: [other]\ndefaults: false\n")

	tests := []struct {
		name    string
		opts    Options
		file    string
		pattern string
	}{
		{"nearest wins", Options{WorkDir: sub}, mid, filepath.Join(root, "a", "mid")},
		{"in the work dir", Options{WorkDir: filepath.Join(root, "a")}, mid, filepath.Join(root, "a", "mid")},
		{"above", Options{WorkDir: root}, top, filepath.Join(root, "top")},
		{"--config absolute", Options{WorkDir: sub, ConfigPath: other}, other, filepath.Join(root, "other")},
		{"--config relative", Options{WorkDir: root, ConfigPath: "other.yaml"}, other, filepath.Join(root, "other")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Getenv = mapEnv(nil)
			l, err := Load(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if l.ConfigFile() != tt.file {
				t.Errorf("ConfigFile() = %q, want %q", l.ConfigFile(), tt.file)
			}
			if got := patterns(l, Allow, tt.file); len(got) == 0 || got[0] != tt.pattern {
				t.Errorf("patterns %q, want %q first", got, tt.pattern)
			}
		})
	}

	if _, err := Load(Options{WorkDir: root, ConfigPath: "missing.yaml"}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing --config: %v, want a not-exist error", err)
	}
	if _, err := Load(Options{WorkDir: root, ConfigPath: "a"}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("--config naming a directory: %v", err)
	}
	if _, err := Load(Options{WorkDir: "relative"}); err == nil {
		t.Error("relative WorkDir: no error")
	}

	// No config anywhere: no project entries, defaults still on.
	l, err := load(Options{WorkDir: "/x/y", Getenv: mapEnv(nil)}, fakeFS(map[string]string{"/x/y/file": ""}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if l.ConfigFile() != "" {
		t.Errorf("ConfigFile() = %q, want none", l.ConfigFile())
	}
	if got := patterns(l, Allow, "default:tmp"); !reflect.DeepEqual(got, []string{"/tmp"}) {
		t.Errorf("defaults without config: %q", got)
	}
	if len(patterns(l, Allow, "/")) != 0 {
		t.Errorf("project entries without a config: %+v", l.Entries())
	}
}

func TestSymlinkedDirs(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(root, "real")
	if err := os.MkdirAll(filepath.Join(real, "proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	tmpLink := filepath.Join(root, "tmplink")
	if err := os.Symlink(real, tmpLink); err != nil {
		t.Fatal(err)
	}
	cfg := "allow:\n  - tests/*.d\n  - /**/x\ndeny:\n  - .git\n"
	if err := os.WriteFile(filepath.Join(real, "proj", ConfigFileName), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load(Options{
		WorkDir: filepath.Join(link, "proj"),
		Getenv:  mapEnv(map[string]string{"TMPDIR": tmpLink}),
	})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(link, "proj", ConfigFileName)
	if l.ConfigFile() != file {
		t.Errorf("ConfigFile() = %q, want %q", l.ConfigFile(), file)
	}
	got := map[string]string{}
	for _, e := range l.Entries() {
		if !strings.HasPrefix(e.Source, "default:dev") && !strings.HasPrefix(e.Source, "default:python") {
			got[e.Kind.String()+" "+e.Pattern] = e.Source
		}
	}
	want := map[string]string{
		"allow " + link + "/proj/tests/*.d": file + ":2",
		"allow " + real + "/proj/tests/*.d": file + ":2",
		"allow /**/x":                       file + ":3",
		"deny " + link + "/proj/.git":       file + ":5",
		"deny " + real + "/proj/.git":       file + ":5",
		"allow " + tmpLink:                  "default:tmp",
		"allow " + real:                     "default:tmp",
		// The project lies in $TMPDIR, through the link and without it.
		"deny " + link + "/proj": SourceProject,
		"deny " + real + "/proj": SourceProject,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries\n%q\nwant\n%q", got, want)
	}
	if !l.Allowed(real+"/proj/tests/a.d/f") || l.Allowed(real+"/proj/.git/x") {
		t.Error("resolved entries do not apply")
	}
	if l.Allowed(real+"/proj/stray") || l.Allowed(link+"/proj/stray") || !l.Allowed(real+"/elsewhere") {
		t.Error("the project is not taken out of $TMPDIR")
	}
}

func TestKindString(t *testing.T) {
	if Allow.String() != "allow" || Deny.String() != "deny" || Kind(7).String() != "Kind(7)" {
		t.Error("Kind.String")
	}
}

// Literal names a path exactly, whatever its characters: the entry
// matches that path and not the paths its characters would match as a
// pattern.
func TestLiteralEntries(t *testing.T) {
	for name, other := range map[string]string{
		"b[1]":   "b1",
		`a\c`:    "ac",
		"x*y":    "xzy",
		"q?":     "qz",
		"$HOME":  "/home/u",
		"~tilde": "",
		"plain":  "",
	} {
		data, err := yaml.Marshal(map[string]any{"allow": []string{Literal(name)}, "defaults": false})
		if err != nil {
			t.Fatal(err)
		}
		l, err := loadConfig(t, string(data), Options{Home: "/home/u", Getenv: mapEnv(map[string]string{"HOME": "/home/u"})})
		if err != nil {
			t.Errorf("%q: entry %q: %v", name, Literal(name), err)
			continue
		}
		if ok, _ := l.Match("/proj/" + name); !ok {
			t.Errorf("%q: entry %q does not match it", name, Literal(name))
		}
		if other != "" {
			if !strings.HasPrefix(other, "/") {
				other = "/proj/" + other
			}
			if ok, _ := l.Match(other); ok {
				t.Errorf("%q: entry %q also matches %s", name, Literal(name), other)
			}
		}
	}
}

// Many entries in one directory are resolved from a listing of it: the
// links among them are still resolved, and missing names still kept as
// written.
func TestManyEntriesInOneDirectory(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "out")
	target := filepath.Join(root, "elsewhere")
	for _, d := range []string{dir, target} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var cfg strings.Builder
	cfg.WriteString("allow:\n")
	for i := range 3 * listAfter {
		name := fmt.Sprintf("f%d", i)
		switch i {
		case 2, 2*listAfter + 1: // one before the listing, one after
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		case 5, 2*listAfter + 3:
			// missing
		default:
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(&cfg, "  - out/%s/**\n", name)
	}
	cfg.WriteString("defaults: false\n")
	if err := os.WriteFile(filepath.Join(root, ConfigFileName), []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load(Options{WorkDir: root, Getenv: mapEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	var resolved []string
	for _, e := range l.Entries() {
		if strings.HasPrefix(e.Pattern, target) {
			resolved = append(resolved, e.Raw)
		}
	}
	if want := []string{"out/f2/**", fmt.Sprintf("out/f%d/**", 2*listAfter+1)}; !reflect.DeepEqual(resolved, want) {
		t.Errorf("entries resolved to %s: %q, want %q", target, resolved, want)
	}
	if n := len(l.Entries()); n != 3*listAfter+2 {
		t.Errorf("%d entries, want %d", n, 3*listAfter+2)
	}
}

// A list made again from its entries matches as the list did.
func TestFromEntries(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, ".writewatch.yaml")
	if err := os.WriteFile(cfg, []byte("allow:\n  - tests/**\ndeny:\n  - tests/golden/**\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load(Options{WorkDir: dir, Home: "/home/u", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	again, err := FromEntries(l.ConfigFile(), l.Project(), l.Entries())
	if err != nil {
		t.Fatal(err)
	}
	if again.ConfigFile() != l.ConfigFile() || again.Project() != l.Project() {
		t.Errorf("config %q project %q, want %q %q", again.ConfigFile(), again.Project(), l.ConfigFile(), l.Project())
	}
	for _, p := range []string{dir + "/tests/a", dir + "/tests/golden/x", dir + "/config.toml", "/tmp/x", "/home/u/.cache/go-build/x", "/etc/hosts"} {
		ok1, e1 := l.Match(p)
		ok2, e2 := again.Match(p)
		if ok1 != ok2 || (e1 == nil) != (e2 == nil) || e1 != nil && *e1 != *e2 {
			t.Errorf("%s: %v %+v, made again %v %+v", p, ok1, e1, ok2, e2)
		}
	}
}
