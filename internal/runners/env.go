// Package runners holds what writewatch does for the test runners it
// knows, so that their tests can be told apart: for go test, the result
// cache off, each test's result read from -json output, and the test
// binaries followed; for pytest, its plugin on the path.
package runners

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/plugins"
)

// PrepareEnv shapes the environment (nil: this process's) of COMMAND,
// args run in dir: go test's result cache off when it runs go (a cached
// package runs nothing, so it cannot be traced; see RunsGo), and the
// pytest plugin on PYTHONPATH and in PYTEST_PLUGINS. It returns the
// environment, a function removing what it created, and what it did to
// GOFLAGS, for the notes at the end.
func PrepareEnv(base, args []string, dir string) (env []string, cleanup func(), goflags GoFlags) {
	env = append([]string(nil), base...)
	if base == nil {
		env = os.Environ()
	}
	cleanup = func() {}
	env, goflags = setGoFlags(env, args, dir)

	dir, err := os.MkdirTemp("", "writewatch-plugins-")
	if err != nil {
		return env, cleanup, goflags
	}
	cleanup = func() { os.RemoveAll(dir) }
	// COMMAND may run as the user who invoked sudo.
	if os.Chmod(dir, 0o755) != nil ||
		os.WriteFile(filepath.Join(dir, plugins.PytestModule+".py"), plugins.Pytest, 0o644) != nil {
		return env, cleanup, goflags
	}
	env = setEnv(env, "PYTHONPATH", joinList(dir, launch.Getenv(env, "PYTHONPATH"), ":"))
	env = setEnv(env, "PYTEST_PLUGINS", joinList(launch.Getenv(env, "PYTEST_PLUGINS"), plugins.PytestModule, ","))
	return env, cleanup, goflags
}

func joinList(a, b, sep string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + sep + b
}

// setEnv replaces every entry of key in env with one.
func setEnv(env []string, key, value string) []string {
	out := env[:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// IsGoTest reports whether args run go test directly.
func IsGoTest(args []string) bool {
	return len(args) > 1 && filepath.Base(args[0]) == "go" && args[1] == "test"
}
