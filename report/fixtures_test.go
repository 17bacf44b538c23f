package report_test

import (
	"bytes"
	"testing"

	"github.com/writewatch/writewatch/internal/render"
	"github.com/writewatch/writewatch/internal/reporttest"
	"github.com/writewatch/writewatch/report"
)

// The golden tests' reports (package reporttest).
var (
	cases              = reporttest.Cases
	emptyReport        = reporttest.Empty
	richReport         = reporttest.Rich
	lostReport         = reporttest.Lost
	enforcedReport     = reporttest.Enforced
	lostRefusalsReport = reporttest.LostRefusals
	testsReport        = reporttest.Tests
	survivorsReport    = reporttest.Survivors
	witnessedReport    = reporttest.Witnessed
	crossTestReport    = reporttest.CrossTest
	t0                 = reporttest.T0
	pkgTest            = reporttest.PkgTest
	goTest             = reporttest.GoTest
)

// writeText renders r as the text summary.
func writeText(t *testing.T, r *report.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := render.WriteText(&buf, r, render.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// nonNil is s, or an empty slice for nil: what JSON makes of it.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
