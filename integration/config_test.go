package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wwQuick runs writewatch in dir and gives up on it after a minute, so
// that a writewatch that hangs fails the test instead of stalling it.
func wwQuick(t *testing.T, dir string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, wwBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("writewatch %q did not return within a minute:\n%s", args, out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// Config files that cannot be meant are refused before COMMAND runs:
// exit 2 and one line that names the file (and the line, for what is in
// it), at once, whatever the file is.
func TestConfigRefused(t *testing.T) {
	root, _ := project(t)
	cfg := filepath.Join(root, ".writewatch.yaml")
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T)
		want  string
	}{
		{"allow /", func(t *testing.T) { writeFile(t, cfg, "allow:\n  - tests/**\n  - /\n") },
			cfg + `:3: allow "/": covers / (every path); allow only what the tests write, or write {path: "/", broad: true} if all of it is meant`},
		{"allow a directory above the project", func(t *testing.T) { writeFile(t, cfg, "allow:\n  - ../..\n") },
			cfg + `:2: allow "../..": covers ` + filepath.Dir(filepath.Dir(root)) + `, a directory above the project ` + root},
		{"mis-indented entry", func(t *testing.T) { writeFile(t, cfg, "allow:\n  - build\n    - bad indent\n") },
			cfg + `:2: allow entry "build - bad indent" goes on over more than one line`},
		{"unknown entry key", func(t *testing.T) { writeFile(t, cfg, "allow:\n  - {path: /, brod: true}\n") },
			cfg + `:2: allow entry: unknown key "brod" (known keys: path, broad)`},
		{"a FIFO", func(t *testing.T) { must(t, syscall.Mkfifo(cfg, 0o644)) },
			"writewatch: allowlist: config file " + cfg + " is a named pipe (FIFO), not a regular file"},
		{"a link to /dev/zero", func(t *testing.T) { must(t, os.Symlink("/dev/zero", cfg)) },
			"writewatch: allowlist: config file " + cfg + " is a character device (through a link to /dev/zero), not a regular file"},
		{"a directory", func(t *testing.T) { must(t, os.Mkdir(cfg, 0o755)) },
			"writewatch: allowlist: config file " + cfg + " is a directory, not a regular file"},
		{"too big", func(t *testing.T) {
			writeFile(t, cfg, "allow: [tests]\n")
			must(t, os.Truncate(cfg, 16<<20+1))
		}, "writewatch: allowlist: config file " + cfg + " is larger than 16 MiB, the most a config may hold"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			must(t, os.RemoveAll(cfg))
			tt.setup(t)
			mark := filepath.Join(root, "tests", "ran")
			code, out := wwQuick(t, root, nil, "--", "touch", mark)
			if code != 2 {
				t.Errorf("exit code %d, want 2\n%s", code, out)
			}
			if exists(mark) {
				t.Error("COMMAND ran")
			}
			if !strings.Contains(out, tt.want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
				t.Errorf("output\n%s\nwant one line with\n%s", out, tt.want)
			}
		})
	}

	// Marked broad, the entry is taken.
	must(t, os.RemoveAll(cfg))
	writeFile(t, cfg, "allow:\n  - {path: /, broad: true}\n")
	if code, out := wwQuick(t, root, nil, "--", "touch", filepath.Join(root, "anything")); code != 0 {
		t.Errorf("broad: true: exit code %d\n%s", code, out)
	}
}

// fakeGo puts a go first on PATH that leaves a mark when it runs and then
// answers nothing for far longer than writewatch waits for it.
func fakeGo(t *testing.T) (env []string, ran string) {
	t.Helper()
	bin := t.TempDir()
	ran = filepath.Join(bin, "ran")
	script := "#!/bin/sh\ntouch " + ran + "\nexec sleep 30\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + bin + ":" + os.Getenv("PATH")}, ran
}

// go env runs only for a COMMAND that may run go, and a go env that does
// not answer never fails the run: the documented cache locations stand in,
// with one warning.
func TestSlowGoEnv(t *testing.T) {
	root, _ := project(t)
	env, ran := fakeGo(t)

	// true runs no go: go env is not asked.
	code, out := wwQuick(t, root, env, "--", "true")
	if code != 0 || strings.Contains(out, "warning") {
		t.Errorf("COMMAND true: exit code %d\n%s", code, out)
	}
	if exists(ran) {
		t.Error("go env ran for COMMAND true")
	}

	// A shell may run go: go env is asked, does not answer, and the run
	// goes on.
	code, out = wwQuick(t, root, env, "--", "sh", "-c", "true")
	if code != 0 {
		t.Errorf("COMMAND sh: exit code %d, want 0\n%s", code, out)
	}
	if !exists(ran) {
		t.Error("go env did not run for COMMAND sh")
	}
	const warning = "writewatch: warning: go env did not answer within 5s; the go-cache default allows Go's default cache locations instead: "
	if strings.Count(out, warning) != 1 {
		t.Errorf("want the warning %q once in\n%s", warning, out)
	}
}
