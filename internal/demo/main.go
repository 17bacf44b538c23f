// Command demo checks what `make demo` got: writewatch, run on the sample
// suite in testdata/sample, must exit 86 and report exactly the writes
// that suite makes outside its allowlist, each with the test that made
// it: a stray file in the sample's root, and a config written into a
// fake home beside it (testdata/fakehome). Anything else, missing or
// extra, fails the demo with the reason.
//
// Usage, from the repository's root: go run ./internal/demo REPORT.json EXIT_CODE
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/report"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/demo REPORT.json EXIT_CODE")
		os.Exit(2)
	}
	if err := check(os.Stdout, os.Args[1], os.Args[2]); err != nil {
		fmt.Printf("make demo: FAILED: %v\n", err)
		os.Exit(1)
	}
}

// finding is one expected violation.
type finding struct{ op, path, test string }

func (f finding) String() string { return fmt.Sprintf("%-5s %s (%s)", f.op, f.path, f.test) }

// expected lists what the sample suite writes outside its allowlist,
// under root, the repository.
func expected(root string) []finding {
	home := filepath.Join(root, "testdata/fakehome")
	const stray, config = "TestWritesStrayFileInRoot", "TestSaveConfigToUserDir"
	return []finding{
		{ops.Open.String(), filepath.Join(root, "testdata/sample/debug-output.txt"), stray},
		{ops.Mkdir.String(), home, config},
		{ops.Mkdir.String(), filepath.Join(home, ".config"), config},
		{ops.Mkdir.String(), filepath.Join(home, ".config/sample"), config},
		{ops.Open.String(), filepath.Join(home, ".config/sample/config.toml"), config},
	}
}

// exitMeaning explains writewatch's exit codes other than 86.
var exitMeaning = map[int]string{
	0:   "it found no write outside the allowlist",
	2:   "a usage or configuration error",
	70:  "it failed while the suite ran",
	87:  "it cannot trace here; as root, or with sudo: sudo make demo",
	126: "the go command is not executable",
	127: "the go command was not found; pass it as GO=/path/to/go",
}

func check(w io.Writer, reportPath, exitArg string) error {
	if err := checkExit(exitArg); err != nil {
		return err
	}
	rep, err := readReport(reportPath)
	if err != nil {
		return err
	}
	if rep.LostEvents > 0 {
		return fmt.Errorf("the kernel lost %d events", rep.LostEvents)
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := filepath.EvalSymlinks(wd)
	if err != nil {
		return err
	}
	want := expected(root)
	if err := compare(want, rep); err != nil {
		return err
	}
	fmt.Fprintln(w, "make demo: as expected, writewatch exited with 86 and reported the sample suite's stray file and the config it wrote into a fake home, each with its test:")
	for _, f := range want {
		rel, _ := filepath.Rel(root, f.path)
		fmt.Fprintf(w, "  %-5s %s (%s)\n", f.op, rel, f.test)
	}
	return nil
}

// checkExit checks that writewatch exited with 86, or says what its exit
// code means.
func checkExit(exitArg string) error {
	code, err := strconv.Atoi(exitArg)
	if err != nil {
		return fmt.Errorf("exit code %q: %w", exitArg, err)
	}
	if code != 86 {
		why := exitMeaning[code]
		if why == "" {
			why = "see its message above"
		}
		return fmt.Errorf("writewatch exited with %d, not 86: %s", code, why)
	}
	return nil
}

// readReport reads the JSON report.
func readReport(path string) (*report.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the JSON report: %w", err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("parse the JSON report %s: %w", path, err)
	}
	return &rep, nil
}

// compare finds the findings of want the report lacks, those it has
// beyond them, and the writes it did not list.
func compare(want []finding, rep *report.Report) error {
	var got []finding
	for _, v := range rep.Violations {
		got = append(got, finding{v.Op, v.Path, v.Test})
	}
	missing, extra := lacking(want, got), lacking(got, want)
	if len(missing) == 0 && len(extra) == 0 && rep.UnlistedViolations == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("the report differs from what the sample suite does")
	for _, m := range missing {
		b.WriteString("\n  missing:    " + m)
	}
	for _, e := range extra {
		b.WriteString("\n  unexpected: " + e)
	}
	if rep.UnlistedViolations > 0 {
		fmt.Fprintf(&b, "\n  and %d writes not listed", rep.UnlistedViolations)
	}
	return fmt.Errorf("%s", b.String())
}

// lacking lists the findings of a that b lacks.
func lacking(a, b []finding) []string {
	var out []string
	for _, f := range a {
		if !slices.Contains(b, f) {
			out = append(out, f.String())
		}
	}
	return out
}
