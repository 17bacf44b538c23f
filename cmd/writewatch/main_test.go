package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/writewatch/writewatch/internal/launch"
	"github.com/writewatch/writewatch/internal/policy"
)

func TestMain(m *testing.M) {
	// realMain starts COMMAND through this binary under --enforce.
	if launch.IsTrampoline() {
		os.Exit(launch.Trampoline())
	}
	os.Exit(m.Run())
}

// Mistakes in the command line stop writewatch with exit code 2 and one
// clear line, before anything runs.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "no COMMAND given"},
		{"unknown flag", []string{"--frobnicate", "true"}, "unknown flag --frobnicate"},
		{"unknown flag, one dash", []string{"-frobnicate", "true"}, "unknown flag --frobnicate"},
		{"three dashes", []string{"---audit", "true"}, "---audit is no flag"},
		{"no value", []string{"--junit"}, "--junit needs a value: --junit FILE"},
		{"boolean with a value", []string{"--audit=yes", "true"}, "--audit=yes: want --audit, --audit=true or --audit=false"},
		{"enforce what", []string{"--enforce=maybe", "true"}, "--enforce=maybe: want --enforce (refuse and kill the writer) or --enforce=block (refuse only)"},
		{"enforce kill", []string{"--enforce=kill", "true"}, "the kill tier is --enforce-with kill"},
		{"enforce block, no =", []string{"--enforce", "block", "go", "test"}, "--enforce takes block after =: write --enforce=block"},
		{"missing config", []string{"--config", "nope.yaml", "true"}, "--config nope.yaml: no such file or directory"},
		{"ring buffer not a number", []string{"--ringbuf-mib", "lots", "true"}, "--ringbuf-mib lots: want a whole number"},
		{"enforce with what", []string{"--enforce", "--enforce-with", "magic", "true"}, "want lsm, landlock, kill or auto"},
		{"enforce and audit", []string{"--enforce", "--audit", "true"}, "exclude each other"},
		{"accept incomplete with audit", []string{"--accept-incomplete", "--audit", "true"}, "--accept-incomplete means nothing with --audit"},
		{"bad ring buffer", []string{"--ringbuf-mib", "3", "true"}, "power of two"},
		{"metrics required without a push", []string{"--metrics-required", "true"}, "--metrics-required needs --pushgateway"},
		{"label without a value", []string{"--metrics-label", "repo", "true"}, `"repo": want key=value`},
		{"reserved label", []string{"--metrics-label", "job=ci", "true"}, `label name "job" is reserved`},
		{"label of our own", []string{"--metrics-label", "op=x", "true"}, "taken by writewatch's own metrics"},
		{"label twice", []string{"--metrics-label", "a=1", "--metrics-label", "a=2", "true"}, `label "a" given twice`},
		{"push URL not http", []string{"--pushgateway", "ftp://gw:9091", "true"}, "--pushgateway ftp://gw:9091: want an http:// or https:// URL"},
		{"push URL without a scheme", []string{"--pushgateway", "127.0.0.1:9091", "true"}, "--pushgateway 127.0.0.1:9091: want an http:// or https:// URL"},
		{"push URL, host without a scheme", []string{"--pushgateway", "gw:9091", "true"}, "want an http:// or https:// URL"},
		{"push URL without a host", []string{"--pushgateway", "http://", "true"}, "--pushgateway http://: no host"},
		{"push URL with a port only", []string{"--pushgateway", "http://:9091", "true"}, "no host"},
		{"push URL with a query", []string{"--pushgateway", "http://gw:9091/?x=1", "true"}, "want no query"},
		{"negative grace", []string{"--grace", "-1s", "true"}, "--grace -1s: must be 0 or more"},
		{"grace without a unit", []string{"--grace", "5", "true"}, "--grace 5: want a duration such as 500ms or 2s (5s?)"},
		{"grace of -1", []string{"--grace", "-1", "true"}, "--grace -1: want a duration such as 500ms or 2s"},
		{"metrics address without a port", []string{"--metrics-addr", "localhost", "true"}, "--metrics-addr localhost: want host:port"},
		{"label name with a dash", []string{"--metrics-label", "a-b=1", "--metrics-textfile", "m.prom", "true"}, `label name "a-b": want letters, digits and underscores`},
		{"label name with a digit first", []string{"--metrics-label", "1a=1", "--metrics-textfile", "m.prom", "true"}, `label name "1a"`},
		{"label name reserved by Prometheus", []string{"--metrics-label", "__name__=x", "--metrics-textfile", "m.prom", "true"}, "names starting with __ are reserved"},
		{"empty label value", []string{"--metrics-label", "repo=", "--metrics-textfile", "m.prom", "true"}, "--metrics-label repo=: an empty value is no label to Prometheus"},
		{"label value not UTF-8", []string{"--metrics-label", "repo=\xff", "--metrics-textfile", "m.prom", "true"}, "--metrics-label repo: the value is not valid UTF-8"},
		{"push URL with the job path", []string{"--pushgateway", "http://gw:9091/metrics/job/x", "true"}, "without /metrics/job"},
		{"two tasks", []string{"--doctor", "--version"}, "--doctor and --version exclude each other"},
		{"a run's flag with --doctor", []string{"--doctor", "--json", "r.json"}, "--json means nothing with --doctor"},
		{"a run's flag with --print-config", []string{"--print-config", "--audit"}, "--audit means nothing with --print-config"},
		{"--allow with --version", []string{"--version", "--allow", "x"}, "--allow means nothing with --version"},
		{"COMMAND with --version", []string{"--version", "true"}, `--version runs no COMMAND ("true")`},
		{"COMMAND with --print-config", []string{"--print-config", "--", "go", "test"}, `--print-config runs no COMMAND ("go")`},
		{"tier without --enforce", []string{"--enforce-with", "lsm", "true"}, "--enforce-with lsm needs --enforce"},
		{"auto without --enforce", []string{"--enforce-with", "auto", "true"}, "--enforce-with auto needs --enforce"},
		{"block with the kill tier", []string{"--enforce=block", "--enforce-with", "kill", "true"}, "the kill tier cannot refuse a write"},
		{"labels without metrics", []string{"--metrics-label", "a=1", "true"}, "--metrics-label needs --metrics-addr, --pushgateway or --metrics-textfile"},
		{"metrics required, empty push URL", []string{"--pushgateway", "", "--metrics-required", "true"}, `--metrics-required needs a URL to push to: --pushgateway is ""`},
		{"empty push URL, label without a value", []string{"--pushgateway", "", "--metrics-label", "a=", "true"}, "--metrics-label a=: an empty value"},
		{"push URL of a space", []string{"--pushgateway", " ", "true"}, "want an http:// or https:// URL"},
		{"push URL, scheme mistyped", []string{"--pushgateway", "htp://gw:9091", "true"}, "--pushgateway htp://gw:9091: want an http:// or https:// URL"},
		{"two reports in one file", []string{"--json", "r.out", "--junit", "./r.out", "true"}, "--json and --junit name the same file"},
		{"metrics over a report", []string{"--junit", "r.out", "--metrics-textfile", "r.out", "true"}, "--junit and --metrics-textfile name the same file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkUsageError(t, tc.args, tc.want)
		})
	}
}

// checkUsageError runs writewatch with args and checks that it exits with
// 2 after one line that says want and points to --help.
func checkUsageError(t *testing.T, args []string, want string) {
	t.Helper()
	var stderr bytes.Buffer
	if code := realMain(args, &stderr); code != exitUsage {
		t.Errorf("%q: exit code %d, want %d", args, code, exitUsage)
	}
	out := stderr.String()
	if !strings.Contains(out, want) {
		t.Errorf("%q: stderr %q does not say %q", args, out, want)
	}
	if !strings.HasPrefix(out, "writewatch: ") || !strings.HasSuffix(out, "; see writewatch --help\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("%q: stderr %q: want one line, \"writewatch: ...; see writewatch --help\"", args, out)
	}
}

func TestBrokenConfigIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ww.yaml")
	os.WriteFile(cfg, []byte("allow:\n  - ok\nbogus: 1\n"), 0o644)
	mark := filepath.Join(dir, "ran")
	var stderr bytes.Buffer
	code := realMain([]string{"--config", cfg, "--", "touch", mark}, &stderr)
	if code != exitUsage {
		t.Errorf("exit code %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr.String(), cfg+":3:") {
		t.Errorf("stderr %q should name %s:3", stderr.String(), cfg)
	}
	// The line says where to look: the config, not --help.
	if strings.Contains(stderr.String(), "--help") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("stderr %q: want one line naming the config's line only", stderr.String())
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("COMMAND ran")
	}
}

// --help lists every exit code, on stdout, and exits 0.
func TestHelpListsExitCodes(t *testing.T) {
	if code := realMain([]string{"--help"}, io.Discard); code != 0 {
		t.Errorf("--help exit code %d", code)
	}
	help := helpText(new(Config).flagSet())
	for _, code := range []int{exitUsage, exitInternal, exitViolations, exitCannot, exitIncomplete, exitNotExec, exitNotFound} {
		if !strings.Contains(help, fmt.Sprintf("\n  %-3d ", code)) {
			t.Errorf("--help does not explain exit code %d", code)
		}
	}
	// Every output whose failure exits 70 is named there.
	seventy := help[strings.Index(help, "\n  70 "):strings.Index(help, "\n  86 ")]
	for _, out := range new(Config).outputs(func(string) string { return "" }) {
		if out.name != "" && out.fail == failRun && !strings.Contains(seventy, out.name) {
			t.Errorf("the help's exit code 70 does not name %s", out.name)
		}
	}
	for _, name := range []string{"--json", "--junit", "--suggest-config", "--metrics-textfile", "--pushgateway"} {
		if !strings.Contains(seventy, name) {
			t.Errorf("the help's exit code 70 does not name %s:%s", name, seventy)
		}
	}
}

// The metrics' textfile directory and listening address are checked
// before COMMAND runs.
func TestMetricsOutputsCheckedBeforeRun(t *testing.T) {
	dir := t.TempDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"textfile in a missing directory", []string{"--metrics-textfile", filepath.Join(dir, "missing", "ww.prom")}, "--metrics-textfile " + filepath.Join(dir, "missing", "ww.prom") + ": directory " + filepath.Join(dir, "missing") + ": no such file"},
		{"textfile is a directory", []string{"--metrics-textfile", dir}, "is a directory"},
		{"address in use", []string{"--metrics-addr", busy.Addr().String()}, "--metrics-addr: listen tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := filepath.Join(dir, "ran")
			var stderr bytes.Buffer
			code := realMain(append(tc.args, "--", "touch", mark), &stderr)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d (%s)", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.want)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Error("COMMAND ran")
			}
		})
	}
}

func TestJSONPathCheckedBeforeRun(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "ran")
	config := filepath.Join(dir, "config.toml")
	must(t, os.WriteFile(config, []byte("precious\n"), 0o644))
	link := filepath.Join(dir, "ww.json")
	must(t, os.Symlink("config.toml", link))
	for _, path := range []string{filepath.Join(dir, "missing", "r.json"), link} {
		var stderr bytes.Buffer
		code := realMain([]string{"--json", path, "--", "touch", mark}, &stderr)
		if code != exitUsage || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("--json %s: exit code %d, want %d and one line (%s)", path, code, exitUsage, stderr.String())
		}
		if _, err := os.Stat(mark); err == nil {
			t.Error("COMMAND ran")
		}
	}
	if data, _ := os.ReadFile(config); string(data) != "precious\n" {
		t.Errorf("the link's target now holds %q", data)
	}
}

// Combinations that mean something are not refused.
func TestMeaningfulFlags(t *testing.T) {
	config := filepath.Join(t.TempDir(), "c.yaml")
	must(t, os.WriteFile(config, []byte("allow: [x]\n"), 0o644))
	for _, args := range [][]string{
		{"--print-config", "--enforce", "--enforce-with", "kill", "--allow", "x", "--config", config, "--as-root", "--ignore-metadata"},
		{"--enforce=true", "true"},
		{"--enforce=false", "--audit", "true"},
		{"-audit", "-json=r.json", "true"},
		{"--json", "env", "--", "touch", "x"},
		{"--allow", "env", "--", "true"},
		{"--print-config", "--allow", "env"},
		{"--print-config", "--enforce=block", "--enforce-with", "landlock"},
		{"--kill-survivors", "--grace", "0", "true"},
		{"--enforce", "--enforce-with", "lsm", "true"},
		{"--enforce=block", "--enforce-with", "auto", "true"},
		{"--metrics-label", "a=1", "--metrics-textfile", "m.prom", "true"},
		{"--metrics-label", "a=1", "--metrics-addr", "127.0.0.1:0", "true"},
		{"--pushgateway", "https://gw.example:9091", "--metrics-required", "true"},
		{"--pushgateway", "", "--metrics-label", "repo=a/b", "--metrics-label", "ci_job=test", "true"},
		{"--pushgateway=", "true"},
		{"--metrics-textfile", "", "--metrics-addr", "", "--metrics-label", "a=1", "true"},
		{"--json", "r.json", "--junit", "r.xml", "--", "go", "test", "--json"},
		{"--print-config=false", "--doctor=false", "true"},
		{"--doctor"},
		{"--version"},
	} {
		c, err := parseConfig(args)
		if err == nil {
			err = c.check()
		}
		if err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// A metrics output given "" (a CI variable left unset) is off: no
// metrics are made, and the run says so in a line.
func TestEmptyMetricsOutputIsOff(t *testing.T) {
	c, err := parseConfig([]string{"--pushgateway", "", "--metrics-label", "repo=a/b", "--", "true"})
	if err == nil {
		err = c.check()
	}
	if err != nil {
		t.Fatal(err)
	}
	if c.wantsMetrics() {
		t.Error(`--pushgateway "" asks for metrics`)
	}
	if got, want := c.emptyMetricsFlags(), []string{"--pushgateway is empty: the metrics are not pushed"}; !slices.Equal(got, want) {
		t.Errorf("notes %q, want %q", got, want)
	}
	c, _ = parseConfig([]string{"--pushgateway", "http://gw:9091", "--", "true"})
	if notes := c.emptyMetricsFlags(); len(notes) != 0 {
		t.Errorf("notes %q for a URL", notes)
	}
}

// Asking for enforcement the kernel cannot give stops writewatch with
// "cannot trace here" before COMMAND runs.
func TestEnforceTierUnavailable(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "ran")
	var cases [][]string
	s := policy.Probe()
	if s.BPFLSMErr != nil {
		cases = append(cases, []string{"--enforce", "--enforce-with", "lsm"})
	}
	if s.LandlockErr != nil || s.LandlockABI < policy.MinLandlockABI {
		cases = append(cases, []string{"--enforce", "--enforce-with", "landlock"})
	}
	if len(cases) == 0 {
		t.Skip("this kernel offers every tier")
	}
	for _, flags := range cases {
		var stderr bytes.Buffer
		code := realMain(append(flags, "--", "touch", mark), &stderr)
		if code != exitCannot || !strings.Contains(stderr.String(), "cannot trace here") {
			t.Errorf("%v: exit code %d, want %d\n%s", flags, code, exitCannot, stderr.String())
		}
		if _, err := os.Stat(mark); err == nil {
			t.Errorf("%v: COMMAND ran", flags)
		}
	}
}

func TestMetadataEnforcementSaysWhatHappens(t *testing.T) {
	for _, tc := range []struct {
		ignored, kill bool
		guardErr      error
		want, not     string
	}{
		{false, true, nil, "refused outside the grants by the metadata guard (EPERM) before they run, and the writer killed", ""},
		{false, false, nil, "refused outside the grants", "killed"},
		{false, true, errors.New("no seccomp"), "the change may take effect (no seccomp)", "refused"},
		{true, true, nil, "not watched", "refused"},
	} {
		got := metadataEnforcement(tc.ignored, tc.kill, tc.guardErr)
		if !strings.Contains(got, tc.want) || (tc.not != "" && strings.Contains(got, tc.not)) {
			t.Errorf("metadataEnforcement(%v, %v, %v) = %q, want %q without %q", tc.ignored, tc.kill, tc.guardErr, got, tc.want, tc.not)
		}
	}
}
