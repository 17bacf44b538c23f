package render

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/writewatch/writewatch/report"
)

// byTestLine is one line of By test, with what it is sorted by.
type byTestLine struct {
	severity, pkg, who, text string
}

// byTest lists the violations that a test runner's boundaries attribute,
// one line each, grouped by test; the violations collapsed into one line
// of the summary are one line here too, which names their tests:
//
//	TestSave (pkg example.com/app) wrote /home/u/.config/app/config.toml (open O_WRONLY|O_TRUNC) via /usr/bin/git
//	14 tests of 3 files in tests/ (e.g. test_a.py::test_x, test_b.py::test_y) wrote /src/out*.csv (open O_WRONLY|O_CREAT ×14; left-behind) via /usr/bin/python3.11
func (t *textWriter) byTest(items []item) {
	var lines []byTestLine
	for _, it := range items {
		v, who := it.v, ""
		switch {
		case v != nil && attributed(v):
			who = whoText(v)
		case v == nil:
			v, who = it.group[0], groupWho(it.group)
		}
		if who == "" {
			continue
		}
		what := displayText(v.Op)
		if v.Flags != "" && (it.v != nil || sameFlags(it.group)) {
			what += " " + displayText(v.Flags)
		}
		path := displayPath(v.Path)
		if it.v == nil {
			path = groupPath(it.group)
			what += " ×" + strconv.Itoa(events(it.group))
		}
		via := viaText(v)
		if it.v == nil && !sameVia(it.group) {
			via = ""
		}
		lines = append(lines, byTestLine{v.Severity, v.Package, who, "  " + t.paint(ansiBold, who) + " wrote " + path + " (" + what + outcomeWords(v) + ")" + via})
	}
	if len(lines) == 0 {
		return
	}
	slices.SortStableFunc(lines, func(a, b byTestLine) int {
		return cmp.Or(cmp.Compare(report.SeverityRank(a.severity), report.SeverityRank(b.severity)),
			strings.Compare(a.pkg, b.pkg), strings.Compare(a.who, b.who))
	})
	t.line()
	t.line("By test:")
	for _, l := range lines {
		t.line(l.text)
	}
}

// groupWho names who made a collapsed group's violations: its tests, or
// what is known of who wrote when that is one for all; "" when nothing is.
func groupWho(g []*report.Violation) string {
	if s := testsText(g); s != "" {
		return s
	}
	if !attributed(g[0]) {
		return ""
	}
	who := whoText(g[0])
	for _, v := range g[1:] {
		if whoText(v) != who {
			return ""
		}
	}
	return who
}

// outcomeWords are what By test says of a write after its operation:
// "; failed: EACCES; attempt, in the baseline".
func outcomeWords(v *report.Violation) string {
	s := failedText(v, displayText)
	if v.Severity != "" {
		s += "; " + displayText(severityLabel(v))
	}
	if v.Baselined {
		s += ", in the baseline"
	}
	return s
}

// viaText is " via " the program that wrote v, or "".
func viaText(v *report.Violation) string {
	via := v.Exe
	if via == "" {
		via = v.Comm
	}
	if via == "" {
		return ""
	}
	return " via " + displayPath(via)
}

// sameVia reports whether one program made all of g's writes.
func sameVia(g []*report.Violation) bool {
	for _, v := range g {
		if viaText(v) != viaText(g[0]) {
			return false
		}
	}
	return true
}
