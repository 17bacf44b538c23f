package allowlist

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// WritePrintConfig writes the --print-config report: the config file used,
// then one line per entry with its kind, its pattern, where it comes from
// and, when it differs from the pattern, the entry as written. Columns are
// aligned; a value with spaces, control characters, quotes or invalid UTF-8
// is written as a Go string literal.
func WritePrintConfig(w io.Writer, l *List) error {
	l.ready()
	bw := bufio.NewWriter(w)
	if l.configFile != "" {
		fmt.Fprintf(bw, "config: %s\n", quoteIfNeeded(l.configFile))
	} else {
		fmt.Fprintf(bw, "config: none (no %s in %s or above)\n", ConfigFileName, quoteIfNeeded(l.searchDir))
	}
	fmt.Fprintf(bw, "rule: a path may be written if an allow entry matches it or a directory above it, and no deny entry does\n")
	var project string
	var covering []string
	for _, e := range l.entries {
		switch {
		case e.Source == SourceProject && project == "":
			project = e.Raw
		case e.CoversProject && !slices.Contains(covering, e.Source):
			covering = append(covering, e.Source)
		}
	}
	if project != "" {
		fmt.Fprintf(bw, "project: %s lies in %s, which %s not apply inside it (the deny entry from %s): there only the config's and --allow's entries allow writes\n",
			quoteIfNeeded(project), strings.Join(covering, " and "), pick(len(covering) == 1, "does", "do"), SourceProject)
	}
	bw.WriteByte('\n')

	rows := [][]string{{"KIND", "PATTERN", "SOURCE", "AS WRITTEN"}}
	for _, e := range l.entries {
		raw := ""
		switch {
		case e.Broad:
			raw = fmt.Sprintf("{path: %s, broad: true}", strconv.Quote(e.Raw))
		case e.Raw != e.Pattern:
			raw = quoteIfNeeded(e.Raw)
		}
		rows = append(rows, []string{e.Kind.String(), quoteIfNeeded(e.Pattern), quoteIfNeeded(e.Source), raw})
	}
	if len(l.entries) == 0 {
		rows = append(rows, []string{"(none)"})
	}
	var width [4]int
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			line.WriteString(c)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)+2))
			}
		}
		bw.WriteString(strings.TrimRight(line.String(), " "))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

func quoteIfNeeded(s string) string {
	if s == "" || !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if r == '"' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
