package render

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/writewatch/writewatch/report"
)

// maxCommentTests is the most tests a suggested entry's comment names.
const maxCommentTests = 4

// WriteSuggestedConfig writes a proposed config file: the config the run
// used (its text, config, nil when there was none), with the allow
// entries that Suggest proposes added to its allow list, each under a
// comment naming the tests that need it and the worst severity of its
// writes; an entry that lets a test change or remove what was there
// before the run says so. Relative entries are relative to the config's
// directory (the work directory when there was none): the proposal is
// meant to replace the config, there. Writes that get no entry (too
// broad, not valid UTF-8, cut short) are listed in comments at the end.
func WriteSuggestedConfig(w io.Writer, r *report.Report, config []byte) error {
	suggested, unsuggested := Suggest(r)
	var items strings.Builder
	for _, s := range suggested {
		e, ok := yamlScalar(s.Entry)
		if !ok {
			continue
		}
		items.WriteString(suggestionComment(&s))
		items.WriteString("- " + e + "\n")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Proposed by writewatch --suggest-config from the run of `%s` (%s):\n",
		yamlComment(strings.Join(r.Command, " ")), r.Started.UTC().Format(time.RFC3339))
	b.WriteString("# the fewest allow entries that let its writes pass. Review each one: a test\n")
	b.WriteString("# that writes outside a temporary directory is often better fixed.\n")
	if len(config) > 0 {
		fmt.Fprintf(&b, "# The config it ran with, %s, comes first, as it was.\n", yamlComment(r.ConfigFile))
	}
	b.WriteString(mergeAllow(string(config), items.String()))
	var skipped []string
	for _, v := range unsuggested {
		skipped = append(skipped, fmt.Sprintf("#   %s (%s%s)", yamlComment(displayPath(v.Path)), v.Op, byTests(testsOf([]*report.Violation{v}))))
	}
	for i := range r.Violations {
		if v := &r.Violations[i]; v.Truncated && !v.AllFailed() {
			skipped = append(skipped, fmt.Sprintf("#   %s… (cut short; %s%s)", yamlComment(displayPath(v.Path)), v.Op, byTests(testsOf([]*report.Violation{v}))))
		}
	}
	if len(skipped) > 0 {
		b.WriteString("\n# No entry is proposed for these writes (the project, the home directory or\n")
		b.WriteString("# a directory above them, a path that is not UTF-8 or was cut short): fix the tests.\n")
		b.WriteString(strings.Join(skipped, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// suggestionComment is the comment above a suggested entry.
func suggestionComment(s *Suggestion) string {
	sev := s.Severity()
	tests := byTests(s.Tests())
	if sev == report.SeverityDataLoss {
		return "# DATA LOSS: these writes changed or removed files that were there before the run" + tests + ";\n" +
			"# allowing them lets the tests go on doing that. Fix the tests instead if you can.\n"
	}
	if sev == "" {
		sev = "severity unknown"
	}
	return "# " + sev + tests + "\n"
}

// byTests is ", by TestA, TestB and 3 more", or "".
func byTests(tests []string) string {
	if len(tests) == 0 {
		return ""
	}
	shown := tests[:min(len(tests), maxCommentTests)]
	s := ", by " + yamlComment(strings.Join(shown, ", "))
	if n := len(tests) - len(shown); n > 0 {
		s += fmt.Sprintf(" and %d more", n)
	}
	return s
}

// yamlComment keeps s on one comment line.
func yamlComment(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}

var allowKey = regexp.MustCompile(`(?m)^allow:[ \t]*(#.*)?$`)

// mergeAllow adds items (YAML list items, with their comments, one per
// line, not indented) to the block list under config's top-level
// "allow:" key, after its last item, or adds the key at the end when
// there is none.
func mergeAllow(config, items string) string {
	if items == "" {
		return config
	}
	if config != "" && !strings.HasSuffix(config, "\n") {
		config += "\n"
	}
	loc := allowKey.FindStringIndex(config)
	if loc == nil {
		if strings.Contains(config, "\nallow:") || strings.HasPrefix(config, "allow:") {
			// An allow list in flow style: leave it, and say what to add.
			return config + "# Add these to the allow list above:\n" + prefixLines(items, "#   ")
		}
		return config + "allow:\n" + prefixLines(items, "  ")
	}
	// The block list goes on while lines are indented, blank or comments.
	rest := config[loc[1]:]
	end := loc[1]
	indent := "  "
	lines := strings.SplitAfter(rest, "\n")
	pos := loc[1]
	first := true
	for i, l := range lines {
		if i == 0 { // the rest of the "allow:" line
			pos += len(l)
			end = pos
			continue
		}
		trimmed := strings.TrimLeft(l, " \t")
		if trimmed == "" || trimmed == "\n" || strings.HasPrefix(trimmed, "#") {
			pos += len(l)
			continue
		}
		if len(trimmed) == len(l) && !strings.HasPrefix(l, "- ") { // the next key
			break
		}
		if first && strings.HasPrefix(trimmed, "- ") {
			indent = l[:len(l)-len(trimmed)]
			first = false
		}
		pos += len(l)
		end = pos
	}
	return config[:end] + prefixLines(items, indent) + config[end:]
}

func prefixLines(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}
