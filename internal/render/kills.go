package render

import (
	"fmt"
	"strings"

	"github.com/writewatch/writewatch/report"
)

// maxNotRun is the most tests a kill's lines name as not finished or
// not run; the JUnit report and the JSON list them all.
const maxNotRun = 10

// KillLine is the line writewatch prints on its stderr as soon as it
// sees that --enforce killed a process:
//
//	writewatch: killed pid 1234 (app.test) in TestSave (pkg example.com/app): open /home/u/.config/app/config.toml O_WRONLY outside the allowlist
func KillLine(k *report.Kill) string {
	s := "writewatch: killed " + killedProc(k)
	if who := killWho(k); who != "" {
		s += " in " + who
	}
	return s + ": " + killReason(k)
}

// killedProc is "pid 1234 (app.test)".
func killedProc(k *report.Kill) string {
	return fmt.Sprintf("pid %d (%s)", k.PID, displayText(k.Comm))
}

// killWho names the test k's process worked for, "" when none is known.
func killWho(k *report.Kill) string {
	v := &report.Violation{Who: k.Who}
	if !attributed(v) {
		return ""
	}
	return whoText(v)
}

// killReason is k's Reason, its path shown as the summary shows paths.
func killReason(k *report.Kill) string {
	c := *k
	c.Path = displayPath(k.Path)
	return c.Reason()
}

// killEnded says what the death of k's process ended, one line each:
// the tests that did not finish, those that did not run, or why those
// cannot be known. Nothing for a process that ran no tests itself.
func killEnded(k *report.Kill) []string {
	if !k.RanTests {
		return nil
	}
	var lines []string
	if len(k.Interrupted) > 0 {
		lines = append(lines, "did not finish: "+testNames(k.Interrupted))
	}
	switch {
	case k.NotRunUnknown != "":
		lines = append(lines, "which tests did not run is not known: "+displayText(k.NotRunUnknown))
	case len(k.NotRun) > 0:
		lines = append(lines, fmt.Sprintf("did not run (%s): %s", plural(len(k.NotRun), "test", "tests"), testNames(k.NotRun)))
	default:
		lines = append(lines, "no test was left to run")
	}
	return lines
}

// testNames names the first maxNotRun tests of refs, and counts the
// others.
func testNames(refs []report.TestRef) string {
	names := make([]string, 0, maxNotRun)
	for _, r := range refs[:min(len(refs), maxNotRun)] {
		names = append(names, displayText(r.ID))
	}
	s := strings.Join(names, ", ")
	if n := len(refs) - maxNotRun; n > 0 {
		s += fmt.Sprintf(" and %d more", n)
	}
	return s
}

// kills lists the processes --enforce killed, each with what its death
// ended.
//
//	Killed by --enforce:
//	  pid 4242 (app.test) in TestSave (pkg example.com/app): open /home/u/.config/app/config.toml O_WRONLY outside the allowlist
//	    did not run (2 tests): TestAfter, TestLast
func (t *textWriter) kills(r *report.Report) {
	if len(r.Kills) == 0 {
		return
	}
	t.line()
	t.line(t.paint(ansiRed+ansiBold, "Killed by --enforce:"))
	for i := range r.Kills {
		k := &r.Kills[i]
		s := "  " + killedProc(k)
		if who := killWho(k); who != "" {
			s += " in " + t.paint(ansiBold, who)
		}
		t.line(s, ": ", killReason(k))
		for _, l := range killEnded(k) {
			t.line("    ", l)
		}
	}
}

// killCase is the JUnit testcase of the test k's process worked for.
func killCase(r *report.Report, k *report.Kill) (suite, name string) {
	v := &report.Violation{Who: k.Who}
	return suiteName(k.Runner, k.Package), junitCaseName(r, v)
}

// junitKillType marks the failure of a test whose process --enforce
// killed.
const junitKillType = "writewatch.Killed"

// junitKill is the failure of the testcase of kill k.
func (e *junitEntry) junitKill() *junitMessage {
	k := e.kill
	f := &junitMessage{Message: "killed by writewatch --enforce: " + k.Reason(), Type: junitKillType}
	f.Text = "writewatch --enforce killed " + killedProc(k)
	if len(k.Cmdline) > 0 {
		f.Text += ": " + shortCmdline(k.Cmdline, lineWidth)
	}
	f.Text += "\n"
	for _, l := range killEnded(k) {
		f.Text += l + "\n"
	}
	if len(e.writes) > 0 {
		f.Text += "\n" + plural(len(e.writes), "write", "writes") + " outside the allowlist" + severityCounts(e.writes) + ":\n" + junitWrites(e.writes)
	}
	if e.outcome == report.OutcomeFailed && !strings.HasPrefix(e.message, "killed by writewatch --enforce") {
		f.Text += "\nThe test's own failure:\n" + e.message
	}
	return f
}

// ghKills writes an annotation for each kill, at its test's source when
// known.
func ghKills(b *strings.Builder, r *report.Report, workspace string) {
	for i := range r.Kills {
		k := &r.Kills[i]
		props := append(ghLocation(k.TestFile, k.TestLine, workspace), "title="+ghProperty("writewatch: killed"))
		msg := strings.TrimPrefix(KillLine(k), "writewatch: ")
		if ended := killEnded(k); len(ended) > 0 {
			msg += "; " + strings.Join(ended, "; ")
		}
		b.WriteString("::error " + strings.Join(props, ",") + "::" + ghData(msg) + "\n")
	}
}

// ghKillsSummary lists the kills in the step summary.
func ghKillsSummary(b *strings.Builder, r *report.Report) {
	if len(r.Kills) == 0 {
		return
	}
	b.WriteString("**Killed by `--enforce`:**\n\n")
	for i := range r.Kills {
		k := &r.Kills[i]
		s := killedProc(k)
		if who := killWho(k); who != "" {
			s += " in " + who
		}
		b.WriteString("- " + mdCell(s+": "+killReason(k)) + "\n")
		for _, l := range killEnded(k) {
			b.WriteString("  - " + mdCell(l) + "\n")
		}
	}
	b.WriteString("\n")
}
