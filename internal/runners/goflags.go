package runners

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/writewatch/writewatch/internal/launch"
)

// GoFlags is what PrepareEnv did to GOFLAGS, for the notes at the end.
type GoFlags struct {
	// Set reports that GOFLAGS=-count=1 was added to COMMAND's
	// environment.
	Set bool
	// User is the GOFLAGS COMMAND's environment had before.
	User string
}

// goCountNote says what GOFLAGS=-count=1 changed.
const goCountNote = "GOFLAGS=-count=1 was added to COMMAND's environment so that go test runs every package " +
	"instead of printing a cached result, which writewatch could not trace; go test prints timings where it would have printed \"(cached)\""

// goCachedNote says what was missed without it.
const goCachedNote = "go test ran without -count=1: a package whose result it printed from its cache ran nothing, " +
	"and writewatch could not trace it; set GOFLAGS=-count=1 to trace every package"

// taskRunners are programs that run go test for a Go project (in a Go
// module), by name.
var taskRunners = []string{"make", "gmake", "just", "task", "mage", "earthly"}

// goTestRunners run go test whatever the directory.
var goTestRunners = []string{"gotestsum", "richgo", "ginkgo", "gotest"}

// RunsGo reports whether COMMAND runs go test, as far as its command line
// and its directory tell: go itself; a go test runner (gotestsum, ...);
// a command line that says "go test" (sh -c 'go test ./...'); or make,
// just, task or mage in a Go module (go.mod or go.work in dir or above).
// GOFLAGS is set for those only.
func RunsGo(args []string, dir string) bool {
	if len(args) == 0 {
		return false
	}
	name := filepath.Base(args[0])
	switch {
	case isGoName(name), slices.Contains(goTestRunners, name):
		return true
	case slices.ContainsFunc(args[1:], func(a string) bool { return strings.Contains(a, "go test") }):
		return true
	case slices.Contains(taskRunners, name):
		return inGoModule(dir)
	}
	return false
}

// isGoName: go, or a go1.N.M toolchain wrapper.
func isGoName(name string) bool {
	return name == "go" || (strings.HasPrefix(name, "go1.") && strings.Trim(name[4:], "0123456789.rcbeta") == "")
}

// inGoModule reports whether dir or a directory above it holds go.mod or
// go.work.
func inGoModule(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		for _, f := range []string{"go.mod", "go.work"} {
			if _, err := os.Stat(filepath.Join(d, f)); err == nil {
				return true
			}
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// setGoFlags turns go test's result cache off for a COMMAND that runs go:
// -count=1 goes first in GOFLAGS, so that the user's flags and the
// command line win.
func setGoFlags(env, args []string, dir string) ([]string, GoFlags) {
	g := GoFlags{User: launch.Getenv(env, "GOFLAGS")}
	if !RunsGo(args, dir) {
		return env, g
	}
	g.Set = true
	return setEnv(env, "GOFLAGS", strings.TrimSpace("-count=1 "+g.User)), g
}

// Notes says what the run should know about go test's cache, given the
// command lines of the go test commands that ran: that GOFLAGS was set,
// when one of them would have printed a cached result without it; that a
// package may have gone untraced, when GOFLAGS was not set and one of
// them could have.
func (g GoFlags) Notes(goTests [][]string) []string {
	// The user's own GOFLAGS may keep results out of the cache already.
	for _, f := range strings.Fields(g.User) {
		if name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "="); slices.Contains(uncacheable, name) {
			return nil
		}
	}
	if !slices.ContainsFunc(goTests, cacheable) {
		return nil
	}
	if g.Set {
		return []string{goCountNote}
	}
	return []string{goCachedNote}
}

// GoTests picks the go test command lines out of a list of command lines.
func GoTests(cmdlines [][]string) [][]string {
	var out [][]string
	for _, c := range cmdlines {
		if len(c) > 1 && isGoName(filepath.Base(c[0])) && c[1] == "test" {
			out = append(out, c)
		}
	}
	return out
}

// uncacheable are go test's flags that keep its result out of the cache
// (see go help test: only -benchtime, -cpu, -list, -parallel, -run,
// -short, -skip, -timeout, -failfast, -fullpath and -v are cacheable;
// build flags such as -race or -tags are part of the binary instead).
var uncacheable = []string{
	"count", "bench", "benchmem", "blockprofile", "blockprofilerate", "coverprofile", "cpuprofile",
	"memprofile", "memprofilerate", "mutexprofile", "mutexprofilefraction", "outputdir", "trace",
	"fuzz", "fuzztime", "fuzzminimizetime", "shuffle",
}

// cacheable reports whether a go test command line could have printed a
// cached result: it lists packages (go test with none, in the current
// directory, never caches) and has no flag that keeps results out of
// the cache.
func cacheable(args []string) bool {
	pkgs := false
	for i := 2; i < len(args); i++ {
		a := args[i]
		if a == "-args" || a == "--args" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			pkgs = true
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if slices.Contains(uncacheable, name) {
			return false
		}
		// A flag with a separate value: skip the value.
		if !hasValue && takesValue(name) {
			i++
		}
	}
	return pkgs
}

// takesValue reports whether go test's flag name takes a value.
func takesValue(name string) bool {
	switch name {
	case "v", "short", "failfast", "fullpath", "json", "race", "msan", "asan", "cover", "a", "n", "x",
		"trimpath", "linkshared", "modcacherw", "work", "benchmem", "i", "c":
		return false
	}
	return true
}
