package allowlist

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin runs Load and fails the test, instead of hanging it, when
// Load does not return.
func loadWithin(t *testing.T, opts Options) (*List, error) {
	t.Helper()
	type result struct {
		l   *List
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := Load(opts)
		done <- result{l, err}
	}()
	select {
	case r := <-done:
		return r.l, r.err
	case <-time.After(time.Minute):
		t.Fatal("Load did not return")
		return nil, nil
	}
}

// A config that is not a regular file is refused at once, in one line
// that says what it is.
func TestConfigNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// Found by the search upwards: a FIFO named .writewatch.yaml.
	found := filepath.Join(dir, "found")
	if err := os.MkdirAll(filepath.Join(found, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(found, ConfigFileName), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory named .writewatch.yaml.
	dirConfig := filepath.Join(dir, "dirconfig")
	if err := os.MkdirAll(filepath.Join(dirConfig, ConfigFileName), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name string
		opts Options
		want string
	}{
		{"fifo", Options{WorkDir: dir, ConfigPath: fifo},
			"allowlist: config file " + fifo + " is a named pipe (FIFO), not a regular file"},
		{"link to /dev/zero", Options{WorkDir: dir, ConfigPath: zero},
			"allowlist: config file " + zero + " is a character device (through a link to /dev/zero), not a regular file"},
		{"/dev/zero", Options{WorkDir: dir, ConfigPath: "/dev/zero"},
			"allowlist: config file /dev/zero is a character device, not a regular file"},
		{"directory", Options{WorkDir: dir, ConfigPath: "sub"},
			"allowlist: config file " + sub + " is a directory, not a regular file"},
		{"fifo found upwards", Options{WorkDir: filepath.Join(found, "a")},
			"allowlist: config file " + filepath.Join(found, ConfigFileName) + " is a named pipe (FIFO), not a regular file"},
		{"directory found", Options{WorkDir: dirConfig},
			"allowlist: config file " + filepath.Join(dirConfig, ConfigFileName) + " is a directory, not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Getenv = mapEnv(nil)
			_, err := loadWithin(t, tt.opts)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error %v\nwant  %s", err, tt.want)
			}
		})
	}
}

func TestConfigSizeBound(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	// A sparse file: its size is refused before anything is read.
	if err := os.WriteFile(big, []byte("allow: [a]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxConfigSize+1); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("allowlist: config file %s is larger than 16 MiB, the most a config may hold", big)
	if _, err := loadWithin(t, Options{WorkDir: dir, ConfigPath: big, Getenv: mapEnv(nil)}); err == nil || err.Error() != want {
		t.Errorf("error %v\nwant  %s", err, want)
	}

	// Exactly the bound is read.
	text := "allow: [a]\n"
	text += strings.Repeat("#", MaxConfigSize-len(text)-1) + "\n"
	if err := os.WriteFile(big, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := loadWithin(t, Options{WorkDir: dir, ConfigPath: big, Getenv: mapEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got := patterns(l, Allow, big); len(got) != 1 || got[0] != filepath.Join(dir, "a") {
		t.Errorf("entries %q", got)
	}
}

// --config /dev/null means no entries from a file; the defaults and --allow
// still apply, relative to the working directory.
func TestConfigDevNull(t *testing.T) {
	dir := t.TempDir()
	l, err := loadWithin(t, Options{WorkDir: dir, ConfigPath: "/dev/null", Getenv: mapEnv(nil), ExtraAllow: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.ConfigFile() != "/dev/null" {
		t.Errorf("ConfigFile() = %q", l.ConfigFile())
	}
	if got := patterns(l, Allow, "--allow"); len(got) != 1 || got[0] != filepath.Join(dir, "out") {
		t.Errorf("--allow entries %q", got)
	}
	if got := patterns(l, Allow, "default:tmp"); len(got) != 1 {
		t.Errorf("default tmp entries %q", got)
	}
}
