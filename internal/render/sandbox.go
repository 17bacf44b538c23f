package render

import (
	"fmt"
	"strings"

	"github.com/writewatch/writewatch/report"
)

// textDiffLines bounds the diff the text summary shows of one change:
// the JSON report has up to report.DiffLines.
const textDiffLines = 12

// sandboxed says, under the counts, that nothing changed for real in a
// sandboxed run: what follows is what would have.
func (t *textWriter) sandboxed(r *report.Report) {
	if r.Sandbox == nil {
		return
	}
	landed := 0
	for i := range r.Violations {
		if t.landed(&r.Violations[i]) != "" {
			landed++
		}
	}
	switch {
	case landed > 0:
		t.line(t.paint(ansiBold+ansiRed, fmt.Sprintf("writewatch: sandboxed, but %s reached the real files, where the sandbox binds them through (a special filesystem, an allowed directory); below, what did and what would have changed",
			plural(landed, "write", "writes"))))
	case len(r.Violations) > 0:
		t.line(t.paint(ansiBold, "writewatch: sandboxed: none of it reached the real files; below, what would have changed"))
	}
	for _, w := range r.Sandbox.Withheld {
		t.line("writewatch: sandboxed: COMMAND did not inherit " + displayText(w) + ", open for writing outside the allowlist")
	}
	for _, n := range r.Sandbox.ReadOnly {
		t.line("writewatch: sandboxed: " + displayText(n))
	}
	for _, u := range r.Sandbox.Unapplied {
		t.line(t.paint(ansiYellow, "writewatch: warning: an allowed change in the sandbox was not made for real: "+displayText(u)))
	}
}

// landed is the place of the sandbox's, bound through to the real
// filesystem, where v's writes reached the real file (a special
// filesystem such as /dev or /run, an allowed directory: v is there a
// block device's node, say); "" when the run was not sandboxed, its
// overlay held v's change, or every call of v failed.
func (t *textWriter) landed(v *report.Violation) string {
	if t.sandbox == nil || v.AllFailed() {
		return ""
	}
	if place, overlaid := t.sandbox.Holds(v.Path); !overlaid {
		return place
	}
	return ""
}

// change shows what a path would have become in a sandboxed run: the
// change its overlay held, and a text file's diff.
func (t *textWriter) change(v *report.Violation) {
	c := v.Change
	if c == nil {
		return
	}
	t.line("  would have been ", changeText(c))
	for _, l := range diffLines(c, textDiffLines) {
		t.line("    ", t.diffLine(l))
	}
}

// diffLines are the lines of a change's diff to show, at most n and a
// last one that says how many more there are: without the diff's
// header, which names the path shown above it.
func diffLines(c *report.Change, n int) []string {
	if c.Diff == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(c.Diff, "\n"), "\n")
	if len(lines) >= 2 && strings.HasPrefix(lines[0], "--- ") && strings.HasPrefix(lines[1], "+++ ") {
		lines = lines[2:]
	}
	more := c.DiffCut
	if len(lines) > n {
		more += len(lines) - n
		lines = lines[:n]
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… %s more (the JSON report has the diff)", plural(more, "line", "lines")))
	}
	return lines
}

// diffLine paints a line of a diff: removed red, added green.
func (t *textWriter) diffLine(l string) string {
	switch {
	case strings.HasPrefix(l, "-"):
		return t.paint(ansiRed, displayText(l))
	case strings.HasPrefix(l, "+"):
		return t.paint(ansiGreen, displayText(l))
	}
	return displayText(l)
}

// changeText says what a change made of a path, in words.
func changeText(c *report.Change) string {
	switch c.Kind {
	case "created":
		return "created" + sizeText(c.After)
	case "removed":
		return "removed" + sizeText(c.Before)
	case "moved":
		return "moved from " + displayPath(c.From)
	case "replaced":
		return "replaced (" + typeText(c.Before) + " → " + typeText(c.After) + ")"
	case "attrib":
		return "changed in mode, owner, times or attributes" + modeChange(c)
	}
	if c.Before != nil && c.After != nil {
		return fmt.Sprintf("changed (%d → %d bytes)", c.Before.Size, c.After.Size)
	}
	return "changed"
}

func sizeText(f *report.FileState) string {
	switch {
	case f == nil:
		return ""
	case f.Type == "file":
		return fmt.Sprintf(" (%s)", plural(f.Size, "byte", "bytes"))
	}
	return " (" + f.Type + ")"
}

func typeText(f *report.FileState) string {
	if f == nil {
		return "nothing"
	}
	return f.Type
}

func modeChange(c *report.Change) string {
	if c.Before != nil && c.After != nil && c.Before.Mode != c.After.Mode {
		return " (" + c.Before.Mode + " → " + c.After.Mode + ")"
	}
	return ""
}
