package allowlist

import (
	"reflect"
	"strings"
	"testing"
)

const homeConfig = "/home/u/src/p/.writewatch.yaml"

// loadHomeProject loads text as the config of the project /home/u/src/p,
// from its subdirectory sub, with the home directory /home/u.
func loadHomeProject(text string, opts Options, links map[string]string) (*List, error) {
	opts.WorkDir = "/home/u/src/p/sub"
	opts.Home = "/home/u"
	opts.Getenv = mapEnv(map[string]string{"HOME": "/home/u"})
	return load(opts, fakeFS(map[string]string{homeConfig: text, "/home/u/src/p/sub/f": ""}, links))
}

// An allow entry that covers /, the home directory or a directory above
// the project is refused, unless it is marked broad.
func TestBroadEntriesRefused(t *testing.T) {
	for _, tt := range []struct {
		entry string
		want  string // the error after "FILE:2: "
	}{
		{"/", `allow "/": covers / (every path); allow only what the tests write, or write {path: "/", broad: true} if all of it is meant`},
		{"/**", `allow "/**": covers / (every path); allow only what the tests write, or write {path: "/**", broad: true} if all of it is meant`},
		{"../../../../..", `allow "../../../../..": covers / (every path); allow only what the tests write, or write {path: "../../../../..", broad: true} if all of it is meant`},
		{"../../..", `allow "../../..": covers the home directory /home/u; allow only what the tests write, or write {path: "../../..", broad: true} if all of it is meant`},
		{"~", `allow "~": covers the home directory /home/u; allow only what the tests write, or write {path: "~", broad: true} if all of it is meant`},
		{"$HOME", `allow "$HOME": covers the home directory /home/u; allow only what the tests write, or write {path: "$HOME", broad: true} if all of it is meant`},
		{"/home/*", `allow "/home/*": covers the home directory /home/u; allow only what the tests write, or write {path: "/home/*", broad: true} if all of it is meant`},
		{"..", `allow "..": covers /home/u/src, a directory above the project /home/u/src/p; allow only what the tests write, or write {path: "..", broad: true} if all of it is meant`},
	} {
		_, err := loadHomeProject("allow:\n  - '"+tt.entry+"'\n", Options{}, nil)
		if want := homeConfig + ":2: " + tt.want; err == nil || err.Error() != want {
			t.Errorf("%s: error\n%v\nwant\n%s", tt.entry, err, want)
		}
	}

	// The same entries marked broad are taken, and say so.
	l, err := loadHomeProject("allow:\n  - {path: /, broad: true}\n  - path: '~'\n    broad: true\n  - {path: .., broad: false, }\n", Options{}, nil)
	if err == nil || err.Error() != homeConfig+`:5: allow "..": covers /home/u/src, a directory above the project /home/u/src/p; allow only what the tests write, or write {path: "..", broad: true} if all of it is meant` {
		t.Errorf("broad: false: error %v", err)
	}
	l, err = loadHomeProject("allow:\n  - {path: /, broad: true}\n  - path: '~'\n    broad: true\ndefaults: false\n", Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Kind: Allow, Pattern: "/", Raw: "/", Source: homeConfig + ":2", Broad: true},
		{Kind: Allow, Pattern: "/home/u", Raw: "~", Source: homeConfig + ":3", Broad: true},
	}
	if got := l.Entries(); !reflect.DeepEqual(got, want) {
		t.Errorf("entries\n%+v\nwant\n%+v", got, want)
	}
}

// What covers only the project, or lies inside it or elsewhere, is not
// broad.
func TestNarrowEntriesTaken(t *testing.T) {
	for _, entry := range []string{".", "..", "../*", "tests/**", "/**/x", "~/.cache/x", "/home/u/src/q", "/home/*/src/p/out", "/tmp", "*"} {
		text := "allow:\n  - '" + entry + "'\n"
		if entry == ".." {
			continue
		}
		if _, err := loadHomeProject(text, Options{}, nil); err != nil {
			t.Errorf("%s: %v", entry, err)
		}
	}
}

// The project and the home directory count as written and with their
// symbolic links resolved.
func TestBroadThroughLinks(t *testing.T) {
	links := map[string]string{"/home/u/src": "/data/src", "/home/u": "/export/u"}
	for entry, want := range map[string]string{
		"/data":      `allow "/data": covers /data, a directory above the project /home/u/src/p`,
		"/export/*":  `allow "/export/*": covers the home directory /export/u`,
		"/data/src":  `allow "/data/src": covers /data/src, a directory above the project /home/u/src/p`,
		"/data/src/": `allow "/data/src/": covers /data/src, a directory above the project /home/u/src/p`,
	} {
		_, err := loadHomeProject("allow:\n  - '"+entry+"'\n", Options{}, links)
		if err == nil || !strings.HasPrefix(err.Error(), homeConfig+":2: "+want+"; ") {
			t.Errorf("%s: error\n%v\nwant it to start with\n%s", entry, err, want)
		}
	}
}

// --allow entries are checked too, unless Options.ExtraAllowBroad says
// they are meant.
func TestBroadExtraAllow(t *testing.T) {
	_, err := loadHomeProject("", Options{ExtraAllow: []string{"/"}}, nil)
	want := `allowlist: --allow "/": covers / (every path); allow only what the tests write, or give it in the config as {path: "/", broad: true} if all of it is meant`
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
	// Relative to the working directory: .. is the project itself.
	if _, err := loadHomeProject("", Options{ExtraAllow: []string{".."}}, nil); err != nil {
		t.Errorf("--allow ..: %v", err)
	}
	l, err := loadHomeProject("defaults: false\n", Options{ExtraAllow: []string{"/", "../.."}, ExtraAllowBroad: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entries() {
		if !e.Broad {
			t.Errorf("entry %+v not marked broad", e)
		}
	}
}
