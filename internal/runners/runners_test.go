package runners

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/report"
)

func TestPrepareEnv(t *testing.T) {
	env, cleanup, notes := PrepareEnv([]string{"GOFLAGS=-count=3 -v", "PYTEST_PLUGINS=other", "PATH=/bin"})
	defer cleanup()
	if got := launch.Getenv(env, "GOFLAGS"); got != "-count=1 -count=3 -v" {
		t.Errorf("GOFLAGS=%q: the user's flags must come last, to win", got)
	}
	if got := launch.Getenv(env, "PYTEST_PLUGINS"); got != "other,writewatch_pytest" {
		t.Errorf("PYTEST_PLUGINS=%q", got)
	}
	if launch.Getenv(env, "PYTHONPATH") == "" || launch.Getenv(env, "PATH") != "/bin" || len(notes) != 1 {
		t.Errorf("env %q, notes %q", env, notes)
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
