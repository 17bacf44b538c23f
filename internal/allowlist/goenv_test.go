package allowlist

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// goEnvOpts are Options whose go is in a PATH of its own, with the home
// /home/u and no XDG variables, so that GoCacheDefaults says
// /home/u/.cache/go-build, /home/u/go/pkg/mod and
// /home/u/.config/go/telemetry.
func goEnvOpts(t *testing.T, goEnv func() (map[string]string, error), warn func(string)) Options {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Options{
		Getenv:  mapEnv(map[string]string{"PATH": bin, "HOME": "/home/u", "GOENV": "off"}),
		GoEnv:   goEnv,
		Warn:    warn,
		Command: []string{"go", "test", "./..."},
	}
}

var documentedCaches = []string{"/home/u/.cache/go-build", "/home/u/go/pkg/mod", "/home/u/.config/go/telemetry"}

// Load does not wait for go env: it runs while the caller goes on, and the
// list's first use waits for it.
func TestGoEnvRunsConcurrently(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	opts := goEnvOpts(t, func() (map[string]string, error) {
		close(started)
		<-release
		return map[string]string{"GOCACHE": "/c", "GOMODCACHE": "/m", "GOTELEMETRYDIR": "off"}, nil
	}, nil)
	loaded := make(chan *List)
	go func() {
		l, err := loadConfig(t, "", opts)
		if err != nil {
			t.Error(err)
		}
		loaded <- l
	}()
	var l *List
	select {
	case l = <-loaded:
	case <-time.After(time.Minute):
		t.Fatal("Load waits for go env")
	}
	<-started
	close(release)
	if got := patterns(l, Allow, "default:go-cache"); !reflect.DeepEqual(got, []string{"/c", "/m"}) {
		t.Errorf("go-cache entries %q, want [/c /m]", got)
	}
}

// A go env that fails or does not answer never fails the load: Go's
// documented locations stand in, with one warning.
func TestGoEnvFallsBack(t *testing.T) {
	defer func(d time.Duration) { goEnvPatience = d }(goEnvPatience)
	goEnvPatience = 50 * time.Millisecond
	hang := make(chan struct{})
	defer close(hang)
	for _, tt := range []struct {
		name  string
		goEnv func() (map[string]string, error)
		warn  string
	}{
		{"fails", func() (map[string]string, error) { return nil, errors.New("go env: exit status 1: boom") },
			"go env: exit status 1: boom; the go-cache default allows Go's default cache locations instead: /home/u/.cache/go-build, /home/u/go/pkg/mod, /home/u/.config/go/telemetry"},
		{"hangs", func() (map[string]string, error) { <-hang; return nil, nil },
			"go env did not answer within 50ms; the go-cache default allows Go's default cache locations instead: /home/u/.cache/go-build, /home/u/go/pkg/mod, /home/u/.config/go/telemetry"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var warnings []string
			l, err := loadConfig(t, "", goEnvOpts(t, tt.goEnv, func(w string) { warnings = append(warnings, w) }))
			if err != nil {
				t.Fatal(err)
			}
			l.Match("/x")
			if got := patterns(l, Allow, "default:go-cache"); !reflect.DeepEqual(got, documentedCaches) {
				t.Errorf("go-cache entries %q, want %q", got, documentedCaches)
			}
			l.Entries()
			if want := []string{tt.warn}; !reflect.DeepEqual(warnings, want) {
				t.Errorf("warnings\n%q\nwant\n%q", warnings, want)
			}
		})
	}
}

// go env runs only for a COMMAND that may run go; for others the
// documented locations stand in, when go is installed.
func TestGoEnvOnlyWhenNeeded(t *testing.T) {
	trueBin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) here")
	}
	ran := false
	opts := goEnvOpts(t, func() (map[string]string, error) {
		ran = true
		return map[string]string{"GOCACHE": "/c"}, nil
	}, nil)
	opts.Command = []string{trueBin}
	l, err := loadConfig(t, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := patterns(l, Allow, "default:go-cache"); ran || !reflect.DeepEqual(got, documentedCaches) {
		t.Errorf("COMMAND true: go env ran: %v; go-cache entries %q, want %q", ran, got, documentedCaches)
	}

	// Without go on PATH there is nothing to allow.
	opts.Getenv = mapEnv(map[string]string{"PATH": t.TempDir(), "HOME": "/home/u"})
	if l, err = loadConfig(t, "", opts); err != nil {
		t.Fatal(err)
	}
	if got := patterns(l, Allow, "default:go-cache"); ran || got != nil {
		t.Errorf("no go: go env ran: %v; go-cache entries %q", ran, got)
	}

	opts.Command = []string{"go", "vet"}
	if l, err = loadConfig(t, "", opts); err != nil {
		t.Fatal(err)
	}
	if got := patterns(l, Allow, "default:go-cache"); !ran || !reflect.DeepEqual(got, []string{"/c"}) {
		t.Errorf("COMMAND go: go env ran: %v; go-cache entries %q", ran, got)
	}
}

func TestMayRunGo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(name, to string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	self, err := os.Executable() // built by Go
	if err != nil {
		t.Fatal(err)
	}
	native := ""
	for _, c := range []string{"/usr/bin/true", "/bin/true", "/usr/bin/cat", "/bin/cat"} {
		if _, err := os.Stat(c); err == nil {
			native = c
			break
		}
	}
	if native == "" {
		t.Skip("no native true(1) or cat(1) to try")
	}
	copyOf := func(name, from string) string {
		t.Helper()
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, string(data), 0o755)
	}
	script := write("run-tests", "#!/bin/sh\ngo test ./...\n", 0o755)
	data := write("data.bin", "\x00\x01\x02\x03 not a program", 0o755)
	empty := write("empty", "", 0o755)
	nativeCopy := copyOf("mytool", native)
	pythonNamed := copyOf("python3.12", native)
	linkToMake := link("build", copyOf("make", native))
	goLink := link("go", native)
	dlWrapper := link("go1.24.3", native)
	gotip := link("gotip", native)
	testBin := link("pkg.test", self)
	getenv := mapEnv(map[string]string{"PATH": dir + ":/usr/bin:/bin"})

	for _, tt := range []struct {
		argv []string
		want bool
	}{
		{nil, true},
		{[]string{""}, true},
		{[]string{native}, false},
		{[]string{nativeCopy, "-x"}, false},
		{[]string{"mytool"}, false},
		{[]string{"./mytool"}, false},
		{[]string{"no-such-program-anywhere"}, true},
		{[]string{"./missing"}, true},
		{[]string{self, "-test.run", "X"}, true},
		{[]string{testBin}, true},
		{[]string{script}, true},
		{[]string{"run-tests"}, true},
		{[]string{data}, true},
		{[]string{empty}, true},
		{[]string{pythonNamed, "-m", "pytest"}, true},
		{[]string{linkToMake, "test"}, true},
		{[]string{goLink, "test"}, true},
		{[]string{"go", "test"}, true},
		{[]string{dlWrapper}, true},
		{[]string{gotip}, true},
	} {
		if got := MayRunGo(tt.argv, dir, getenv); got != tt.want {
			t.Errorf("MayRunGo(%q) = %v, want %v", tt.argv, got, tt.want)
		}
	}
	for _, name := range []string{"sh", "bash", "make", "env", "xargs", "timeout", "sudo", "python3", "perl", "node"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if !MayRunGo([]string{p}, dir, getenv) {
			t.Errorf("MayRunGo(%s) = false, want true", p)
		}
	}
}

func TestGoCacheDefaults(t *testing.T) {
	files := map[string]string{
		"/home/u/.config/go/env": "GOMODCACHE=/fast/mod\nGOFLAGS=-mod=mod\n",
		"/etc/goenv":             "GOCACHE=/shared/cache\n GOPATH = /gp1:/gp2 \n",
	}
	readFile := func(name string) ([]byte, error) {
		if data, ok := files[name]; ok {
			return []byte(data), nil
		}
		return nil, os.ErrNotExist
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		home string
		want map[string]string
	}{
		{"the home's defaults and env file", map[string]string{"HOME": "/home/u"}, "", map[string]string{
			"GOCACHE": "/home/u/.cache/go-build", "GOMODCACHE": "/fast/mod", "GOTELEMETRYDIR": "/home/u/.config/go/telemetry"}},
		{"home from Options", nil, "/home/u", map[string]string{
			"GOCACHE": "/home/u/.cache/go-build", "GOMODCACHE": "/fast/mod", "GOTELEMETRYDIR": "/home/u/.config/go/telemetry"}},
		{"XDG directories", map[string]string{"HOME": "/home/v", "XDG_CACHE_HOME": "/xc", "XDG_CONFIG_HOME": "/xg"}, "", map[string]string{
			"GOCACHE": "/xc/go-build", "GOMODCACHE": "/home/v/go/pkg/mod", "GOTELEMETRYDIR": "/xg/go/telemetry"}},
		{"variables win", map[string]string{"HOME": "/home/u", "GOCACHE": "/c", "GOMODCACHE": "/m"}, "", map[string]string{
			"GOCACHE": "/c", "GOMODCACHE": "/m", "GOTELEMETRYDIR": "/home/u/.config/go/telemetry"}},
		{"GOENV names the file; GOPATH's first directory", map[string]string{"HOME": "/home/u", "GOENV": "/etc/goenv"}, "", map[string]string{
			"GOCACHE": "/shared/cache", "GOMODCACHE": "/gp1/pkg/mod", "GOTELEMETRYDIR": "/home/u/.config/go/telemetry"}},
		{"GOENV off", map[string]string{"HOME": "/home/u", "GOENV": "off"}, "", map[string]string{
			"GOCACHE": "/home/u/.cache/go-build", "GOMODCACHE": "/home/u/go/pkg/mod", "GOTELEMETRYDIR": "/home/u/.config/go/telemetry"}},
		{"no home", map[string]string{"HOME": "relative"}, "", map[string]string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := goCacheDefaults(mapEnv(tt.env), tt.home, readFile)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

// RunGoEnv asks go with GOTOOLCHAIN=local, in /, whatever the caller's
// environment says: go env never downloads a release.
func TestRunGoEnvStaysLocal(t *testing.T) {
	bin := t.TempDir()
	out := filepath.Join(bin, "seen")
	fake := "#!/bin/sh\n{ echo \"GOTOOLCHAIN=$GOTOOLCHAIN\"; pwd; echo \"$@\"; } > " + out + "\necho '{\"GOCACHE\": \"/c\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	env, err := RunGoEnv(t.Context(), func(c *exec.Cmd) {
		c.Env = []string{"PATH=" + bin, "GOTOOLCHAIN=go1.99.0"}
	})
	if err != nil {
		t.Fatal(err)
	}
	if env["GOCACHE"] != "/c" {
		t.Errorf("env %v", env)
	}
	seen, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "GOTOOLCHAIN=local\n/\nenv -json GOCACHE GOMODCACHE GOTELEMETRYDIR\n"; string(seen) != want {
		t.Errorf("go saw\n%s\nwant\n%s", seen, want)
	}

	// A failing go: its error output, on one line.
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\necho 'go: bad\nthings' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = RunGoEnv(t.Context(), nil)
	if want := "go env: exit status 3: go: bad things"; err == nil || err.Error() != want || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v, want %s", err, want)
	}
}
