package allowlist

import (
	"reflect"
	"testing"
)

type matchCase struct {
	path    string
	allowed bool
	source  string // of the deciding entry, "" for none
}

func checkMatches(t *testing.T, l *List, cases []matchCase) {
	t.Helper()
	for _, c := range cases {
		ok, e := l.Match(c.path)
		src := ""
		if e != nil {
			src = e.Source
		}
		if ok != c.allowed || src != c.source {
			t.Errorf("Match(%q) = %v, %q; want %v, %q", c.path, ok, src, c.allowed, c.source)
		}
	}
}

// carved returns the project entries and the defaults marked as covering
// the project, as "KIND PATTERN SOURCE".
func carved(l *List) []string {
	var out []string
	for _, e := range l.Entries() {
		if e.Source == SourceProject || e.CoversProject {
			out = append(out, e.Kind.String()+" "+e.Pattern+" "+e.Source)
		}
	}
	return out
}

// A project under /tmp is not allowed by the tmp default; its own entries
// still allow, and the rest of /tmp stays allowed.
func TestProjectUnderTmp(t *testing.T) {
	const file = "/tmp/proj/.writewatch.yaml"
	l, err := load(Options{WorkDir: "/tmp/proj/sub", Getenv: mapEnv(nil), ExtraAllow: []string{"out"}, GoEnv: fakeGoEnv},
		fakeFS(map[string]string{file: "allow:\n  - tests/**\ndeny:\n  - .git\n"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if l.Project() != "/tmp/proj" {
		t.Errorf("project %q, want /tmp/proj", l.Project())
	}
	if got, want := carved(l), []string{"allow /tmp default:tmp", "deny /tmp/proj default:project"}; !reflect.DeepEqual(got, want) {
		t.Errorf("carve-out %q, want %q", got, want)
	}
	// The project's entry comes last.
	if es := l.Entries(); es[len(es)-1].Source != SourceProject {
		t.Errorf("last entry %+v", es[len(es)-1])
	}
	checkMatches(t, l, []matchCase{
		{"/tmp/proj/stray.txt", false, ""},
		{"/tmp/proj", false, ""},
		{"/tmp/proj/src/deep/a.go", false, ""},
		{"/tmp/proj/tests/a/b.txt", true, file + ":2"},
		{"/tmp/proj/sub/out/x", true, "--allow"},
		{"/tmp/proj/.git/index", false, file + ":4"},
		{"/tmp/proj/pkg/__pycache__/m.pyc", true, "default:python-cache"},
		{"/tmp/proj/.pytest_cache/v", true, "default:python-cache"},
		{"/tmp/TestX123/001/f", true, "default:tmp"},
		{"/tmp/proj2/f", true, "default:tmp"},
		{"/tmp/pro", true, "default:tmp"},
		{"/tmp", true, "default:tmp"},
		{"/dev/null", true, "default:dev"},
		{"/home/u/.cache/go-build/ab/x", true, "default:go-cache"},
		{"/etc/passwd", false, ""},
	})
}

// The same under $TMPDIR, and when there is no config: the project is then
// the working directory.
func TestProjectUnderTMPDIR(t *testing.T) {
	l, err := load(Options{WorkDir: "/run/t/w", Getenv: mapEnv(map[string]string{"TMPDIR": "/run/t"})}, fakeFS(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := carved(l), []string{"allow /run/t default:tmp", "deny /run/t/w default:project"}; !reflect.DeepEqual(got, want) {
		t.Errorf("carve-out %q, want %q", got, want)
	}
	checkMatches(t, l, []matchCase{
		{"/run/t/w/stray", false, ""},
		{"/run/t/go-build1/x", true, "default:tmp"},
		{"/tmp/proj/x", false, ""},
	})
}

// Defaults that do not cover the project are left as they are.
func TestProjectNotCovered(t *testing.T) {
	goEnv := func() (map[string]string, error) {
		return map[string]string{"GOCACHE": "/tmp/proj/.gocache", "GOMODCACHE": "/home/u/go/pkg/mod"}, nil
	}
	for _, tt := range []struct {
		name, workDir string
		carved        []string
		cases         []matchCase
	}{
		{"elsewhere", "/home/u/proj", nil, []matchCase{
			{"/home/u/proj/stray", false, ""},
			{"/tmp/x", true, "default:tmp"},
		}},
		{"cache inside the project", "/tmp/proj", []string{"allow /tmp default:tmp", "deny /tmp/proj default:project"}, []matchCase{
			{"/tmp/proj/.gocache/ab/cd", true, "default:go-cache"},
			{"/tmp/proj/stray", false, ""},
		}},
		{"the project in the module cache", "/home/u/go/pkg/mod/example.com/m@v1.0.0",
			[]string{"allow /home/u/go/pkg/mod default:go-cache", "deny /home/u/go/pkg/mod/example.com/m@v1.0.0 default:project"},
			[]matchCase{
				{"/home/u/go/pkg/mod/example.com/m@v1.0.0/go.sum", false, ""},
				{"/home/u/go/pkg/mod/cache/download/x", true, "default:go-cache"},
			}},
		{"the project in /dev/shm", "/dev/shm/p", []string{"allow /dev/shm default:dev", "deny /dev/shm/p default:project"}, []matchCase{
			{"/dev/shm/p/x", false, ""},
			{"/dev/shm/sem.x", true, "default:dev"},
		}},
		{"the working directory is /", "/", nil, []matchCase{
			{"/tmp/x", true, "default:tmp"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := load(Options{WorkDir: tt.workDir, Getenv: mapEnv(nil), GoEnv: goEnv}, fakeFS(nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := carved(l); !reflect.DeepEqual(got, tt.carved) {
				t.Errorf("carve-out %q, want %q", got, tt.carved)
			}
			checkMatches(t, l, tt.cases)
		})
	}
}

// An explicit entry, even one that covers the project's directory from
// above (marked broad), allows inside the project.
func TestExplicitEntryLiftsCarveOut(t *testing.T) {
	const file = "/tmp/proj/.writewatch.yaml"
	l, err := load(Options{WorkDir: "/tmp/proj", Getenv: mapEnv(nil)},
		fakeFS(map[string]string{file: "allow:\n  - {path: /tmp, broad: true}\n"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, l, []matchCase{
		{"/tmp/proj/stray", true, file + ":2"},
		{"/tmp/x", true, file + ":2"},
	})
}

func TestOverrides(t *testing.T) {
	project := &Entry{Kind: Deny, Source: SourceProject}
	config := &Entry{Kind: Deny, Source: "/p/.writewatch.yaml:3"}
	tmp := &Entry{Kind: Allow, Source: "default:tmp", CoversProject: true}
	explicit := &Entry{Kind: Allow, Source: "--allow"}
	python := &Entry{Kind: Allow, Source: "default:python-cache"}
	for _, tt := range []struct {
		d, a *Entry
		want bool
	}{
		{project, tmp, true},
		{project, explicit, false},
		{project, python, false},
		{config, tmp, true},
		{config, explicit, true},
		{config, python, true},
	} {
		if got := tt.d.Overrides(tt.a); got != tt.want {
			t.Errorf("%s overrides %s: %v, want %v", tt.d.Source, tt.a.Source, got, tt.want)
		}
	}
}

// DenyBelow names the deny entry that may protect something below a
// directory: the config's deny entries over any allow entry, the
// project's carve-out only over the default that covers the project.
func TestDenyBelow(t *testing.T) {
	const file = "/tmp/ci/proj/.writewatch.yaml"
	l, err := load(Options{WorkDir: "/tmp/ci/proj", Getenv: mapEnv(nil), GoEnv: fakeGoEnv},
		fakeFS(map[string]string{file: "allow:\n  - tests/**\n  - scratch/**\ndeny:\n  - tests/golden/**\n"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{"/tmp/ci/proj/tests", file + ":5"},
		{"/tmp/ci/proj/tests/golden", file + ":5"},
		{"/tmp/ci/proj/tests/data", ""},
		{"/tmp/ci/proj/scratch", ""},
		{"/tmp/ci", file + ":5"},
		{"/tmp/other", ""},
	} {
		checkDenyBelow(t, l, tc.dir, tc.want)
	}
	l, err = load(Options{WorkDir: "/tmp/ci/proj", Getenv: mapEnv(nil), GoEnv: fakeGoEnv},
		fakeFS(map[string]string{file: "allow:\n  - tests/**\n  - /tmp/ci/proj/build/**\n"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	checkDenyBelow(t, l, "/tmp/ci", SourceProject)
	checkDenyBelow(t, l, "/tmp/ci/proj/build", "")
	checkDenyBelow(t, l, "/tmp/ci/proj/tests", "")
}

func checkDenyBelow(t *testing.T, l *List, dir, want string) {
	t.Helper()
	_, a := l.Match(dir)
	got := ""
	if d := l.DenyBelow(dir, a); d != nil {
		got = d.Source
	}
	if got != want {
		t.Errorf("DenyBelow(%s) = %q, want %q", dir, got, want)
	}
}
