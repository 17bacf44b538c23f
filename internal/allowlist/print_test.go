package allowlist

import (
	"bytes"
	"testing"

	"github.com/writewatch/writewatch/internal/golden"
)

func TestWritePrintConfig(t *testing.T) {
	const config = `# Project allowlist
allow:
  - tests/**
  - ~/.cache/myapp
  - $HOME/.local/share/foo
  - build/*.d
  - "with space"
  - {path: /srv, broad: true}
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
	golden.Check(t, "print-config.golden", buf.Bytes())
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
	golden.Check(t, "print-config-none.golden", buf.Bytes())

	var empty bytes.Buffer
	if err := WritePrintConfig(&empty, &List{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(empty.Bytes(), []byte("(none)")) {
		t.Errorf("empty list printed as\n%s", empty.Bytes())
	}
}

// A project under the temp dir: the carve-out is a deny entry from
// default:project, explained above the table.
func TestWritePrintConfigProjectInTmp(t *testing.T) {
	fsys := fakeFS(map[string]string{"/tmp/proj/.writewatch.yaml": "allow:\n  - tests/**\ndefaults: {dev: false}\n"}, nil)
	l, err := load(Options{WorkDir: "/tmp/proj", Getenv: mapEnv(nil)}, fsys)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WritePrintConfig(&buf, l); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "print-config-tmp.golden", buf.Bytes())
}
