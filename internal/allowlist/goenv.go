package allowlist

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// GoEnvPatience is how long the go-cache default waits for `go env` once
// the list is needed. Past it, the default allows Go's documented cache
// locations instead (see GoCacheDefaults), with a warning; the run goes
// on either way.
const GoEnvPatience = 5 * time.Second

// goEnvPatience is GoEnvPatience; tests shorten it.
var goEnvPatience = GoEnvPatience

// DefaultGoEnv runs `go env -json GOCACHE GOMODCACHE GOTELEMETRYDIR` as the
// current user and returns what it prints. When go is not installed it
// returns no variables and no error. Use it as Options.GoEnv with
//
//	GoEnv: func() (map[string]string, error) { return allowlist.DefaultGoEnv(ctx) }
func DefaultGoEnv(ctx context.Context) (map[string]string, error) {
	return RunGoEnv(ctx, nil)
}

// RunGoEnv is DefaultGoEnv with a hook: prepare, if not nil, may change the
// command before it starts, for instance its environment or credentials,
// to see the caches of the user that runs the tests.
//
// go runs in / with GOTOOLCHAIN=local, whatever prepare sets: the cache
// locations do not depend on the Go release, and so neither a go.mod's
// toolchain line nor GOTOOLCHAIN makes it download a release first.
// RunGoEnv sets no deadline of its own; see GoEnvPatience.
func RunGoEnv(ctx context.Context, prepare func(*exec.Cmd)) (map[string]string, error) {
	args := append([]string{"env", "-json"}, goEnvVars...)
	cmd := exec.CommandContext(ctx, "go", args...)
	if errors.Is(cmd.Err, exec.ErrNotFound) {
		return nil, nil
	}
	cmd.Dir = "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if prepare != nil {
		prepare(cmd)
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, nil
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("go env: %w: %s", err, strings.Join(strings.Fields(msg), " "))
		}
		return nil, fmt.Errorf("go env: %w", err)
	}
	var env map[string]string
	if err := json.Unmarshal(out, &env); err != nil {
		return nil, fmt.Errorf("go env: reading its output: %w", err)
	}
	return env, nil
}

// GoCacheDefaults returns where Go keeps GOCACHE, GOMODCACHE and
// GOTELEMETRYDIR without asking go, as the go command documents it: the
// variable when it is set, else the value in the go env file ($GOENV, by
// default $XDG_CONFIG_HOME/go/env or ~/.config/go/env), else
// $XDG_CACHE_HOME/go-build or ~/.cache/go-build for GOCACHE, the first
// directory of GOPATH (~/go by default) plus /pkg/mod for GOMODCACHE, and
// $XDG_CONFIG_HOME/go/telemetry or ~/.config/go/telemetry for
// GOTELEMETRYDIR. getenv looks up the variables; home stands in for an
// unset $HOME. A value that cannot be found is left out.
func GoCacheDefaults(getenv func(string) string, home string) map[string]string {
	return goCacheDefaults(getenv, home, os.ReadFile)
}

func goCacheDefaults(getenv func(string) string, home string, readFile func(string) ([]byte, error)) map[string]string {
	if h := getenv("HOME"); filepath.IsAbs(h) {
		home = h
	}
	under := func(xdg, dflt string) string {
		if d := getenv(xdg); filepath.IsAbs(d) {
			return d
		}
		if filepath.IsAbs(home) {
			return filepath.Join(home, dflt)
		}
		return ""
	}
	cacheDir, configDir := under("XDG_CACHE_HOME", ".cache"), under("XDG_CONFIG_HOME", ".config")

	file := map[string]string{}
	envFile := getenv("GOENV")
	if envFile == "" && configDir != "" {
		envFile = filepath.Join(configDir, "go", "env")
	}
	if envFile != "off" && filepath.IsAbs(envFile) {
		if data, err := readFile(envFile); err == nil {
			for line := range strings.Lines(string(data)) {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
					file[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
			}
		}
	}
	value := func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return file[name]
	}

	env := map[string]string{}
	if v := value("GOCACHE"); v != "" {
		env["GOCACHE"] = v
	} else if cacheDir != "" {
		env["GOCACHE"] = filepath.Join(cacheDir, "go-build")
	}
	if v := value("GOMODCACHE"); v != "" {
		env["GOMODCACHE"] = v
	} else if gopath, _, _ := strings.Cut(value("GOPATH"), string(filepath.ListSeparator)); filepath.IsAbs(gopath) {
		env["GOMODCACHE"] = filepath.Join(gopath, "pkg", "mod")
	} else if filepath.IsAbs(home) {
		env["GOMODCACHE"] = filepath.Join(home, "go", "pkg", "mod")
	}
	if configDir != "" {
		env["GOTELEMETRYDIR"] = filepath.Join(configDir, "go", "telemetry")
	}
	return env
}

// MayRunGo reports whether COMMAND (argv) may run the go command, which
// decides whether `go env` is worth asking for the go-cache default. It
// says no only when sure enough: when COMMAND's program is a native
// executable that was not built by Go and is none of the programs that
// commonly run others. So it says yes for
//
//   - no COMMAND (--print-config), or a program it cannot find or read;
//   - go itself, gotip and the golang.org/dl wrappers (go1.N...);
//   - a program built by Go: a test binary, or a tool that runs go;
//   - a script (#!) of any kind, and a file that is not an ELF executable;
//   - shells, make and other build tools, interpreters, and programs that
//     run a command line they are given (env, xargs, timeout, sudo, ...),
//     by their name or the name of the file a link leads to.
//
// A program is looked up as exec does, in getenv("PATH") for a bare name,
// else relative to dir. When the answer is no, the default still allows
// Go's documented cache locations (GoCacheDefaults): a program that runs go
// after all writes there, unless the caches were moved in a way only
// `go env` knows.
func MayRunGo(argv []string, dir string, getenv func(string) string) bool {
	if len(argv) == 0 || argv[0] == "" {
		return true
	}
	prog := argv[0]
	if !strings.Contains(prog, "/") {
		if prog = lookPath(prog, getenv("PATH"), dir); prog == "" {
			return true
		}
	} else if !filepath.IsAbs(prog) {
		prog = filepath.Join(dir, prog)
	}
	names := []string{filepath.Base(prog)}
	if real, err := filepath.EvalSymlinks(prog); err == nil {
		names = append(names, filepath.Base(real))
	}
	for _, n := range names {
		if isGoName(n) || slices.Contains(commandRunners, versionless(n)) {
			return true
		}
	}
	f, err := os.Open(prog)
	if err != nil {
		return true
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return true
	}
	if string(magic[:]) != "\x7fELF" {
		return true // a script, or a format this does not know
	}
	_, err = buildinfo.Read(f)
	return err == nil
}

// commandRunners are programs that commonly run other programs, by name
// without a version suffix (python3.12 is python).
var commandRunners = []string{
	// shells
	"sh", "bash", "dash", "zsh", "ksh", "mksh", "yash", "fish", "csh", "tcsh", "busybox",
	// build tools
	"make", "gmake", "bmake", "ninja", "cmake", "ctest", "meson", "bazel", "buck2", "cargo",
	// interpreters
	"python", "pypy", "perl", "ruby", "node", "nodejs", "deno", "bun", "java", "php", "lua", "luajit",
	"tclsh", "Rscript", "awk", "gawk", "mawk",
	// programs that run a command line they are given
	"env", "xargs", "nice", "nohup", "timeout", "time", "sudo", "su", "doas", "setsid", "stdbuf",
	"taskset", "chrt", "ionice", "unshare", "nsenter", "chroot", "flock", "strace", "ltrace",
	"valgrind", "bwrap", "firejail", "systemd-run", "runuser", "setpriv", "prlimit", "script",
	"watch", "parallel", "entr", "writewatch",
}

// isGoName reports whether name is go's: go, gotip, or a golang.org/dl
// wrapper such as go1.24.3.
func isGoName(name string) bool {
	return name == "go" || name == "gotip" || strings.HasPrefix(name, "go1.") || name == "go1"
}

// versionless returns name without a trailing version: python3.12 and
// python3 become python, lua5.4 becomes lua.
func versionless(name string) string {
	return strings.TrimRight(name, "0123456789.-")
}

// lookPath finds name in the directories of path as exec does, relative
// ones taken from dir, and returns "" when it is not there.
func lookPath(name, path, dir string) string {
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
