package runners

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/report"
)

func TestPrepareEnv(t *testing.T) {
	env, cleanup, goflags := PrepareEnv([]string{"GOFLAGS=-count=3 -v", "PYTEST_PLUGINS=other", "PATH=/bin"}, []string{"go", "test", "./..."}, "/")
	defer cleanup()
	if got := launch.Getenv(env, "GOFLAGS"); got != "-count=1 -count=3 -v" || !goflags.Set || goflags.User != "-count=3 -v" {
		t.Errorf("GOFLAGS=%q (%+v): the user's flags must come last, to win", got, goflags)
	}
	if got := launch.Getenv(env, "PYTEST_PLUGINS"); got != "other,writewatch_pytest" {
		t.Errorf("PYTEST_PLUGINS=%q", got)
	}
	if launch.Getenv(env, "PYTHONPATH") == "" || launch.Getenv(env, "PATH") != "/bin" {
		t.Errorf("env %q", env)
	}
	// Not for a command that does not run go.
	env, cleanup, goflags = PrepareEnv([]string{"PATH=/bin"}, []string{"pytest", "-q"}, "/")
	defer cleanup()
	if got := launch.Getenv(env, "GOFLAGS"); got != "" || goflags.Set {
		t.Errorf("pytest: GOFLAGS=%q (%+v)", got, goflags)
	}
	for _, args := range [][]string{{"go", "test", "-json", "./..."}, {"/usr/bin/go", "test", "-v", "--json"}} {
		if !IsGoTest(args) || !hasJSONFlag(args) {
			t.Errorf("%q: not seen as go test -json", args)
		}
	}
	if hasJSONFlag([]string{"go", "test", "./...", "-args", "-json"}) {
		t.Error("-json after -args belongs to the test binary")
	}
}

// go test -json output reaches stdout byte for byte, and each test's
// result is read on the way.
func TestGoJSON(t *testing.T) {
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	if NewGoJSON([]string{"go", "test", "./..."}, out) != nil || NewGoJSON([]string{"go", "test", "-json"}, nil) != nil {
		t.Error("a tee without -json, or without a stdout")
	}
	tee := NewGoJSON([]string{"go", "test", "-json", "./..."}, out)
	if tee == nil {
		t.Fatal("no tee for go test -json")
	}
	input := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"boom\n"}
{"Action":"fail","Package":"p","Test":"TestA","Elapsed":0.5}
not json
{"Action":"pass","Package":"p","Test":"TestB","Elapsed":0.25}
{"Action":"skip","Package":"p","Test":"TestC"}
`
	w := tee.Writer()
	io.WriteString(w, input)
	tee.Started(true)
	got := tee.finish(5 * time.Second)
	want := []goResult{
		{pkg: "p", test: "TestA", outcome: report.OutcomeFailed, output: "boom\n", seconds: 0.5},
		{pkg: "p", test: "TestB", outcome: report.OutcomePassed, seconds: 0.25},
		{pkg: "p", test: "TestC", outcome: report.OutcomeSkipped},
	}
	if len(got) != len(want) {
		t.Fatalf("results %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if b, _ := os.ReadFile(out.Name()); string(b) != input {
		t.Errorf("stdout %q, want the input unchanged", b)
	}
}

func TestRunsGo(t *testing.T) {
	mod := t.TempDir()
	os.WriteFile(mod+"/go.mod", []byte("module m\n"), 0o644)
	os.Mkdir(mod+"/sub", 0o755)
	plain := t.TempDir()
	for _, tt := range []struct {
		args []string
		dir  string
		want bool
	}{
		{[]string{"go", "test", "./..."}, plain, true},
		{[]string{"/usr/local/go/bin/go", "vet"}, plain, true},
		{[]string{"go1.24.0", "test"}, plain, true},
		{[]string{"gotestsum", "--", "./..."}, plain, true},
		{[]string{"sh", "-c", "cd x && go test ./..."}, plain, true},
		{[]string{"make", "test"}, mod + "/sub", true},
		{[]string{"make", "test"}, plain, false},
		{[]string{"pytest", "-q"}, mod, false},
		{[]string{"python3", "-m", "pytest"}, plain, false},
		{[]string{"npm", "test"}, plain, false},
	} {
		if got := RunsGo(tt.args, tt.dir); got != tt.want {
			t.Errorf("RunsGo(%q, %s) = %v, want %v", tt.args, tt.dir, got, tt.want)
		}
	}
}

// The note about GOFLAGS appears only when a go test that ran would have
// printed a cached result without it.
func TestGoFlagsNotes(t *testing.T) {
	set := GoFlags{Set: true}
	for _, tt := range []struct {
		g     GoFlags
		tests [][]string
		want  string
	}{
		{set, [][]string{{"go", "test", "./..."}}, goCountNote},
		{set, [][]string{{"go", "test", "-v", "-run", "TestX", "-race", "./..."}}, goCountNote},
		{set, [][]string{{"go", "test", "-count=1", "./..."}}, ""},    // asked for already
		{set, [][]string{{"go", "test", "-count", "2", "./..."}}, ""}, // any -count
		{set, [][]string{{"go", "test"}}, ""},                         // the current directory: never cached
		{set, [][]string{{"go", "test", "-run", "./..."}}, ""},        // "./..." is -run's value
		{set, [][]string{{"go", "test", "-coverprofile=c.out", "./..."}}, ""},
		{set, [][]string{{"go", "test", "./...", "-args", "-count=1"}}, goCountNote},
		{GoFlags{Set: true, User: "-count=1"}, [][]string{{"go", "test", "./..."}}, ""},
		{set, nil, ""},
		{GoFlags{}, [][]string{{"go", "test", "./..."}}, goCachedNote},
	} {
		got := strings.Join(tt.g.Notes(tt.tests), "")
		if got != tt.want {
			t.Errorf("%+v with %q: note %q, want %q", tt.g, tt.tests, got, tt.want)
		}
	}
	got := GoTests([][]string{{"go", "test", "x"}, {"/usr/bin/go", "build"}, {"sh"}, {"/opt/go/bin/go", "test"}})
	if len(got) != 2 {
		t.Errorf("GoTests: %q", got)
	}
}
