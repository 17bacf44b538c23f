package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/writewatch/writewatch/internal/allowlist"
	"github.com/writewatch/writewatch/report"
)

// maxCommentTests is the most tests a suggested entry's comment names.
const maxCommentTests = 4

// WriteSuggestedConfig writes a proposed config file to w, which is
// written to file (absolute; "" for the config's directory): the config
// the run used (its text, config, nil when there was none), with the
// allow entries that Suggest proposes added to its allow list, each
// under a comment naming the tests that need it and the worst severity
// of its writes; an entry that lets a test change or remove what was
// there before the run says so. The config is edited as YAML (its
// comments kept, a flow list such as "allow: []" made a block list).
//
// Relative entries are relative to the directory of the file that holds
// them. Written in the config's directory (the work directory when there
// was none), the proposal's entries are relative to it, like the
// config's own. Written elsewhere, every entry is written so that it
// means the same wherever the file is read (--config FILE, or a copy in
// the config's place): the proposal's absolute (or from "~/"), and the
// config's relative ones made absolute. Writes that get no entry (too
// broad, not valid UTF-8, cut short) are listed in comments at the end.
func WriteSuggestedConfig(w io.Writer, r *report.Report, config []byte, file string) error {
	project := configDir(r)
	read, base := project, project
	if file != "" && filepath.Dir(file) != project {
		read, base = filepath.Dir(file), ""
	}
	suggested, unsuggested := suggest(r, base, read)
	var items []*yaml.Node
	for i := range suggested {
		if item := suggestionNode(&suggested[i]); item != nil {
			items = append(items, item)
		}
	}
	rebase := ""
	if base == "" {
		rebase = project
	}
	body, err := addAllow(config, items, rebase)
	if err != nil {
		return fmt.Errorf("%s: %w", r.ConfigFile, err)
	}
	var b strings.Builder
	writeProposalHeader(&b, r, config, rebase, read)
	b.Write(body)
	writeUnsuggested(&b, r, unsuggested)
	_, err = io.WriteString(w, b.String())
	return err
}

// writeProposalHeader says where the proposal comes from, and, when its
// entries are absolute, why.
func writeProposalHeader(b *strings.Builder, r *report.Report, config []byte, rebased, read string) {
	fmt.Fprintf(b, "# Proposed by writewatch --suggest-config from the run of `%s` (%s):\n",
		yamlComment(strings.Join(r.Command, " ")), r.Started.UTC().Format(time.RFC3339))
	b.WriteString("# the fewest allow entries that let its writes pass. Review each one: a test\n")
	b.WriteString("# that writes outside a temporary directory is often better fixed.\n")
	if len(config) > 0 {
		fmt.Fprintf(b, "# The config it ran with, %s, comes first, with its comments.\n", yamlComment(r.ConfigFile))
	}
	if rebased != "" {
		where := "the config's directory"
		if r.ConfigFile == "" {
			where = "where " + allowlist.ConfigFileName + " would be"
		}
		fmt.Fprintf(b, "# Written in %s, not in %s, %s: its entries are\n", yamlComment(read), yamlComment(rebased), where)
		if len(config) > 0 {
			b.WriteString("# absolute, the config's own relative ones too, so that it means the same\n")
		} else {
			b.WriteString("# absolute, so that it means the same\n")
		}
		b.WriteString("# wherever it is read. Written there, they would be relative to it.\n")
	}
}

// writeUnsuggested lists in comments the writes no entry is proposed for.
func writeUnsuggested(b *strings.Builder, r *report.Report, unsuggested []*report.Violation) {
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
		b.WriteString("# a directory above them, a directory many programs share such as ~/.config,\n")
		b.WriteString("# a path that is not UTF-8 or was cut short): fix the tests.\n")
		b.WriteString(strings.Join(skipped, "\n") + "\n")
	}
}

// suggestionNode is the YAML list item of a suggested entry, under its
// comment; nil when the entry cannot be written (not UTF-8).
func suggestionNode(s *Suggestion) *yaml.Node {
	e, ok := yamlScalar(s.Entry)
	if !ok {
		return nil
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.Entry, HeadComment: suggestionComment(s)}
	if e != s.Entry {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// suggestionComment is the comment above a suggested entry.
func suggestionComment(s *Suggestion) string {
	sev := s.Severity()
	tests := byTests(s.Tests())
	var c string
	switch {
	case allRefused(s.Covers):
		if destructive(s.Covers) {
			c = "# REFUSED by --enforce: these writes would have changed or removed files" + tests + ";\n" +
				"# allowing them lets the tests do that. Fix the tests instead if you can."
		} else {
			c = "# refused by --enforce" + tests
		}
	case sev == report.SeverityDataLoss:
		c = "# DATA LOSS: these writes changed or removed files that were there before the run" + tests + ";\n" +
			"# allowing them lets the tests go on doing that. Fix the tests instead if you can."
	case sev == "":
		c = "# severity unknown" + tests
	default:
		c = "# " + sev + tests
	}
	if note := enforceNote(s); note != "" {
		c += "\n" + note
	}
	return c
}

// enforceNote says what --enforce can grant of a suggested entry, when
// not all of it: the kernel grants the files and directories there when
// the run starts (docs/enforcement.md).
func enforceNote(s *Suggestion) string {
	switch {
	case s.NewNames:
		return "# (--enforce grants only the names there when the run starts: allow the\n" +
			"# directory to enforce new ones)"
	case strings.HasSuffix(s.Entry, "/") || wildcard(s.Entry):
		// A directory: --enforce makes it before the run when it is missing.
		return ""
	}
	for _, v := range s.Covers {
		if v.Severity == report.SeverityTransient || refused(v) && v.Op != "unlink" && v.Op != "rmdir" && v.Op != "truncate" {
			return "# (--enforce grants it only when it is there when the run starts)"
		}
	}
	return ""
}

// allRefused reports whether --enforce refused every write of vs.
func allRefused(vs []*report.Violation) bool {
	for _, v := range vs {
		if !refused(v) {
			return false
		}
	}
	return len(vs) > 0
}

// destructive reports whether one of vs would change or remove a file
// that is there: a removal, a rename away or over, a truncation.
func destructive(vs []*report.Violation) bool {
	for _, v := range vs {
		switch {
		case v.Op == "unlink" || v.Op == "rmdir" || v.Op == "truncate" || v.Op == "rename",
			strings.Contains(v.Flags, "O_TRUNC"):
			return true
		}
	}
	return false
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

// addAllow adds items to the allow list of config, a YAML mapping, kept
// with its comments: after the list's last item, the list made a block
// list if it was a flow one ("allow: []"); a new "allow" key at the end
// when there is none. With rebase, the config's relative entries (allow
// and deny) are made absolute, from that directory. A config with no
// content (empty, or comments only) is kept as it is, and the key added
// after it.
func addAllow(config []byte, items []*yaml.Node, rebase string) ([]byte, error) {
	if len(items) == 0 && rebase == "" {
		return config, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(config, &doc); err != nil {
		return nil, fmt.Errorf("read again as YAML: %w", err)
	}
	var out bytes.Buffer
	if doc.Kind == 0 { // nothing but comments
		out.Write(config)
		if len(config) > 0 && !bytes.HasSuffix(config, []byte("\n")) {
			out.WriteByte('\n')
		}
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("read again: not a mapping")
	}
	top := doc.Content[0]
	if rebase != "" {
		rebaseEntries(top, rebase)
	}
	if len(items) > 0 {
		key, list := allowList(top)
		if list.Style&yaml.FlowStyle != 0 {
			// A block list starts on the line after the key: the comment
			// that followed the flow list goes with the key.
			list.Style &^= yaml.FlowStyle
			key.LineComment = strings.TrimSpace(key.LineComment + " " + list.LineComment)
			list.LineComment = ""
		}
		list.Content = append(list.Content, items...)
	}
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("write as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write as YAML: %w", err)
	}
	return out.Bytes(), nil
}

// allowList is the key "allow" of top and the sequence under it, made a
// sequence when it is empty ("allow:", "allow: ~") or an alias of one
// (whose items it copies, so that the anchored list stays as it is); a
// new key at the end when there is none.
func allowList(top *yaml.Node) (key, list *yaml.Node) {
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "allow" {
			continue
		}
		key, v := top.Content[i], top.Content[i+1]
		if v.Kind == yaml.SequenceNode {
			return key, v
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", HeadComment: v.HeadComment, LineComment: v.LineComment, FootComment: v.FootComment}
		if v.Kind == yaml.AliasNode && v.Alias != nil && v.Alias.Kind == yaml.SequenceNode {
			seq.Content = append([]*yaml.Node(nil), v.Alias.Content...)
		}
		top.Content[i+1] = seq
		return key, seq
	}
	key = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "allow"}
	list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	top.Content = append(top.Content, key, list)
	return key, list
}

// rebaseEntries makes the relative entries of top's allow and deny lists
// absolute, from dir: each a path or a mapping's "path".
func rebaseEntries(top *yaml.Node, dir string) {
	for i := 0; i+1 < len(top.Content); i += 2 {
		if k := top.Content[i].Value; k != "allow" && k != "deny" {
			continue
		}
		list := top.Content[i+1]
		if list.Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range list.Content {
			switch item.Kind {
			case yaml.ScalarNode:
				rebaseEntry(item, dir)
			case yaml.MappingNode:
				for j := 0; j+1 < len(item.Content); j += 2 {
					if item.Content[j].Value == "path" && item.Content[j+1].Kind == yaml.ScalarNode {
						rebaseEntry(item.Content[j+1], dir)
					}
				}
			}
		}
	}
}

// rebaseEntry makes entry n absolute, from dir, when it is relative: not
// from /, ~ or a variable, which mean the same from anywhere.
func rebaseEntry(n *yaml.Node, dir string) {
	v := n.Value
	if v == "" || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || strings.HasPrefix(v, "$") {
		return
	}
	n.Value = strings.TrimSuffix(allowlist.Literal(dir), "/") + "/" + v
	n.Tag = "!!str"
}
