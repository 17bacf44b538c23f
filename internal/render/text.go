package render

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/internal/ops"
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
	t := &textWriter{color: opt.Color}
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

// severityWord is severity s as n writes of it are counted: "2
// attempts"; the others read as adjectives ("2 transient", "2
// left-behind") and stay as they are.
func severityWord(n int, s string) string {
	if s == report.SeverityAttempt && n != 1 {
		return "attempts"
	}
	return s
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

func (t *textWriter) howToFix(r *report.Report) {
	if !r.Failed() {
		return
	}
	t.line()
	t.line("How to fix:")
	t.tempDirFix(r)
	suggested, unsuggested := Suggest(r)
	marked := countMarked(r.Violations)
	t.allowFix(r, allowEntries(r, suggested, unsuggested), marked.truncated)
	if broad := len(unsuggested) - invalidUTF8(unsuggested); broad > 0 {
		t.line("    ", plural(broad, "write", "writes"), " to the project, the home directory or a directory above them ",
			pick(broad == 1, "gets", "get"), " no entry: fix the test.")
	}
	t.markedFixes(r, marked)
}

// tempDirFix tells to write under a temporary directory, and how for
// each test that can be told; then what to do of writes to system paths,
// which no temporary directory takes.
func (t *textWriter) tempDirFix(r *report.Report) {
	system := systemWrites(r)
	defer t.systemFix(system)
	fixes := testFixes(r)
	if len(fixes) == 0 && len(system) > 0 && !ownWrites(r) {
		return
	}
	if len(fixes) == 0 {
		t.line("  - Make the tests write under a temporary directory: t.TempDir() in Go, the tmp_path fixture in pytest.")
		return
	}
	t.line("  - Make the tests write under a temporary directory:")
	for _, f := range fixes {
		t.line("      ", f)
	}
}

// systemFix says what to do of the writes to system paths.
func (t *textWriter) systemFix(lines []string) {
	if len(lines) == 0 {
		return
	}
	t.line("  - Writes to system paths, which a library or tool the tests use makes on its own: a temporary directory cannot take them.")
	t.line("    Allow them if they are expected (below), or point the library elsewhere if it reads a setting or an environment variable for the path:")
	for _, l := range lines {
		t.line("      ", l)
	}
}

// ownWrites reports whether a write that fails the run is not to a
// system path.
func ownWrites(r *report.Report) bool {
	for i := range r.Violations {
		if v := &r.Violations[i]; v.Fails() && !systemPath(r, v) {
			return true
		}
	}
	return false
}

// marked counts the violations an allow entry cannot fix as it is
// suggested.
type marked struct {
	denied     int // matched a deny entry
	unenforced int // allowed by an entry --enforce cannot grant exactly
	truncated  int // of a path cut short, that succeeded
}

func countMarked(vs []report.Violation) marked {
	var m marked
	for i := range vs {
		switch v := &vs[i]; {
		case v.DeniedBy != "":
			m.denied++
		case v.NotEnforced != "":
			m.unenforced++
		case v.Truncated && !v.AllFailed():
			m.truncated++
		}
	}
	return m
}

// allowEntries are the YAML list items of the allow entries suggested,
// and a comment for each path that is not valid UTF-8.
func allowEntries(r *report.Report, suggested []Suggestion, unsuggested []*report.Violation) []string {
	var entries []string
	for _, s := range suggested {
		if e, ok := yamlScalar(s.Entry); ok {
			entries = append(entries, "- "+e)
		}
	}
	for _, v := range unsuggested {
		if !utf8.ValidString(v.Path) {
			p := v.Path
			if rel, ok := relUnder(p, configDir(r)); ok {
				p = rel
			}
			entries = append(entries, "# "+displayPath(p)+" is not valid UTF-8: allow a directory above it")
		}
	}
	return entries
}

// allowFix shows the allow list to write, if the writes are expected;
// truncated paths are not in it: a directory above them is.
func (t *textWriter) allowFix(r *report.Report, entries []string, truncated int) {
	if len(entries) == 0 {
		if truncated > 0 {
			t.line("  - Or, if these writes are expected, allow a directory above the truncated ",
				pick(truncated == 1, "path", "paths"), " in ", pick(r.ConfigFile == "", allowlist.ConfigFileName, displayPath(configName(r))), ".")
		}
		return
	}
	if r.ConfigFile == "" {
		t.line("  - Or, if these writes are expected, create ", allowlist.ConfigFileName, " in ", displayPath(r.WorkDir), " with:")
	} else {
		t.line("  - Or, if these writes are expected, add them to the allow list in ", displayPath(configName(r)), ":")
	}
	t.line()
	t.line("        allow:")
	for _, e := range entries {
		t.line("          ", e)
	}
	t.line()
	if truncated > 0 {
		t.line("    ", pick(truncated == 1, "The truncated path is", "Truncated paths are"),
			" not listed: allow a directory above ", pick(truncated == 1, "it", "them"), " instead.")
	}
}

// markedFixes tells what to do of denied and unenforced writes, and of
// refusals lost.
func (t *textWriter) markedFixes(r *report.Report, m marked) {
	if m.denied > 0 {
		t.line("  - Writes marked \"denied by\" match a deny rule: an allow entry does not lift it; change that rule if they are expected.")
	}
	if m.unenforced > 0 {
		t.line("  - Writes marked \"allowed by …, but --enforce cannot grant it exactly\" are allowed by an entry the kernel cannot")
		t.line("    grant as written (writewatch --print-config says how each entry is enforced): it grants only what is there")
		t.line("    when the run starts, so a glob's new names and a path missing at start are refused. Allow their directory,")
		t.line("    with a trailing / (~/.config/myapp/): --enforce then makes it before the run when it is missing.")
	}
	if r.LostRefusals > 0 {
		t.line("  - To see every refused write, run again with a larger ring buffer (--ringbuf-mib).")
	}
}

func invalidUTF8(vs []*report.Violation) int {
	n := 0
	for _, v := range vs {
		if !utf8.ValidString(v.Path) {
			n++
		}
	}
	return n
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
