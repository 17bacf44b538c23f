package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/golden"
	"github.com/writewatch/writewatch/internal/outfile"
)

// The help as a user reads it: go test ./cmd/writewatch -update rewrites
// testdata/help.txt after a change, to be read in the diff.
func TestHelpGolden(t *testing.T) {
	golden.Check(t, "help.txt", []byte(helpText(new(Config).flagSet())))
}

// Every flag is in the help once, as typed (--json FILE), on a line of
// its own that fits 80 columns.
func TestHelpShowsEveryFlag(t *testing.T) {
	fs := new(Config).flagSet()
	seen := map[string]int{}
	for _, g := range helpGroups {
		for _, l := range g.lines {
			if l.flag != "" {
				if fs.Lookup(l.flag) == nil {
					t.Errorf("the help lists --%s, which is no flag", l.flag)
				}
				seen[l.flag]++
			}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if seen[f.Name] != 1 {
			t.Errorf("--%s is in the help %d times, want once", f.Name, seen[f.Name])
		}
		if !isBool(f) && argName(f) == "value" {
			t.Errorf("--%s: its usage names no value in backquotes (`FILE`)", f.Name)
		}
	})
	help := helpText(fs)
	for line := range strings.SplitSeq(help, "\n") {
		if len(line) > helpWidth {
			t.Errorf("line longer than %d columns: %q", helpWidth, line)
		}
	}
	for _, want := range []string{"\n  --json FILE ", "\n  --enforce ", "\n  --enforce=block ", "\n  --grace DURATION ", "\n  --metrics-label KEY=VALUE "} {
		if !strings.Contains(help, want) {
			t.Errorf("the help has no line starting %q", want[1:])
		}
	}
	if strings.Contains(help, "\n  -"+"json") || strings.Contains(help, " -enforce") {
		t.Error("the help shows a flag with one dash")
	}
}

// A file flag that took COMMAND's first word (--json go test ./..., the
// file name forgotten) is refused before anything runs: writewatch would
// run the rest, another command, and write over a file of that name.
func TestFileFlagGivenACommand(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mark := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "run-tests.sh")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755))
	for _, name := range []string{"config", "allow", "json", "junit", "suggest-config", "baseline", "metrics-textfile"} {
		takes := "a file name"
		if name == "allow" {
			takes = "a path or glob"
		}
		example := exampleFile(name)
		t.Run(name, func(t *testing.T) {
			flagName := "--" + name
			checkUsageError(t, []string{flagName, "env", "touch", mark},
				fmt.Sprintf(`%s takes %s; got "env", which is a command: write %s %s env touch %s, or put -- before COMMAND`,
					flagName, takes, flagName, example, mark))
			checkUsageError(t, []string{"--audit", flagName, "./run-tests.sh", "x"}, `got "./run-tests.sh", which is a command`)
			checkUsageError(t, []string{flagName, "--audit", "touch", mark},
				fmt.Sprintf(`%s takes %s; got "--audit", which is a flag: write %s %s --audit touch %s (./--audit for a file of that name)`,
					flagName, takes, flagName, example, mark))
			if _, err := os.Stat(mark); err == nil {
				t.Error("COMMAND ran")
			}
			if _, err := os.Stat(filepath.Join(dir, "env")); err == nil {
				t.Error("a file named env was written")
			}
		})
	}
	if data, _ := os.ReadFile(script); string(data) != "#!/bin/sh\n" {
		t.Errorf("the script now holds %q", data)
	}
}

// Output files that cannot be written say why, and what to do.
func TestOutputErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "ran")
	for _, name := range []string{"json", "junit", "suggest-config", "metrics-textfile"} {
		var stderr bytes.Buffer
		code := realMain([]string{"--" + name, dir, "--", "touch", mark}, &stderr)
		want := fmt.Sprintf("writewatch: --%s %s: is a directory; name a file, such as %s; see writewatch --help\n",
			name, dir, filepath.Join(dir, exampleFile(name)))
		if code != exitUsage || stderr.String() != want {
			t.Errorf("--%s DIR: exit code %d, stderr %q; want %d, %q", name, code, stderr.String(), exitUsage, want)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("COMMAND ran")
	}
	// A shared directory: refused when COMMAND's user is not root (under
	// sudo, or a setcap copy), which the integration tests run.
	err := outputError(output{name: "--json", file: "/tmp/r.json"}, fmt.Errorf("%w: /tmp ...", outfile.ErrSharedDir))
	if want := "--json /tmp/r.json: /tmp is not yours, yet you can write it, as others can: a test could plant a file or link in its place; write it in a directory you own, such as the project's"; err.Error() != want {
		t.Errorf("shared directory: %q, want %q", err, want)
	}
}
