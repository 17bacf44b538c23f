package plugins

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// announcement is one the plugin made: its verb and fields.
type announcement struct {
	Verb   string
	Fields map[string]any
}

// pytestAnnouncements runs pytest on the files of suite with the plugin,
// whose announcements a conftest records instead of making: no kernel,
// no writewatch. It returns them, and pytest's output.
func pytestAnnouncements(t *testing.T, suite map[string]string, args ...string) ([]announcement, string) {
	t.Helper()
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import pytest").Run(); err != nil {
		t.Skipf("no pytest for %s: %v", python, err)
	}
	dir := t.TempDir()
	files := map[string]string{
		PytestModule + ".py": string(Pytest),
		"conftest.py": `import json, os
import writewatch_pytest

_log = []
writewatch_pytest._announce = lambda verb, **fields: _log.append([verb, fields])


def pytest_unconfigure(config):
    with open(os.environ["ANNOUNCED"], "w") as f:
        json.dump(_log, f)
`,
	}
	for name, text := range suite {
		files[name] = text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(dir, "announced.json")
	cmd := exec.Command(python, append([]string{"-m", "pytest", "-q", "-p", PytestModule, "-p", "no:cacheprovider"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir, "ANNOUNCED="+log, "PYTHONDONTWRITEBYTECODE=1")
	out, _ := cmd.CombinedOutput()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("no announcements: %v\n%s", err, out)
	}
	var raw [][2]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	var as []announcement
	for _, r := range raw {
		var a announcement
		if json.Unmarshal(r[0], &a.Verb) != nil || json.Unmarshal(r[1], &a.Fields) != nil {
			t.Fatalf("announcement %s", r)
		}
		as = append(as, a)
	}
	return as, string(out)
}

// A unittest.TestCase's own setUp and tearDown are announced as phases
// of the test they run for, at their own source, and the call phase again
// when they return, or raise; a class that defines neither has none, and
// no outcome changes.
func TestUnittestFrames(t *testing.T) {
	as, out := pytestAnnouncements(t, map[string]string{
		"test_u.py": `import os, unittest


class Base(unittest.TestCase):
    def setUp(self):
        open("shared.txt", "w").close()

    def tearDown(self):
        os.remove("shared.txt")


class TestReport(Base):
    def test_one(self):
        assert os.path.exists("shared.txt")


class TestBroken(unittest.TestCase):
    def setUp(self):
        raise RuntimeError("setUp fails")

    def test_never(self):
        pass


class TestPlain(unittest.TestCase):
    def test_plain(self):
        pass
`,
	})
	if !strings.Contains(out, "1 failed, 2 passed") {
		t.Errorf("the outcome changed:\n%s", out)
	}
	var got []string
	for _, a := range as {
		id, _ := a.Fields["id"].(string)
		if a.Verb != "begin" || id == "" || a.Fields["fixture"] != nil {
			continue
		}
		line := fmt.Sprint(strings.TrimPrefix(id, "test_u.py::"), " ", a.Fields["phase"], " ", filepath.Base(fmt.Sprint(a.Fields["file"])), ":", a.Fields["line"])
		if len(got) == 0 || got[len(got)-1] != line { // a fixture's end announces its phase again
			got = append(got, line)
		}
	}
	want := []string{
		"TestReport::test_one setup test_u.py:13", "TestReport::test_one call test_u.py:13",
		"TestReport::test_one setUp test_u.py:5", "TestReport::test_one call test_u.py:13",
		"TestReport::test_one tearDown test_u.py:8", "TestReport::test_one call test_u.py:13",
		"TestReport::test_one teardown test_u.py:13",
		"TestBroken::test_never setup test_u.py:21", "TestBroken::test_never call test_u.py:21",
		"TestBroken::test_never setUp test_u.py:18", "TestBroken::test_never call test_u.py:21",
		"TestBroken::test_never teardown test_u.py:21",
		"TestPlain::test_plain setup test_u.py:26", "TestPlain::test_plain call test_u.py:26",
		"TestPlain::test_plain teardown test_u.py:26",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("announced:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The plan: the tests the session runs once -k has deselected some, in
// order, announced in as many announcements as their paths need (none
// longer than 4000 bytes), each of one suite, each with the total.
func TestPlan(t *testing.T) {
	long := strings.Repeat("x", 60)
	as, out := pytestAnnouncements(t, map[string]string{
		"test_a.py": "def test_one():\n    pass\n\ndef test_deselected():\n    pass\n\ndef test_two():\n    pass\n",
		"test_b.py": "import pytest\n\n@pytest.mark.parametrize('n', range(150))\ndef test_" + long + "(n):\n    pass\n",
	}, "-k", "not deselected")
	if !strings.Contains(out, "152 passed, 1 deselected") {
		t.Fatalf("pytest:\n%s", out)
	}
	want := []string{"test_a.py::test_one", "test_a.py::test_two"}
	for n := range 150 {
		want = append(want, fmt.Sprintf("test_b.py::test_%s[%d]", long, n))
	}
	var got []string
	plans := 0
	for _, a := range as {
		if a.Verb != "plan" {
			continue
		}
		plans++
		if a.Fields["total"] != float64(len(want)) {
			t.Errorf("total %v, want %d", a.Fields["total"], len(want))
		}
		size := len("/dev/null/.writewatch/1/plan?runner=pytest&total=152&suite=") + len(quote(fmt.Sprint(a.Fields["suite"])))
		for _, id := range a.Fields["id"].([]any) {
			id := id.(string)
			if !strings.HasPrefix(id, fmt.Sprint(a.Fields["suite"])+"::") {
				t.Errorf("%s announced in suite %v", id, a.Fields["suite"])
			}
			size += len("&id=" + quote(id))
			got = append(got, id)
		}
		if size > 4000 {
			t.Errorf("a plan announcement of %d bytes", size)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("planned:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if plans < 4 {
		t.Errorf("%d plan announcements, want one for test_a.py and at least three for test_b.py's %d bytes", plans, 150*80)
	}
}

// quote percent-encodes s as Python's urllib.parse.quote(s, safe="").
func quote(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
