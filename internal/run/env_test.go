package run

import (
	"testing"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/live"
	"github.com/writewatch/writewatch/internal/tracer"
)

func TestRunningText(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"TestA"}, "TestA"}, {[]string{"TestA", "TestB", "TestC"}, "TestA (+2 more)"}} {
		if got := runningText(c.in); got != c.want {
			t.Errorf("runningText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPrepareEnv(t *testing.T) {
	env, cleanup, notes := prepareEnv(Config{Env: []string{"GOFLAGS=-count=3 -v", "PYTEST_PLUGINS=other", "PATH=/bin"}})
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
		if !looksLikeGoTest(args) || !hasJSONFlag(args) {
			t.Errorf("%q: not seen as go test -json", args)
		}
	}
	if hasJSONFlag([]string{"go", "test", "./...", "-args", "-json"}) {
		t.Error("-json after -args belongs to the test binary")
	}
}

// The kernel's causes of loss land where live.LostCauses names them.
func TestKernelCounters(t *testing.T) {
	st := tracer.Stats{RingbufFull: 4, ProcMapFull: 11, Truncated: 2, AllowedInKernel: 20, Repeats: 3}
	k := kernelCounters(st)
	byCause := st.LostByCause()
	for i, c := range live.LostCauses {
		if k.Lost[i] != byCause[c] {
			t.Errorf("lost %s = %d, want %d", c, k.Lost[i], byCause[c])
		}
	}
	if k.Truncated != 2 || k.Settled != 23 {
		t.Errorf("%+v", k)
	}
}
