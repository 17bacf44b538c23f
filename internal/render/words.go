package render

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/ops"
	"github.com/writewatch/writewatch/report"
)

// How every format (text, JUnit, GitHub annotations, the fix lists)
// spells a report's things: a path, a process, a writer, a role, a
// severity, a count, a shell or YAML word. Kept apart from the text
// report so that the formats share one spelling.

// leftoverText is what severityLabel adds for a write to what the
// baseline run left behind.
const leftoverText = ", the baseline run's leftover"

// severityLabel is v's severity as the reports name it: "left-behind,
// the baseline run's leftover" for a write to a file the --baseline run
// left there (Violation.BaselineLeftover).
func severityLabel(v *report.Violation) string {
	if v.BaselineLeftover {
		return v.Severity + leftoverText
	}
	return v.Severity
}

// severityWord is severity s as n writes of it are counted: "2
// attempts"; the others read as adjectives ("2 transient", "2
// left-behind") and stay as they are.
func severityWord(n int, s string) string {
	if s == report.SeverityAttempt && n != 1 {
		return "attempts"
	}
	return s
}

// partlyFailed says how many calls of v failed, and with what, when some
// did and others did not: "1 failed: ENOTEMPTY"; show shows the error's
// name.
func partlyFailed(v *report.Violation, show func(string) string) string {
	return strconv.Itoa(v.FailedCalls()) + " failed: " + show(v.Errno)
}

// identity shows a string as it is.
func identity(s string) string { return s }

// failedText is what v's calls that failed add to the operation, for
// one line: ", failed: E" when every one did, ", 1 of 2 failed: E" when
// some did; show shows the error's name.
func failedText(v *report.Violation, show func(string) string) string {
	switch {
	case v.AllFailed():
		return ", failed: " + show(v.Errno)
	case v.PartlyFailed():
		return ", " + strconv.Itoa(v.FailedCalls()) + " of " + strconv.Itoa(v.Count) + " failed: " + show(v.Errno)
	}
	return ""
}

// roleText names the role of the path when it tells something: always for
// rename, and for any role other than the usual "new" of link and symlink.
func roleText(v *report.Violation) string {
	op, _ := ops.ByName(v.Op)
	switch {
	case v.Role == "":
		return ""
	case op == ops.Rename && (v.Role == report.RoleOld || v.Role == report.RoleNew):
		return v.Role + " path"
	case op == ops.Link && v.Role == report.RoleOld:
		return "the file linked"
	case op == ops.Link && v.Role == report.RoleNew:
		return "new name"
	case op == ops.Symlink && v.Role == report.RoleNew:
		return ""
	default:
		return "role " + displayText(v.Role)
	}
}

// procName renders "PREFIX PID comm".
func procName(prefix string, pid int, comm string) string {
	s := prefix + strconv.Itoa(pid)
	if comm != "" {
		s += " " + displayText(comm)
	}
	return s
}

// procLine renders "PREFIX PID comm: cmdline", shortened to lineWidth.
func procLine(prefix string, pid int, comm string, cmdline []string) string {
	s := procName(prefix, pid, comm)
	if len(cmdline) == 0 {
		return s
	}
	s += ":"
	return s + " " + shortCmdline(cmdline, lineWidth-width(s)-1)
}

// chainLine renders an ancestor as "    ← PID cmdline", or with its comm
// in brackets when its command line is unknown.
func chainLine(p report.Proc) string {
	s := "    ← " + strconv.Itoa(p.PID)
	if len(p.Cmdline) == 0 {
		if p.Comm != "" {
			s += " [" + displayText(p.Comm) + "]"
		}
		return s
	}
	return s + " " + shortCmdline(p.Cmdline, lineWidth-width(s)-1)
}

// configDir is the directory that allow entries are relative to: the
// config file's, or the work directory when there is no config file yet.
func configDir(r *report.Report) string {
	if r.ConfigFile == "" {
		return r.WorkDir
	}
	if filepath.IsAbs(r.ConfigFile) {
		return filepath.Dir(r.ConfigFile)
	}
	if r.WorkDir == "" {
		return ""
	}
	return filepath.Dir(filepath.Join(r.WorkDir, r.ConfigFile))
}

// configName is the config file as shown to the user: relative to the
// work directory when under it.
func configName(r *report.Report) string {
	if rel, ok := relUnder(r.ConfigFile, r.WorkDir); ok && rel != "." {
		return rel
	}
	return r.ConfigFile
}

// relUnder returns path relative to dir when both are absolute and path is
// dir or below it.
func relUnder(path, dir string) (string, bool) {
	if !filepath.IsAbs(path) || !filepath.IsAbs(dir) {
		return "", false
	}
	dir = filepath.Clean(dir)
	if path == dir {
		return ".", true
	}
	prefix := dir
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if rest, ok := strings.CutPrefix(path, prefix); ok && rest != "" {
		return rest, true
	}
	return "", false
}

// displayPath returns p as is when it prints safely on one line, else
// quoted and escaped like strconv.Quote. Leading or trailing spaces and a
// leading quote also force quoting, so that what is shown is unambiguous.
func displayPath(p string) string {
	if p == "" || p[0] == '"' || p[0] == ' ' || p[len(p)-1] == ' ' {
		return strconv.Quote(p)
	}
	return displayText(p)
}

// displayText returns s as is when it is valid UTF-8 with only printable
// characters, else quoted and escaped like strconv.Quote.
func displayText(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

func printable(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return false
			}
		}
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// shellArg renders one argument so that a command line reads like one
// typed into a shell: plain when it needs no quoting, single-quoted when
// it holds spaces or shell metacharacters, and quoted and escaped like
// strconv.Quote when it holds control characters or invalid UTF-8.
func shellArg(s string) string {
	if s == "" {
		return "''"
	}
	if !printable(s) {
		return strconv.Quote(s)
	}
	plain := true
	for _, r := range s {
		if !shellSafe(r) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellSafe(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	case r >= utf8.RuneSelf:
		return r != '\u00a0' && strconv.IsPrint(r)
	}
	return strings.ContainsRune("@%+=:,./_-^", r)
}

// shortCmdline joins args as shell words and, when the result is wider
// than budget, cuts it and ends it with "…", followed by the number of
// arguments left out entirely.
func shortCmdline(args []string, budget int) string {
	budget = max(budget, minBudget)
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = shellArg(a)
	}
	full := strings.Join(words, " ")
	if width(full) <= budget {
		return full
	}
	runes := []rune(full)
	starts := make([]int, len(words)) // rune offset of each word
	off := 0
	for i, w := range words {
		starts[i] = off
		off += width(w) + 1
	}
	limit := budget - 1 // room for "…"
	for {
		left := 0
		for _, s := range starts {
			if s >= limit {
				left++
			}
		}
		tail := ""
		if left > 0 {
			tail = " (+" + plural(left, "arg", "args") + ")"
		}
		if limit+1+width(tail) <= budget || limit <= 1 {
			cut := strings.TrimRight(string(runes[:max(limit, 1)]), " ")
			return cut + "…" + tail
		}
		limit = budget - 1 - width(tail)
	}
}

// yamlScalar renders s as a YAML scalar: plain when that reads back as the
// same string, double-quoted otherwise. It reports false when s is not
// valid UTF-8, which YAML cannot hold.
func yamlScalar(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	if yamlPlainOK(s) {
		return s, true
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case !strconv.IsPrint(r):
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), true
}

// yamlPlainOK reports whether s can be written as a plain YAML scalar
// and still be read back as the string s.
func yamlPlainOK(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		ok := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
			strings.ContainsRune("_./+=~-@*", r)
		if !ok {
			return false
		}
	}
	if s[0] == '@' || s[0] == '-' || s[0] == '*' {
		return false
	}
	if strings.Contains(s, "/") {
		return true
	}
	// Without a slash it may read as a number, a boolean or null.
	if strings.ContainsRune("0123456789.+~", rune(s[0])) {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
		return false
	}
	return true
}

func width(s string) int { return utf8.RuneCountInString(s) }

type integer interface {
	~int | ~int64 | ~uint64
}

func plural[N integer](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprint(n) + " " + many
}

func pick(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

// attributed reports whether a runner's boundaries tell who wrote v.
func attributed(v *report.Violation) bool {
	return v.Test != "" || len(v.AmbiguousTests) > 0 || v.Package != "" || v.Runner != ""
}

// whoText names who wrote v: the test with its phase and package, the
// tests it may have been, or the package outside its tests.
func whoText(v *report.Violation) string {
	var s string
	switch {
	case v.Test != "":
		s = displayText(v.Test)
	case len(v.AmbiguousTests) > 0:
		names := make([]string, len(v.AmbiguousTests))
		for i, n := range v.AmbiguousTests {
			names[i] = displayText(n)
		}
		s = "one of " + strings.Join(names, ", ") + " (ambiguous)"
	case v.Runner == report.RunnerGo:
		s = "package code"
	default:
		s = "outside tests"
	}
	var details []string
	if v.Phase != "" && v.Phase != report.PhaseTest && v.Phase != "call" {
		p := displayText(v.Phase)
		if v.Runner == report.RunnerGo && v.Test == "" {
			switch v.Phase {
			case report.PhaseSetup:
				p = "setup: init or TestMain before the tests"
			case report.PhaseTeardown:
				p = "teardown: TestMain after the tests"
			case report.PhaseInit:
				p = "init: before the tests"
			case report.PhaseAfter:
				p = "after the tests"
			}
		}
		details = append(details, p)
	}
	if v.Fixture != "" {
		details = append(details, "fixture "+displayText(v.Fixture))
	}
	if len(details) > 0 {
		s += " [" + strings.Join(details, ", ") + "]"
	}
	if v.Package != "" && !strings.HasPrefix(v.Test, v.Package) {
		if v.Runner == report.RunnerGo {
			s += " (pkg " + displayText(v.Package) + ")"
		} else {
			s += " (" + displayText(v.Package) + ")"
		}
	}
	return s
}
