package session_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/internal/render"
	"github.com/writewatch/writewatch/internal/session/sessiontest"
	"github.com/writewatch/writewatch/report"
)

// enforced is a run under --enforce (the landlock tier) whose kills are
// told to the slice it returns, as the terminal's line is.
func enforced(t *testing.T) (*sessiontest.Run, *[]report.Kill) {
	r := sessiontest.New(t, "allow:\n  - tests/**\n")
	r.Config.Mode, r.Config.Tier = report.ModeEnforce, "landlock"
	told := new([]report.Kill)
	r.Config.Killed = func(k *report.Kill) { *told = append(*told, *k) }
	return r, told
}

// outcomes are the report's tests: id, outcome and the start of the
// message.
func outcomes(rep *report.Report) map[string]string {
	m := map[string]string{}
	for _, tr := range rep.Tests {
		msg, _, _ := strings.Cut(tr.Message, ":")
		m[tr.ID] = tr.Outcome + " " + msg
	}
	return m
}

func ids(refs []report.TestRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.ID)
	}
	return out
}

// A Go test binary killed in a subtest: the kill is told at once, with
// its test; at the end the subtest and its parent failed, the parallel
// test paused meanwhile did not finish, and the test functions it had
// yet to run, as its -test.skip selects them, did not run.
func TestKilledGoTestBinary(t *testing.T) {
	r, told := enforced(t)
	bin := r.Fork(r.PID)
	r.Exec(bin, "/tmp/go-build1/b001/app.test", "-test.v=true", "-test.skip=TestSkipped")
	r.GoTest(bin, "example.com/app")
	r.GoFuncs(bin, "TestFirst", "TestParallel", "TestSave", "TestAfter", "TestSkipped", "FuzzLast")
	r.TestStart(bin, 1, "")
	r.TestStart(bin, 2, "TestFirst")
	r.TestEnd(bin, 2)
	r.TestStart(bin, 3, "TestParallel")
	r.TestStart(bin, 4, "TestSave")
	r.TestStart(bin, 5, "TestSave/sub")
	config := r.Home + "/.config/app/config.toml"
	r.Write(bin, ops.Open, config, sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC), sessiontest.InTest(5), sessiontest.Killed())
	r.Write(bin, ops.Open, config, sessiontest.Flags(unix.O_WRONLY), sessiontest.InTest(3), sessiontest.Killed())
	r.Exit(bin)
	rep := r.Report()

	if len(*told) != 1 {
		t.Fatalf("told of %d kills, want 1: %+v", len(*told), *told)
	}
	k := (*told)[0]
	if k.PID != int(bin) || k.Comm != "sh" || k.Test != "TestSave/sub" || k.Package != "example.com/app" || !k.RanTests ||
		k.Reason() != "open "+config+" O_WRONLY|O_CREAT|O_TRUNC outside the allowlist" || k.Action != report.ActionBlockedKilled {
		t.Errorf("told: %+v (%s)", k, k.Reason())
	}
	if len(rep.Kills) != 1 {
		t.Fatalf("kills: %+v", rep.Kills)
	}
	k = rep.Kills[0]
	if got, want := ids(k.Interrupted), []string{"TestParallel", "TestSave"}; !slices.Equal(got, want) {
		t.Errorf("interrupted: %v, want %v", got, want)
	}
	if got, want := ids(k.NotRun), []string{"TestAfter", "FuzzLast"}; !slices.Equal(got, want) || k.NotRunUnknown != "" {
		t.Errorf("not run: %v (%q), want %v", got, k.NotRunUnknown, want)
	}
	want := map[string]string{
		"TestFirst": " ", "TestParallel": "skipped did not finish", "TestSave": "failed killed by writewatch --enforce in its subtest TestSave/sub",
		"TestSave/sub": "failed killed by writewatch --enforce", "TestAfter": "skipped not run", "FuzzLast": "skipped not run",
	}
	if got := outcomes(rep); !maps(got, want) {
		t.Errorf("tests: %v, want %v", got, want)
	}
	if tr := rep.Tests[len(rep.Tests)-1]; tr.File != r.Path("x_test.go") || tr.Line != 60 ||
		tr.Message != "not run: writewatch --enforce killed sh (pid 101) in TestSave/sub: "+k.Reason() {
		t.Errorf("a test that did not run: %+v", tr)
	}

	var junit bytes.Buffer
	if err := render.WriteJUnit(&junit, rep); err != nil {
		t.Fatal(err)
	}
	// TestParallel wrote too, before it died: a failure.
	for _, want := range []string{`tests="6" failures="3" errors="0" skipped="2"`, `<skipped message="not run: writewatch --enforce killed sh (pid 101) in TestSave/sub: open`,
		`<failure message="killed by writewatch --enforce: open ` + config + ` O_WRONLY|O_CREAT|O_TRUNC outside the allowlist" type="writewatch.Killed">`,
		`did not finish: TestParallel, TestSave&#xA;did not run (2 tests): TestAfter, FuzzLast&#xA;`} {
		if !strings.Contains(junit.String(), want) {
			t.Errorf("%s missing in the JUnit report:\n%s", want, junit.String())
		}
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// pytest killed in a test: the tests it announced it would run that
// never began did not run; one that did began and passed stays passed.
func TestKilledPytest(t *testing.T) {
	r, told := enforced(t)
	py := r.Fork(r.PID)
	r.Exec(py, "/usr/bin/python3", "-m", "pytest")
	r.Announce(py, "end", "runner=pytest&phase=collect")
	r.Announce(py, "plan", "runner=pytest&total=4&suite=test_a.py&id=test_a.py%3A%3Atest_one&id=test_a.py%3A%3Atest_save")
	r.Announce(py, "plan", "runner=pytest&total=4&suite=test_b.py&id=test_b.py%3A%3Atest_two&id=test_b.py%3A%3Atest_three")
	one := "runner=pytest&suite=test_a.py&id=test_a.py%3A%3Atest_one"
	r.Announce(py, "begin", one+"&phase=call")
	r.Announce(py, "result", one+"&outcome=passed")
	r.Announce(py, "begin", "runner=pytest&suite=test_a.py&id=test_a.py%3A%3Atest_save&phase=call")
	r.Write(py, ops.Open, r.Home+"/.config/app/config.toml", sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT), sessiontest.Killed())
	r.Exit(py)
	rep := r.Report()

	if len(*told) != 1 || (*told)[0].Test != "test_a.py::test_save" || !(*told)[0].RanTests {
		t.Fatalf("told: %+v", *told)
	}
	k := rep.Kills[0]
	if got, want := ids(k.NotRun), []string{"test_b.py::test_two", "test_b.py::test_three"}; !slices.Equal(got, want) || k.NotRunUnknown != "" {
		t.Errorf("not run: %v (%q), want %v", got, k.NotRunUnknown, want)
	}
	if k.NotRun[0].Package != "test_b.py" || len(k.Interrupted) != 0 {
		t.Errorf("kill: %+v", k)
	}
	want := map[string]string{"test_a.py::test_one": "passed ", "test_a.py::test_save": "failed killed by writewatch --enforce",
		"test_b.py::test_two": "skipped not run", "test_b.py::test_three": "skipped not run"}
	if got := outcomes(rep); !maps(got, want) {
		t.Errorf("tests: %v, want %v", got, want)
	}
}

// What cannot be known is said, not guessed: a runner that announced
// no plan, or one whose plan does not add up. A command a test started,
// killed, ended no test: the runner goes on.
func TestKilledWithoutPlan(t *testing.T) {
	for name, plan := range map[string]string{
		"none":         "",
		"not whole":    "runner=pytest&total=3&suite=test_a.py&id=test_a.py%3A%3Atest_save",
		"disagreeing":  "runner=pytest&total=1&suite=test_a.py&id=test_a.py%3A%3Atest_save",
		"bad total":    "runner=pytest&total=x&suite=test_a.py&id=test_a.py%3A%3Atest_save",
		"child killed": "runner=pytest&total=1&suite=test_a.py&id=test_a.py%3A%3Atest_save",
	} {
		t.Run(name, func(t *testing.T) {
			r, _ := enforced(t)
			py := r.Fork(r.PID)
			r.Exec(py, "/usr/bin/python3", "-m", "pytest")
			if plan != "" {
				r.Announce(py, "plan", plan)
			}
			if name == "disagreeing" {
				r.Announce(py, "plan", "runner=pytest&total=2&suite=test_b.py&id=test_b.py%3A%3Atest_b")
			}
			r.Announce(py, "begin", "runner=pytest&suite=test_a.py&id=test_a.py%3A%3Atest_save&phase=call")
			writer := py
			if name == "child killed" {
				writer = r.Fork(py)
				r.Exec(writer, "/bin/sh", "-c", "echo > ../x")
			}
			r.Write(writer, ops.Open, "../x", sessiontest.Flags(unix.O_WRONLY|unix.O_CREAT), sessiontest.Killed())
			r.Exit(writer)
			rep := r.Report()
			if len(rep.Kills) != 1 {
				t.Fatalf("kills: %+v", rep.Kills)
			}
			k := rep.Kills[0]
			if k.Test != "test_a.py::test_save" || len(k.NotRun) != 0 {
				t.Errorf("kill: %+v", k)
			}
			if name == "child killed" {
				if k.RanTests || k.NotRunUnknown != "" || k.Comm != "sh" || outcomes(rep)["test_a.py::test_save"] != " " {
					t.Errorf("a killed child: %+v; tests %v", k, outcomes(rep))
				}
				return
			}
			if !k.RanTests || k.NotRunUnknown == "" {
				t.Errorf("no reason the tests not run are unknown: %+v", k)
			}
			t.Log(k.NotRunUnknown)
		})
	}
}
