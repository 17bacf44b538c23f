package allowlist

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -update to accept it)\ngot:\n%s\nwant:\n%s", file, got, want)
	}
}

func TestWritePrintConfig(t *testing.T) {
	const config = `# Project allowlist
allow:
  - tests/**
  - ~/.cache/myapp
  - $HOME/.local/share/foo
  - build/*.d
  - "with space"
deny:
  - .git
defaults:
  python-cache: false
`
	fsys := fakeFS(map[string]string{
		"/proj/.writewatch.yaml": config,
		"/home/u/.cache/myapp":   "",
	}, map[string]string{"/home/u/.cache": "/data/cache"})
	l, err := load(Options{
		WorkDir:    "/proj/sub",
		Home:       "/home/u",
		Getenv:     mapEnv(map[string]string{"HOME": "/home/u", "TMPDIR": "/run/tmp"}),
		ExtraAllow: []string{"out", "/var/log/app-[0-9]*.log"},
		GoEnv:      fakeGoEnv,
	}, fsys)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WritePrintConfig(&buf, l); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "print-config.golden", buf.Bytes())
}

func TestWritePrintConfigNoFile(t *testing.T) {
	l, err := load(Options{WorkDir: "/work dir", Getenv: mapEnv(nil)}, fakeFS(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WritePrintConfig(&buf, l); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "print-config-none.golden", buf.Bytes())

	var empty bytes.Buffer
	if err := WritePrintConfig(&empty, &List{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(empty.Bytes(), []byte("(none)")) {
		t.Errorf("empty list printed as\n%s", empty.Bytes())
	}
}
