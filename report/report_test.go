package report_test

import (
	"testing"

	"github.com/writewatch/writewatch/report"
)

func TestFailed(t *testing.T) {
	if emptyReport().Failed() {
		t.Error("empty report: Failed() = true")
	}
	if !richReport().Failed() {
		t.Error("rich report: Failed() = false")
	}
	if !lostRefusalsReport().Failed() {
		t.Error("a refused write whose record was lost: Failed() = false")
	}
	// A failed call that changed nothing is reported only, unless
	// enforcement refused it.
	r := emptyReport()
	r.Violations = []report.Violation{{Op: "unlink", Path: "/d", Errno: "ENOENT", Severity: report.SeverityAttempt, Action: report.ActionReported}}
	if r.Failed() {
		t.Error("an attempt alone: Failed() = true")
	}
	r.Violations[0].Action = report.ActionBlocked
	if !r.Failed() {
		t.Error("a refused attempt: Failed() = false")
	}
	if !enforcedReport().Failed() {
		t.Error("enforced report: Failed() = false")
	}
	if lostReport().Failed() {
		t.Error("a run that lost records but found no violation: Failed() = true")
	}
}

// Blind is about what writewatch could see, whatever it found.
func TestBlind(t *testing.T) {
	for _, c := range cases {
		if got, want := c.Report().Blind(), len(c.Report().Incomplete) > 0; got != want {
			t.Errorf("%s: Blind() = %v, want %v", c.Name, got, want)
		}
	}
	if !lostReport().Blind() {
		t.Error("lost write records: Blind() = false")
	}
	if emptyReport().Blind() {
		t.Error("a run that saw everything: Blind() = true")
	}
}
