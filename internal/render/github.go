package render

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/writewatch/writewatch/report"
)

// WriteGitHubAnnotations writes one GitHub Actions workflow command per
// violation, pointing at the test's source file and line when known:
// "::error" for a write that changed what was there before the run or
// left something behind (or whose severity is unknown), "::warning" for
// one that left nothing (transient) or changed nothing (attempt). Paths under workspace (GITHUB_WORKSPACE) are made relative
// to it, as GitHub expects.
func WriteGitHubAnnotations(w io.Writer, r *report.Report, workspace string) error {
	var b strings.Builder
	for i := range r.Violations {
		v := &r.Violations[i]
		props := ghLocation(v.TestFile, v.TestLine, workspace)
		title := "writewatch: write outside the allowlist"
		if v.Severity != "" {
			title += " (" + severityLabel(v) + ")"
		}
		props = append(props, "title="+ghProperty(title))
		msg := annotationText(v)
		via := v.Exe
		if via == "" {
			via = v.Comm
		}
		if via != "" {
			msg += " via " + via
		}
		if v.Change != nil {
			msg += "; in the sandbox it would have been " + changeText(v.Change)
		}
		b.WriteString("::" + ghLevel(v) + " " + strings.Join(props, ",") + "::" + ghData(msg) + "\n")
	}
	ghKills(&b, r, workspace)
	for i := range r.CrossTestReads {
		x := &r.CrossTestReads[i]
		props := append(ghLocation(x.ReadBy.TestFile, x.ReadBy.TestLine, workspace), "title="+ghProperty("writewatch: cross-test read"))
		msg := whoText(accessViolation(&x.ReadBy)) + " " + crossReadText(x) + ": it passes or fails with the order the tests run in"
		b.WriteString("::warning " + strings.Join(props, ",") + "::" + ghData(msg) + "\n")
	}
	if r.Blind() {
		b.WriteString("::error title=" + ghProperty("writewatch: incomplete") + "::" +
			ghData("writewatch could not see everything, writes outside the allowlist may have gone unseen: "+
				strings.Join(r.Incomplete, "; ")) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ghLocation is the properties of an annotation at a test's source
// file and line, the file relative to workspace when under it; none when
// the file is not known.
func ghLocation(file string, line int, workspace string) []string {
	if file == "" {
		return nil
	}
	if rel, ok := relUnder(file, workspace); ok {
		file = rel
	}
	props := []string{"file=" + ghProperty(file)}
	if line > 0 {
		props = append(props, fmt.Sprintf("line=%d", line))
	}
	return props
}

// annotationText says what v's write was: "TestX wrote P (op)", or, for
// a call that failed, "TestX tried to write P (op, failed: EACCES)".
func annotationText(v *report.Violation) string {
	what := v.Op
	if v.Flags != "" {
		what += " " + v.Flags
	}
	what += failedText(v, identity)
	who := ""
	if attributed(v) {
		who = whoText(v) + " "
	}
	switch {
	case v.AllFailed():
		return who + "tried to write " + v.Path + " (" + what + ")"
	case who != "":
		return who + "wrote " + v.Path + " (" + what + ")"
	}
	return v.Path + " written (" + what + ")"
}

// ghLevel is the workflow command of v's annotation: "notice" for a
// write in the baseline, "warning" for one that left nothing or changed
// nothing, "error" otherwise.
func ghLevel(v *report.Violation) string {
	switch {
	case v.Baselined:
		return "notice"
	case v.Severity == report.SeverityTransient || v.Severity == report.SeverityAttempt:
		return "warning"
	}
	return "error"
}

// WriteGitHubSummary writes a Markdown table of the violations, for
// $GITHUB_STEP_SUMMARY.
func WriteGitHubSummary(w io.Writer, r *report.Report) error {
	var b strings.Builder
	b.WriteString("### writewatch\n\n")
	if r.Blind() {
		b.WriteString("**writewatch could not see everything**: writes outside the allowlist may have gone unseen.\n\n")
		for _, why := range r.Incomplete {
			b.WriteString("- " + mdCell(why) + "\n")
		}
		b.WriteString("\n")
	}
	if !r.Failed() && len(r.Violations) == 0 && r.Blind() {
		fmt.Fprintf(&b, "No writes outside the allowlist seen (%s, %s).\n\n",
			plural(r.Events, "write event", "write events"), plural(r.Processes, "process", "processes"))
		_, err := io.WriteString(w, b.String())
		return err
	}
	if !r.Failed() && len(r.Violations) == 0 {
		fmt.Fprintf(&b, "No writes outside the allowlist (%s, %s).\n\n",
			plural(r.Events, "write event", "write events"), plural(r.Processes, "process", "processes"))
		_, err := io.WriteString(w, b.String())
		return err
	}
	if r.LostRefusals > 0 {
		fmt.Fprintf(&b, "The kernel refused %s outside the allowlist whose %s lost (ring buffer full).\n\n",
			plural(r.LostRefusals, "write", "writes"), pick(r.LostRefusals == 1, "record was", "records were"))
		if len(r.Violations) == 0 {
			_, err := io.WriteString(w, b.String())
			return err
		}
	}
	fmt.Fprintf(&b, "%s outside the allowlist by `%s`.\n\n", plural(len(r.Violations), "write", "writes"), mdCode(strings.Join(r.Command, " ")))
	b.WriteString("| Severity | Test | Path | Operation | Process |\n|---|---|---|---|---|\n")
	for i := range r.Violations {
		v := &r.Violations[i]
		who := ""
		if attributed(v) {
			who = whoText(v)
		}
		op := v.Op
		if v.Flags != "" {
			op += " " + v.Flags
		}
		switch {
		case v.AllFailed():
			op += " (failed: " + v.Errno + ")"
		case v.PartlyFailed():
			op += fmt.Sprintf(" (%d of %d failed: %s)", v.FailedCalls(), v.Count, v.Errno)
		}
		proc := fmt.Sprintf("%d %s", v.PID, v.Comm)
		if v.Exe != "" {
			proc += " (" + filepath.Base(v.Exe) + ")"
		}
		sev := severityLabel(v)
		if v.Baselined {
			sev += " (baseline)"
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", mdCell(sev), mdCell(who), mdCode(v.Path), mdCell(op), mdCell(proc))
	}
	b.WriteString("\n")
	ghKillsSummary(&b, r)
	ghCrossReads(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// ghCrossReads writes the step summary's table of cross-test reads: the
// test that read, the file, the tests that wrote it before.
func ghCrossReads(b *strings.Builder, r *report.Report) {
	n := uint64(len(r.CrossTestReads)) + r.UnlistedCrossTestReads
	if n == 0 {
		return
	}
	fmt.Fprintf(b, "%s of a file another test wrote outside the allowlist: these tests pass or fail with the order the tests run in.\n\n",
		plural(n, "cross-test read", "cross-test reads"))
	b.WriteString("| Test that read | Path | Written before by |\n|---|---|---|\n")
	for i := range r.CrossTestReads {
		x := &r.CrossTestReads[i]
		reader := accessViolation(&x.ReadBy)
		fmt.Fprintf(b, "| %s | `%s` | %s |\n", mdCell(whoText(reader)), mdCode(x.Path), mdCell(writersText(x.WrittenBy, reader)))
	}
	if r.UnlistedCrossTestReads > 0 {
		fmt.Fprintf(b, "\n%d more are counted, not listed (--max-violations).\n", r.UnlistedCrossTestReads)
	}
	b.WriteString("\n")
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", `\|`, "\n", " ", "\r", " ").Replace(s)
}
