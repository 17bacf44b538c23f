package allowlist

import (
	"os"
	"path/filepath"
	"testing"
)

// writewatch's own output file is allowed, also inside a project under
// /tmp, where the tmp default does not apply; the config's deny entries
// still win, and nothing else is allowed by it.
func TestOutputsAllowed(t *testing.T) {
	const file = "/tmp/proj/.writewatch.yaml"
	l, err := load(Options{WorkDir: "/tmp/proj", Getenv: mapEnv(nil), Outputs: []Output{
		{Name: "stdout", Path: "/tmp/proj/test.log"},
		{Name: "stderr", Path: "/tmp/proj/.git/err.log"},
		{Name: "stdout", Path: "/home/u/ci/[x].log"},
	}}, fakeFS(map[string]string{file: "deny:\n  - .git\n"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, l, []matchCase{
		{"/tmp/proj/test.log", true, "output:stdout"},
		{"/tmp/proj/test.log2", false, ""},
		{"/tmp/proj/other.log", false, ""},
		{"/tmp/proj/.git/err.log", false, file + ":2"},
		{"/home/u/ci/[x].log", true, "output:stdout"},
		{"/home/u/ci/x.log", false, ""},
	})
}

// OutputFile names a regular file that a descriptor writes to, and
// nothing else.
func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ci.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if o, ok := OutputFile("stdout", f); !ok || o != (Output{Name: "stdout", Path: path}) {
		t.Errorf("regular file: %+v, %v; want %s", o, ok, path)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, g := range map[string]*os.File{"/dev/null": null, "a pipe": w, "nil": nil} {
		if o, ok := OutputFile("stdout", g); ok {
			t.Errorf("%s: %+v, want none", name, o)
		}
	}
	// Renamed since it was opened: its old name is not allowed.
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if o, ok := OutputFile("stdout", f); !ok || o.Path != path+".old" {
		t.Errorf("renamed: %+v, %v; want %s.old", o, ok, path)
	}
	if err := os.Remove(path + ".old"); err != nil {
		t.Fatal(err)
	}
	if o, ok := OutputFile("stdout", f); ok {
		t.Errorf("removed: %+v, want none", o)
	}
}
