package render

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/golden"
	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/report"
)

func TestWriteTextGolden(t *testing.T) {
	for _, c := range cases {
		for _, color := range []bool{false, true} {
			name := c.Name + ".txt"
			if color {
				name = c.Name + ".color.txt"
			}
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := WriteText(&buf, c.Report(), TextOptions{Color: color}); err != nil {
					t.Fatal(err)
				}
				has := bytes.Contains(buf.Bytes(), []byte("\x1b["))
				if !color && has {
					t.Errorf("ANSI escapes without Color")
				}
				if color && !has && c.Name != "empty" {
					t.Errorf("no ANSI escapes with Color")
				}
				golden.Check(t, name, buf.Bytes())
			})
		}
	}
}

func writeText(t *testing.T, r *report.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteText(&buf, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestTextHeader(t *testing.T) {
	if got, want := firstLine(writeText(t, emptyReport())),
		"writewatch: no writes outside the allowlist (1234 write events, 17 processes)"; got != want {
		t.Errorf("header = %q, want %q", got, want)
	}
	if got, want := firstLine(writeText(t, richReport())),
		"writewatch: 8 writes outside the allowlist (11 events) by `make test`"; got != want {
		t.Errorf("header = %q, want %q", got, want)
	}
	r := survivorsReport()
	r.Events, r.Processes = 1, 1
	r.Violations = nil
	if got, want := firstLine(writeText(t, r)),
		"writewatch: no writes outside the allowlist (1 write event, 1 process)"; got != want {
		t.Errorf("header = %q, want %q", got, want)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestTextLineWidth(t *testing.T) {
	r := richReport()
	r.Command = []string{"bash", "-c", strings.Repeat("go test -count=1 ./... && ", 20)}
	out := writeText(t, r)
	for line := range strings.Lines(out) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "/") || strings.HasPrefix(line, `"`) || strings.HasPrefix(line, "  - ") {
			continue // paths and advice are never cut
		}
		if n := utf8.RuneCountInString(line); n > lineWidth {
			t.Errorf("line of %d characters: %q", n, line)
		}
	}
	if !strings.Contains(out, "by `bash -c 'go test -count=1") || !strings.Contains(out, "…`") {
		t.Errorf("long command not shortened in the header:\n%s", firstLine(out))
	}
}

func TestTextEscapesPaths(t *testing.T) {
	out := writeText(t, richReport())
	want := `"/home/dev/proj/out/report\nfinal\xff.txt" (requested as "out/report\nfinal\xff.txt")`
	if !strings.Contains(out, want+"\n") {
		t.Errorf("escaped path line %s missing in:\n%s", want, out)
	}
	if !utf8.ValidString(out) {
		t.Errorf("output is not valid UTF-8")
	}
	if strings.Contains(out, "report\nfinal") {
		t.Errorf("raw newline of a path in the output")
	}
}

func TestShortCmdline(t *testing.T) {
	tests := []struct {
		args   []string
		budget int
		want   string
	}{
		{[]string{"go", "test", "./..."}, 40, "go test ./..."},
		{[]string{"sh", "-c", "echo hi > out"}, 40, "sh -c 'echo hi > out'"},
		{[]string{"printf", "it's"}, 40, `printf 'it'\''s'`},
		{[]string{"echo", ""}, 40, "echo ''"},
		{[]string{"echo", "a\nb", "\xff"}, 40, `echo "a\nb" "\xff"`},
		{[]string{"touch", "café.txt"}, 40, "touch café.txt"},
		{[]string{"aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc", "dddddddddd", "eeeeeeeeee"}, 30, "aaaaaaaaaa bbbbbbbb… (+3 args)"},
		{[]string{"aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc"}, 24, "aaaaaaaaaa bbbbbbbbbb c…"},
		{[]string{"aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc", "dd"}, 24, "aaaaaaaaaa bb… (+2 args)"},
		{[]string{strings.Repeat("x", 50)}, 24, strings.Repeat("x", 23) + "…"},
	}
	for _, tt := range tests {
		got := shortCmdline(tt.args, tt.budget)
		if got != tt.want {
			t.Errorf("shortCmdline(%q, %d) = %q, want %q", tt.args, tt.budget, got, tt.want)
		}
		if n := utf8.RuneCountInString(got); n > max(tt.budget, minBudget) {
			t.Errorf("shortCmdline(%q, %d) is %d wide", tt.args, tt.budget, n)
		}
	}
}

func TestYAMLScalar(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"/home/dev/.cache/x", "/home/dev/.cache/x", true},
		{"testdata/out.txt", "testdata/out.txt", true},
		{"out.txt", "out.txt", true},
		{"true", `"true"`, true},
		{"Null", `"Null"`, true},
		{"1.5", `"1.5"`, true},
		{".inf", `".inf"`, true},
		{"~", `"~"`, true},
		{"-x", `"-x"`, true},
		{"@x", `"@x"`, true},
		{"a b/c: d", `"a b/c: d"`, true},
		{"/tmp/#1", `"/tmp/#1"`, true},
		{"/tmp/a\"b\\c\nd\x01", `"/tmp/a\"b\\c\nd\x01"`, true},
		{"/tmp/\xff", "", false},
	}
	for _, tt := range tests {
		got, ok := yamlScalar(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("yamlScalar(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTextHowToFix(t *testing.T) {
	out := writeText(t, richReport())
	for _, want := range []string{
		"add them to the allow list in .writewatch.yaml:",
		"\n          - ~/.cache/tool/state.json\n", // ~ for home
		"\n          - testdata/golden.txt*\n",     // two names, one glob
		"\n          # \"out/report\\nfinal\\xff.txt\" is not valid UTF-8",
		"t.TempDir()",
		"tmp_path",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "- /etc/hosts") {
		t.Errorf("denied path offered as an allow entry")
	}
	if strings.Contains(out, "- build/deep") {
		t.Errorf("truncated path offered as an allow entry")
	}

	// The fix in the test comes first, with where the test is; failed
	// writes get no allow entry.
	r := testsReport()
	r.Violations = append(r.Violations, r.Violations[0])
	r.Violations[len(r.Violations)-1].Path = "/home/u/.config/app/locked"
	r.Violations[len(r.Violations)-1].Errno = "EACCES"
	r.Violations[len(r.Violations)-1].Severity = report.SeverityAttempt
	out = writeText(t, r)
	for _, want := range []string{
		"  - Make the tests write under a temporary directory:\n" +
			`      /src/app/app_test.go:12: TestSaveConfig writes ~/.config/app/config.toml: t.Setenv("HOME", t.TempDir())` + "\n",
		"      test_app.py::test_db writes /src/py/fixture.db: write under tmp_path\n",
		"  - Or, if these writes are expected, add them to the allow list",
		"\n          - ~/.config/app/config.toml\n",
		"\n          - /src/app/*.txt\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "- ~/.config/app/locked") {
		t.Errorf("a failed write offered as an allow entry:\n%s", out)
	}
	if strings.Count(out, "How to fix") != 1 {
		t.Errorf("want exactly one How to fix block")
	}

	out = writeText(t, survivorsReport())
	if want := "create .writewatch.yaml in /home/dev/proj with:"; !strings.Contains(out, want) {
		t.Errorf("%q missing in:\n%s", want, out)
	}
	if !strings.Contains(out, "          - server.log\n") {
		t.Errorf("path not relative to the work dir:\n%s", out)
	}

	if out := writeText(t, lostReport()); strings.Contains(out, "How to fix") {
		t.Errorf("How to fix block without violations:\n%s", out)
	}

	// A suggested entry names its path exactly: pattern characters and
	// '$' escaped, a leading '~' kept from expanding.
	r = survivorsReport()
	r.Violations[0].Path = "/home/dev/proj/b[1]$x.log"
	r.Violations = append(r.Violations, r.Violations[0])
	r.Violations[1].Path = "/home/dev/proj/~backup"
	out = writeText(t, r)
	for _, want := range []string{"          - \"b\\\\[1]\\\\$x.log\"\n", "          - ./~backup\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}
}

func TestTextLostNeverOmitted(t *testing.T) {
	r := lostReport()
	r.Lost = nil
	out := writeText(t, r)
	if !strings.Contains(out, "writewatch: warning: 37 events lost; ") {
		t.Errorf("lost warning missing:\n%s", out)
	}
	r = richReport()
	r.LostEvents = 1
	r.Lost = map[string]uint64{report.LostProcMapFull: 1}
	out = writeText(t, r)
	if !strings.Contains(out, "writewatch: warning: 1 event lost (proc_map_full: 1); ") {
		t.Errorf("lost warning missing:\n%s", out)
	}
}

func TestTextLongChain(t *testing.T) {
	r := emptyReport()
	var chain []report.Proc
	for i := range 12 {
		chain = append(chain, report.Proc{PID: 100 - i, Comm: "sh", Cmdline: []string{"sh", "-c", "next"}})
	}
	chain[11].Comm, chain[11].Cmdline = "go", nil
	r.Violations = []report.Violation{{Op: "unlink", Path: "/x", PID: 101, Comm: "rm", Chain: chain, Count: 1}}
	out := writeText(t, r)
	if got := strings.Count(out, "    ← "); got != maxChain {
		t.Errorf("%d chain lines, want %d:\n%s", got, maxChain, out)
	}
	for _, want := range []string{"  by 101 rm\n", "    ← … 5 more processes\n", "    ← 89 [go]\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing in:\n%s", want, out)
		}
	}
}

// Every file format (Formats) of every case, against CASE.EXT: a new
// format's golden files come from here.
func TestFormatsGolden(t *testing.T) {
	for _, f := range Formats() {
		for _, c := range cases {
			t.Run(f.Name+"/"+c.Name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := f.Write(&buf, c.Report()); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, c.Name+"."+f.Ext, buf.Bytes())
			})
		}
	}
}

func TestWriteGitHubGolden(t *testing.T) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteGitHubAnnotations(&buf, c.Report(), "/src"); err != nil {
				t.Fatal(err)
			}
			if err := WriteGitHubSummary(&buf, c.Report()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, c.Name+".github.txt", buf.Bytes())
		})
	}
}

// A count of attempts reads "2 attempts", one "1 attempt"; the other
// severities are adjectives and stay as they are.
func TestSeverityCounts(t *testing.T) {
	r := emptyReport()
	r.Violations = []report.Violation{
		{Op: "mkdir", Path: "/a", Errno: "EEXIST", Severity: report.SeverityAttempt},
		{Op: "mkdir", Path: "/b", Errno: "EACCES", Severity: report.SeverityAttempt},
		{Op: "mkdir", Path: "/c", Severity: report.SeverityTransient},
	}
	if out := writeText(t, r); !strings.Contains(out, "1 transient (gone at the end), 2 attempts (changed nothing)") {
		t.Errorf("summary:\n%s", out)
	}
	r.Violations = r.Violations[1:]
	if out := writeText(t, r); !strings.Contains(out, "1 transient (gone at the end), 1 attempt (changed nothing)") {
		t.Errorf("summary:\n%s", out)
	}
}

// A failed call's annotation says it failed, and that it wrote nothing.
func TestAnnotationOfAFailedCall(t *testing.T) {
	r := emptyReport()
	r.Violations = []report.Violation{
		{Op: "mkdir", Path: "/home/u/.config", Errno: "EEXIST", Severity: report.SeverityAttempt, Comm: "pkg.test"},
		{Op: "mkdir", Path: "/home/u/.cache", Errno: "EACCES", Severity: report.SeverityAttempt, Comm: "pkg.test",
			Who: report.Who{Test: "TestSave", Package: "example.com/app"}},
	}
	var buf bytes.Buffer
	if err := WriteGitHubAnnotations(&buf, r, ""); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for i, want := range []string{
		"::tried to write /home/u/.config (mkdir, failed: EEXIST) via pkg.test",
		"tried to write /home/u/.cache (mkdir, failed: EACCES) via pkg.test",
	} {
		if i >= len(lines) || !strings.HasSuffix(lines[i], want) || strings.Contains(lines[i], "wrote") {
			t.Errorf("annotation %d: want one ending %q in\n%s", i, want, buf.String())
		}
	}
}

// Every role a path of the table of operations has is named by the
// summary, or left unsaid on purpose (a symlink's new name): never the
// fallback for a role no operation has.
func TestRoleText(t *testing.T) {
	for _, o := range ops.All() {
		for _, p := range o.Paths() {
			if p.Role == "" {
				continue
			}
			v := report.Violation{Op: o.String(), Role: p.Role}
			if got := roleText(&v); strings.HasPrefix(got, "role ") {
				t.Errorf("%v, role %s: %q: roleText has no words for it", o, p.Role, got)
			}
		}
	}
	if got := roleText(&report.Violation{Op: "unlink", Role: "x"}); got != "role x" {
		t.Errorf("an unknown role: %q", got)
	}
}
