package render

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/writewatch/writewatch/report"
)

// TextOptions controls WriteText.
type TextOptions struct {
	// Color enables ANSI colors: bold paths, red operations, yellow
	// warnings. Without it the output is plain text.
	Color bool
}

const (
	// lineWidth is the width that process lines are shortened to.
	lineWidth = 120
	// minBudget is the least room a shortened command line is given.
	minBudget = 24
	// maxChain is the most ancestors listed for one violation.
	maxChain = 8
)

const (
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// WriteText writes the human summary of r to w: a header line, warnings
// about lost events, truncated paths and surviving processes, one block per
// violation with the process that wrote and its ancestors, and advice on
// fixing the violations.
//
// Paths and arguments holding newlines, other control characters or
// invalid UTF-8 are shown quoted and escaped, so every item stays on its
// own line.
func WriteText(w io.Writer, r *report.Report, opt TextOptions) error {
	if r == nil {
		return errors.New("report: write text: nil report")
	}
	t := &textWriter{color: opt.Color, sandbox: r.Sandbox}
	t.header(r)
	t.severities(r)
	t.sandboxed(r)
	t.warnings(r)
	t.kills(r)
	items := collapse(r.Violations)
	t.byTest(items)
	for _, it := range items {
		if it.v != nil {
			t.violation(it.v)
			continue
		}
		t.line()
		t.line(t.collapsedLine(it.group))
		t.prev = nil
	}
	t.crossTestReads(r)
	t.survivors(r)
	t.notes(r)
	t.fixed(r)
	t.howToFix(r)
	t.blind(r)
	if r.Mode == report.ModeAudit && r.Failed() {
		t.line()
		t.line("writewatch: audit mode: these writes are reported only; they do not fail the run")
	}
	if _, err := w.Write(t.buf.Bytes()); err != nil {
		return fmt.Errorf("report: write text: %w", err)
	}
	return nil
}

type textWriter struct {
	buf   bytes.Buffer
	color bool
	prev  *report.Violation // the violation written last
	// sandbox is how the run was sandboxed (nil: it was not), for what
	// reached the real files all the same (landed).
	sandbox *report.SandboxInfo
}

func (t *textWriter) line(parts ...string) {
	for _, p := range parts {
		t.buf.WriteString(p)
	}
	t.buf.WriteByte('\n')
}

func (t *textWriter) paint(code, s string) string {
	if !t.color || s == "" {
		return s
	}
	return code + s + ansiReset
}

func (t *textWriter) header(r *report.Report) {
	if !r.Failed() && len(r.Violations) == 0 {
		counts := plural(r.Events, "write event", "write events") + ", " + plural(r.Processes, "process", "processes")
		if r.Blind() {
			t.line(t.paint(ansiRed, "writewatch: verdict unknown: no writes outside the allowlist seen ("+counts+
				"), but writewatch could not see everything"))
			return
		}
		t.line("writewatch: no writes outside the allowlist (" + counts + ")")
		return
	}
	if len(r.Violations) == 0 && r.UnlistedViolations == 0 {
		t.line(fmt.Sprintf("writewatch: the kernel refused %s outside the allowlist, but %s lost (ring buffer full)",
			plural(r.LostRefusals, "write", "writes"), pick(r.LostRefusals == 1, "its record was", "their records were")))
		return
	}
	events := 0
	for i := range r.Violations {
		events += max(r.Violations[i].Count, 1)
	}
	head := fmt.Sprintf("writewatch: %s outside the allowlist (%s)",
		plural(len(r.Violations), "write", "writes"),
		plural(events, "event", "events"))
	if len(r.Command) == 0 {
		t.line(head)
		return
	}
	const by = " by `"
	budget := lineWidth - width(head) - width(by) - 1
	t.line(head, by, shortCmdline(r.Command, budget), "`")
}

// severityText says what each severity means, for the summary line.
var severityText = map[string]string{
	report.SeverityDataLoss:   "existed before",
	report.SeverityLeftBehind: "still there",
	report.SeverityTransient:  "gone at the end",
	report.SeverityAttempt:    "changed nothing",
}

// severities counts the violations by severity, worst first, and says
// when nothing was left behind.
func (t *textWriter) severities(r *report.Report) {
	n := map[string]int{}
	for i := range r.Violations {
		n[r.Violations[i].Severity]++
	}
	var parts, plain []string
	for _, s := range report.Severities {
		if n[s] > 0 {
			word := severityWord(n[s], s)
			parts = append(parts, fmt.Sprintf("%d %s (%s)", n[s], t.paintSeverity(s, word), severityText[s]))
			plain = append(plain, fmt.Sprintf("%d %s (%s)", n[s], displayText(word), severityText[s]))
		}
	}
	if len(parts) == 0 {
		return
	}
	for i := range parts[:len(parts)-1] {
		parts[i] += ","
		plain[i] += ","
	}
	if n[report.SeverityDataLoss] == 0 && n[report.SeverityLeftBehind] == 0 && n[""] == 0 {
		parts[len(parts)-1] += "; nothing was left behind"
		plain[len(plain)-1] += "; nothing was left behind"
	}
	t.wrap("writewatch: ", "writewatch:   ", parts, plain)
	baselined := 0
	for i := range r.Violations {
		if r.Violations[i].Baselined {
			baselined++
		}
	}
	if baselined > 0 {
		t.line(fmt.Sprintf("writewatch: %d of them in the baseline (%s) fail nothing; %d new",
			baselined, displayPath(r.Baseline), len(r.Violations)-baselined))
	}
	if !r.Failed() {
		why := "calls that changed nothing"
		if baselined > 0 {
			why = "in the baseline, or calls that changed nothing"
		}
		t.line("writewatch: none of them fails the run: " + why)
	}
}

// wrap writes words (painted, and plain for measuring) on lines of at most
// lineWidth characters where it can, the first after first, the others
// after then.
func (t *textWriter) wrap(first, then string, words, plain []string) {
	line, w := first, width(first)
	for i, word := range words {
		if w > width(first) && w+1+width(plain[i]) > lineWidth {
			t.line(line)
			line, w = then, width(then)
		} else if w > width(first) {
			line += " "
			w++
		}
		line += word
		w += width(plain[i])
	}
	t.line(line)
}

// severityTag renders a severity, in red for data-loss and yellow for
// left-behind.
func (t *textWriter) severityTag(s string) string { return t.paintSeverity(s, s) }

// violationTag renders v's severity label, painted as its severity.
func (t *textWriter) violationTag(v *report.Violation) string {
	return t.paintSeverity(v.Severity, severityLabel(v))
}

// paintSeverity renders word in severity s's colour.
func (t *textWriter) paintSeverity(s, word string) string {
	switch s {
	case report.SeverityDataLoss:
		return t.paint(ansiBold+ansiRed, word)
	case report.SeverityLeftBehind:
		return t.paint(ansiYellow, word)
	}
	return displayText(word)
}

func (t *textWriter) warnings(r *report.Report) {
	if r.UnlistedViolations > 0 {
		t.line(t.paint(ansiYellow, "writewatch: warning: "+plural(r.UnlistedViolations, "more write", "more writes")+
			" outside the allowlist, to paths beyond the first "+plural(len(r.Violations), "one", "ones")+
			", are counted but not listed (--max-violations)"))
	}
	if r.LostRefusals > 0 && (len(r.Violations) > 0 || r.UnlistedViolations > 0) {
		t.line(t.paint(ansiYellow, "writewatch: warning: the kernel refused "+plural(r.LostRefusals, "more write", "more writes")+
			" outside the allowlist, whose "+pick(r.LostRefusals == 1, "record was", "records were")+" lost (ring buffer full)"))
	}
	if r.Enforcement != "" {
		t.line("writewatch: enforced with " + displayText(r.Enforcement))
	}
	if r.EnforcementNote != "" {
		t.line(t.paint(ansiYellow, "writewatch: warning: "+displayText(r.EnforcementNote)))
	}
	for _, why := range r.Incomplete {
		t.line(t.paint(ansiYellow, "writewatch: not seen: "+displayText(why)))
	}
	var sum uint64
	for _, n := range r.Lost {
		sum += n
	}
	if lost := max(r.LostEvents, sum); lost > 0 {
		msg := "writewatch: warning: " + plural(lost, "event", "events") + " lost"
		if causes := lostCauses(r.Lost); causes != "" {
			msg += " (" + causes + ")"
		}
		msg += "; writes outside the allowlist may be missing from this report"
		t.line(t.paint(ansiYellow, msg))
	}
	if r.TruncatedPaths > 0 {
		msg := fmt.Sprintf("writewatch: warning: %s too long for the kernel buffers; %s checked against the allowlist by prefix only",
			plural(r.TruncatedPaths, "path was", "paths were"),
			pick(r.TruncatedPaths == 1, "it was", "they were"))
		t.line(t.paint(ansiYellow, msg))
	}
}

// blind says, for a run that could not see everything, what that means
// for its exit code and what may help.
func (t *textWriter) blind(r *report.Report) {
	if !r.Blind() {
		return
	}
	t.line()
	switch {
	case r.Mode == report.ModeAudit:
		t.line("writewatch: writes outside the allowlist may have gone unseen (audit mode: the run is not failed for it)")
	case r.Failed():
		t.line("writewatch: more writes outside the allowlist may have gone unseen")
	default:
		t.line("writewatch: writes outside the allowlist may have gone unseen: the run does not pass (exit 88) unless --accept-incomplete is given")
	}
	if r.Lost[report.LostRingbufFull] > 0 {
		t.line("  - A larger ring buffer (--ringbuf-mib) keeps records from being lost while writewatch falls behind.")
	}
}

// lostCauses lists causes by count, largest first: "ringbuf_full: 30, ...".
func lostCauses(lost map[string]uint64) string {
	type cause struct {
		name string
		n    uint64
	}
	var cs []cause
	for name, n := range lost {
		if n > 0 {
			cs = append(cs, cause{name, n})
		}
	}
	slices.SortFunc(cs, func(a, b cause) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.name, b.name))
	})
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = displayText(c.name) + ": " + strconv.FormatUint(c.n, 10)
	}
	return strings.Join(parts, ", ")
}

func (t *textWriter) violation(v *report.Violation) {
	t.line()
	t.line(t.pathHead(v))
	t.line("  ", t.opText(v), outcomeText(v))
	if attributed(v) {
		t.line("  in ", whoText(v))
	}
	t.writtenBy(v)
	if place := t.landed(v); place != "" {
		t.line("  ", t.paint(ansiBold+ansiRed, "reached the real file:"), " the sandbox binds ", displayPath(place), " through")
	}
	t.change(v)
}

// pathHead is the path, as matched, and how the process named it.
func (t *textWriter) pathHead(v *report.Violation) string {
	head := t.paint(ansiBold, displayPath(v.Path))
	if v.RequestedPath != "" && v.RequestedPath != v.Path {
		head += " (requested as " + displayPath(v.RequestedPath) + ")"
	}
	if v.Truncated {
		head += " [truncated path]"
	}
	return head
}

// opText says what was done to the path, and the harm it did.
func (t *textWriter) opText(v *report.Violation) string {
	op := ""
	if v.Severity != "" {
		op += "[" + t.violationTag(v) + "] "
	}
	op += t.paint(ansiRed, displayText(v.Op))
	if v.Flags != "" {
		op += " " + displayText(v.Flags)
	}
	if role := roleText(v); role != "" {
		op += " (" + role + ")"
	}
	switch v.BlockDevice {
	case "":
	case report.BlockDeviceNode:
		op += " (a block device's node)"
	default:
		op += " (block device " + displayText(v.BlockDevice) + ": every file on it)"
	}
	if v.AllFailed() {
		op += " (failed: " + displayText(v.Errno) + ")"
	}
	if v.Via != "" {
		op += " (via " + displayText(v.Via) + ", result unknown)"
	}
	if len(v.SeenBy) == 1 && v.SeenBy[0] == report.SeenByFilesystem {
		op += " (seen only on disk)"
	}
	if v.Count > 1 {
		op += " ×" + strconv.Itoa(v.Count)
	}
	if v.PartlyFailed() {
		op += " (" + partlyFailed(v, displayText) + ")"
	}
	return op
}

// outcomeText says what the rules and writewatch made of the write: a
// deny entry, an allow entry --enforce could not grant, the baseline,
// the action taken.
func outcomeText(v *report.Violation) string {
	s := ""
	if v.DeniedBy != "" {
		s += "; denied by " + displayText(v.DeniedBy)
	}
	if v.NotEnforced != "" {
		s += "; allowed by " + displayText(v.NotEnforced) + ", but --enforce cannot grant it exactly (see --print-config)"
	}
	if v.Baselined {
		s += "; in the baseline"
	}
	switch v.Action {
	case report.ActionBlocked:
		s += "; blocked"
	case report.ActionKilled:
		s += "; writer killed (the write may have taken effect)"
	case report.ActionBlockedKilled:
		s += "; blocked, writer killed"
	}
	return s
}

// writtenBy says who did it, and where that process came from, unless that
// was just shown.
func (t *textWriter) writtenBy(v *report.Violation) {
	prev := t.prev
	t.prev = v
	if v.PID == 0 && v.Comm == "" {
		t.line("  by a process of the tree that no record names")
		return
	}
	if prev != nil && sameProcess(prev, v) {
		t.line(procName("  by ", v.PID, v.Comm), ", as above")
		return
	}
	t.line(procLine("  by ", v.PID, v.Comm, v.Cmdline))
	chain := v.Chain
	if len(chain) > maxChain {
		for _, p := range chain[:maxChain-2] {
			t.line(chainLine(p))
		}
		t.line(fmt.Sprintf("    ← … %s", plural(len(chain)-(maxChain-1), "more process", "more processes")))
		chain = chain[len(chain)-1:]
	}
	for _, p := range chain {
		t.line(chainLine(p))
	}
}

// sameProcess reports whether a and b were written by the same process
// with the same ancestry.
func sameProcess(a, b *report.Violation) bool {
	if a.PID != b.PID || a.Comm != b.Comm || !slices.Equal(a.Cmdline, b.Cmdline) || len(a.Chain) != len(b.Chain) {
		return false
	}
	for i := range a.Chain {
		if a.Chain[i].PID != b.Chain[i].PID || !slices.Equal(a.Chain[i].Cmdline, b.Chain[i].Cmdline) {
			return false
		}
	}
	return true
}

func (t *textWriter) survivors(r *report.Report) {
	if len(r.Survivors) == 0 {
		return
	}
	t.line()
	done := "left running"
	if r.SurvivorsKilled {
		done = "killed"
	}
	t.line(t.paint(ansiYellow, fmt.Sprintf("writewatch: still running when writewatch finished (%s, %s):",
		plural(len(r.Survivors), "process", "processes"), done)))
	for _, p := range r.Survivors {
		t.line(procLine("  ", p.PID, p.Comm, p.Cmdline))
	}
}

// notes prints the Go test binaries whose tests could not be told apart,
// and the run's notes.
func (t *textWriter) notes(r *report.Report) {
	var lines []string
	for _, p := range r.Packages {
		if !p.Followed {
			lines = append(lines, fmt.Sprintf("writewatch: %s: its writes carry the package only, not the test: %s",
				displayText(p.Package), displayText(p.Problem)))
		}
	}
	if len(r.Unattributed) > 0 {
		lines = append(lines, "writewatch: some writes could not be tied to one test and are marked ambiguous ("+lostCauses(r.Unattributed)+")")
	}
	for _, n := range r.Notes {
		lines = append(lines, "writewatch: note: "+displayText(n))
	}
	if len(lines) == 0 {
		return
	}
	t.line()
	for _, l := range lines {
		t.line(l)
	}
}

// maxFixed is the most baseline entries the summary lists as fixed, or
// as not made again but still there.
const maxFixed = 10

// fixed lists the baseline's writes this run did not make again: those
// fixed, and those whose paths the baseline run left are still there.
func (t *textWriter) fixed(r *report.Report) {
	if len(r.Fixed) > 0 {
		t.line()
		t.line(fmt.Sprintf("Fixed since the baseline (%s): %s no longer made:", displayPath(r.Baseline),
			plural(len(r.Fixed), "write", "writes")))
		t.baselineEntries(r.Fixed)
	}
	if n := len(r.Leftovers); n > 0 {
		t.line()
		t.line(fmt.Sprintf("Not made again, but still there (%s): %s no longer made, but the baseline run left %s there; remove %s and run again to know whether %s fixed:",
			displayPath(r.Baseline), plural(n, "write", "writes"), pick(n == 1, "its path", "their paths"),
			pick(n == 1, "it", "them"), pick(n == 1, "it is", "they are")))
		t.baselineEntries(r.Leftovers)
	}
}

// baselineEntries lists entries of the baseline, the first maxFixed.
func (t *textWriter) baselineEntries(vs []report.Violation) {
	for i := range vs[:min(len(vs), maxFixed)] {
		v := &vs[i]
		line := "  " + displayText(v.Op) + " " + displayPath(v.Path)
		if attributed(v) {
			line += " by " + whoText(v)
		}
		t.line(line)
	}
	if n := len(vs) - maxFixed; n > 0 {
		t.line(fmt.Sprintf("  … and %d more (the JSON report lists them)", n))
	}
}
